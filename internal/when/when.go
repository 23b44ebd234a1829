// Package when reads the instants that people type: on the command line (ticker schedule backfill --from and
// --to, ticker audit --from and --to, ticker schedule pause --until) and in the console's forms. One rule for
// all of them, so that what one place accepts every other accepts too:
//
//   - an RFC 3339 instant, with or without fractional seconds: 2026-12-01T00:00:00Z, 2026-12-01T01:00:00+01:00;
//   - now;
//   - a duration that is not negative (Go syntax: 90m, 24h, 1h30m), counted back from now for an instant in the
//     past (Past: --from 24h is a day ago) or ahead of it for one in the future (Future: --until 2h).
//
// Blanks around the text are ignored. Parse takes now as an argument (no clock is read), so that a caller can
// read several instants against one now, and round it first where it wants whole seconds.
package when

import (
	"errors"
	"strings"
	"time"
)

// Direction says which way from now a duration counts.
type Direction int

const (
	// Past counts a duration back from now: 24h is a day ago.
	Past Direction = iota
	// Future counts a duration ahead of now: 2h is two hours from now.
	Future
)

// Parse reads s as an instant: RFC 3339, "now", or a duration that is not negative, counted from now in dir.
// Its error names the accepted forms, not s: the caller says which flag or field held s.
func Parse(s string, now time.Time, dir Direction) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "now" {
		return now, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("a negative duration: " + Forms(dir))
		}
		if dir == Future {
			return now.Add(d), nil
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, errors.New(Forms(dir))
	}
	return t, nil
}

// Forms names what Parse accepts in dir, with an example of each, as its errors say it.
func Forms(dir Direction) string {
	if dir == Future {
		return "want an RFC 3339 instant (2026-12-01T00:00:00Z), now, or a duration from now (2h)"
	}
	return "want an RFC 3339 instant (2026-12-01T00:00:00Z), now, or a duration before now (24h)"
}
