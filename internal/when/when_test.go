package when

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 6, 14, 30, 15, 500_000_000, time.UTC)
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		in   string
		dir  Direction
		want time.Time
		err  string // a part of the error; "" for none
	}{
		{"2026-12-01T00:00:00Z", Past, at("2026-12-01T00:00:00Z"), ""},
		{"2026-12-01T00:00:00Z", Future, at("2026-12-01T00:00:00Z"), ""},
		{"2026-12-01T01:00:00+01:00", Past, at("2026-12-01T00:00:00Z"), ""},
		{"2026-12-01T00:00:00.25Z", Past, at("2026-12-01T00:00:00.25Z"), ""},
		{"  2026-12-01T00:00:00Z\n", Past, at("2026-12-01T00:00:00Z"), ""},
		{"now", Past, now, ""},
		{" now ", Future, now, ""},
		{"24h", Past, now.Add(-24 * time.Hour), ""},
		{"2h", Future, now.Add(2 * time.Hour), ""},
		{"1h30m", Past, now.Add(-90 * time.Minute), ""},
		{"1.5s", Future, now.Add(1500 * time.Millisecond), ""},
		{"0s", Past, now, ""},
		{"0", Future, now, ""},
		{"-2h", Past, time.Time{}, "a negative duration: want an RFC 3339 instant (2026-12-01T00:00:00Z), now, or a duration before now (24h)"},
		{"-1s", Future, time.Time{}, "a negative duration: want an RFC 3339 instant (2026-12-01T00:00:00Z), now, or a duration from now (2h)"},
		{"yesterday", Past, time.Time{}, "want an RFC 3339 instant (2026-12-01T00:00:00Z), now, or a duration before now (24h)"},
		{"tomorrow", Future, time.Time{}, "want an RFC 3339 instant (2026-12-01T00:00:00Z), now, or a duration from now (2h)"},
		{"", Past, time.Time{}, "want an RFC 3339"},
		{"Now", Past, time.Time{}, "want an RFC 3339"},
		{"2026-12-01", Past, time.Time{}, "want an RFC 3339"},
		{"2026-12-01T00:00:00", Past, time.Time{}, "want an RFC 3339"},
		{"2026-12-01 00:00:00Z", Past, time.Time{}, "want an RFC 3339"},
		{"2h ago", Past, time.Time{}, "want an RFC 3339"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in, now, tt.dir)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("Parse(%q, %d) = %v, %v; want an error with %q", tt.in, tt.dir, got, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("Parse(%q, %d): %v", tt.in, tt.dir, err)
		case tt.err == "" && !got.Equal(tt.want):
			t.Errorf("Parse(%q, %d) = %v, want %v", tt.in, tt.dir, got, tt.want)
		}
	}
}
