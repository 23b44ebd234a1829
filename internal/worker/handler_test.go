package worker

import (
	"errors"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	w := &Worker{cfg: Config{Backoff: time.Second, MaxBackoff: 5 * time.Second}}
	for attempt, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 10: 5 * time.Second} {
		for range 50 {
			if d := w.backoff(attempt); d < want/2 || d > want {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", attempt, d, want/2, want)
			}
		}
	}
}

func TestParseStart(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "10m0s", "latest": "latest", "earliest": "earliest", "10m": "10m0s"} {
		s, err := ParseStart(in)
		if err != nil || s.String() != want {
			t.Errorf("ParseStart(%q) = %v, %v; want %s", in, s, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-5m", "0s"} {
		if _, err := ParseStart(bad); err == nil {
			t.Errorf("ParseStart(%q): no error", bad)
		}
	}
}

func TestPermanent(t *testing.T) {
	t.Parallel()
	base := errors.New("bad request")
	if !IsPermanent(Permanent(base)) || !errors.Is(Permanent(base), base) || IsPermanent(base) || Permanent(nil) != nil {
		t.Fatal("Permanent does not wrap as documented")
	}
}
