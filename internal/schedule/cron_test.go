package schedule

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("parsing %q: %v", s, err)
	}
	return v
}

func mustCompile(t testing.TB, s Spec) *Schedule {
	t.Helper()
	if s.Name == "" {
		s.Name = "test"
	}
	sch, err := s.Compile()
	if err != nil {
		t.Fatalf("compiling %+v: %v", s, err)
	}
	return sch
}

// nextN returns the n slots after from, formatted in UTC.
func nextN(sch *Schedule, from time.Time, n int) []string {
	var out []string
	for t := from; len(out) < n; {
		t = sch.Next(t)
		if t.IsZero() {
			return append(out, "zero")
		}
		out = append(out, t.Format(time.RFC3339))
	}
	return out
}

// TestNextCron checks cron slots across DST transitions. Each want is written by hand in UTC, with the wall-clock
// time in the comment; none is computed by the code under test.
func TestNextCron(t *testing.T) {
	t.Parallel()
	const (
		ny     = "America/New_York"    // 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z)
		berlin = "Europe/Berlin"       // 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z); 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z)
		lhi    = "Australia/Lord_Howe" // 2026-04-05 02:00 +11 -> 01:30 +1030 (04-04 15:00Z); 2026-10-04 02:00 +1030 -> 02:30 +11 (10-03 15:30Z)
	)
	tests := []struct {
		name, cron, tz, from string
		want                 []string
	}{
		// America/New_York, spring forward.
		{"ny gap fixed 02:30 runs at the jump", "30 2 * * *", ny, "2026-03-07T00:00:00Z", []string{
			"2026-03-07T07:30:00Z", // 02:30 EST
			"2026-03-08T07:00:00Z", // 02:30 does not exist: 03:00 EDT
			"2026-03-09T06:30:00Z", // 02:30 EDT
		}},
		{"ny gap fixed 02:00", "0 2 * * *", ny, "2026-03-08T00:00:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"}},
		{"ny gap matches collapse", "0,30 2 * * *", ny, "2026-03-08T00:00:00Z", []string{
			"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:30:00Z",
		}},
		{"ny gap collapse meets a real match", "0,30 2-3 * * *", ny, "2026-03-08T00:00:00Z", []string{
			"2026-03-08T07:00:00Z", // 02:00 and 02:30 collapse onto 03:00 EDT, which also matches: one slot
			"2026-03-08T07:30:00Z", // 03:30 EDT
			"2026-03-09T06:00:00Z",
		}},
		{"ny gap every minute of hour 2", "* 2 * * *", ny, "2026-03-08T06:58:00Z", []string{
			"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z", "2026-03-09T06:01:00Z",
		}},
		{"ny gap seconds field", "0 30 2 * * *", ny, "2026-03-08T00:00:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z"}},
		{"ny gap wildcard */30", "*/30 * * * *", ny, "2026-03-08T06:00:00Z", []string{
			"2026-03-08T06:30:00Z", // 01:30 EST
			"2026-03-08T07:00:00Z", // 03:00 EDT
			"2026-03-08T07:30:00Z",
		}},
		{"ny gap wildcard keeps real hours", "30 * * * *", ny, "2026-03-08T06:00:00Z", []string{
			"2026-03-08T06:30:00Z", // 01:30 EST
			"2026-03-08T07:30:00Z", // 03:30 EDT, one real hour later; 02:30 never shows on the clock
			"2026-03-08T08:30:00Z",
		}},
		// America/New_York, fall back.
		{"ny repeat fixed runs once", "30 1 * * *", ny, "2026-10-31T12:00:00Z", []string{
			"2026-11-01T05:30:00Z", // 01:30 EDT; not again at 01:30 EST
			"2026-11-02T06:30:00Z", // 01:30 EST
		}},
		{"ny repeat fixed from first occurrence", "30 1 * * *", ny, "2026-11-01T05:30:00Z", []string{"2026-11-02T06:30:00Z"}},
		{"ny repeat fixed from inside second occurrence", "30 1 * * *", ny, "2026-11-01T06:10:00Z", []string{"2026-11-02T06:30:00Z"}},
		{"ny repeat fixed hour every 20 min", "*/20 1 * * *", ny, "2026-11-01T04:59:00Z", []string{
			"2026-11-01T05:00:00Z", "2026-11-01T05:20:00Z", "2026-11-01T05:40:00Z", // EDT only
			"2026-11-02T06:00:00Z",
		}},
		{"ny repeat hours 1-2", "0 1-2 * * *", ny, "2026-11-01T04:00:00Z", []string{
			"2026-11-01T05:00:00Z", // 01:00 EDT
			"2026-11-01T07:00:00Z", // 02:00 EST
			"2026-11-02T06:00:00Z", // 01:00 EST
		}},
		{"ny repeat wildcard runs twice", "*/30 * * * *", ny, "2026-11-01T05:00:00Z", []string{
			"2026-11-01T05:30:00Z", // 01:30 EDT
			"2026-11-01T06:00:00Z", // 01:00 EST
			"2026-11-01T06:30:00Z", // 01:30 EST
			"2026-11-01T07:00:00Z", // 02:00 EST
		}},
		{"ny repeat hourly", "0 * * * *", ny, "2026-11-01T04:30:00Z", []string{
			"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z",
		}},
		{"ny daily macro", "@daily", ny, "2026-10-31T00:00:00Z", []string{
			"2026-10-31T04:00:00Z", "2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z",
		}},
		// Europe/Berlin.
		{"berlin gap fixed", "30 2 * * *", berlin, "2026-03-28T12:00:00Z", []string{
			"2026-03-29T01:00:00Z", // 03:00 CEST
			"2026-03-30T00:30:00Z", // 02:30 CEST
		}},
		{"berlin 03:00 is the transition", "0 3 * * *", berlin, "2026-03-28T12:00:00Z", []string{
			"2026-03-29T01:00:00Z", "2026-03-30T01:00:00Z",
		}},
		{"berlin gap then after", "15 2,3 * * *", berlin, "2026-03-28T12:00:00Z", []string{
			"2026-03-29T01:00:00Z", // 02:15 collapses onto 03:00 CEST
			"2026-03-29T01:15:00Z", // 03:15 CEST
			"2026-03-30T00:15:00Z", // 02:15 CEST
		}},
		{"berlin repeat fixed", "30 2 * * *", berlin, "2026-10-24T12:00:00Z", []string{
			"2026-10-25T00:30:00Z", // 02:30 CEST
			"2026-10-26T01:30:00Z", // 02:30 CET
		}},
		{"berlin repeat wildcard", "*/15 * * * *", berlin, "2026-10-25T00:40:00Z", []string{
			"2026-10-25T00:45:00Z", // 02:45 CEST
			"2026-10-25T01:00:00Z", // 02:00 CET
			"2026-10-25T01:15:00Z",
		}},
		{"berlin hourly macro", "@hourly", berlin, "2026-10-24T23:30:00Z", []string{
			"2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z", "2026-10-25T02:00:00Z",
		}},
		{"berlin yearly macro", "@yearly", berlin, "2026-06-01T00:00:00Z", []string{"2026-12-31T23:00:00Z", "2027-12-31T23:00:00Z"}},
		// Australia/Lord_Howe: 30-minute shifts.
		{"lhi repeat fixed", "45 1 * * *", lhi, "2026-04-04T12:00:00Z", []string{
			"2026-04-04T14:45:00Z", // 01:45 +11
			"2026-04-05T15:15:00Z", // 01:45 +1030 next day
		}},
		{"lhi repeat wildcard", "*/15 * * * *", lhi, "2026-04-04T14:20:00Z", []string{
			"2026-04-04T14:30:00Z", // 01:30 +11
			"2026-04-04T14:45:00Z", // 01:45 +11
			"2026-04-04T15:00:00Z", // 01:30 +1030
			"2026-04-04T15:15:00Z", // 01:45 +1030
			"2026-04-04T15:30:00Z", // 02:00 +1030
		}},
		{"lhi repeat 02:00 exists once", "0 2 * * *", lhi, "2026-04-04T12:00:00Z", []string{"2026-04-04T15:30:00Z", "2026-04-05T15:30:00Z"}},
		{"lhi gap fixed", "0 2 * * *", lhi, "2026-10-03T12:00:00Z", []string{
			"2026-10-03T15:30:00Z", // 02:30 +11
			"2026-10-04T15:00:00Z", // 02:00 +11
		}},
		{"lhi gap collapse", "0,15 2 * * *", lhi, "2026-10-03T12:00:00Z", []string{
			"2026-10-03T15:30:00Z", "2026-10-04T15:00:00Z", "2026-10-04T15:15:00Z",
		}},
		{"lhi after the gap is regular", "45 2 * * *", lhi, "2026-10-03T12:00:00Z", []string{"2026-10-03T15:45:00Z"}},
		{"lhi gap hourly", "0 * * * *", lhi, "2026-10-03T14:00:00Z", []string{
			"2026-10-03T14:30:00Z", // 01:00 +1030
			"2026-10-03T16:00:00Z", // 03:00 +11; 02:00 never shows on the clock
		}},
		{"lhi gap wildcard */15", "*/15 * * * *", lhi, "2026-10-03T15:10:00Z", []string{
			"2026-10-03T15:15:00Z", "2026-10-03T15:30:00Z", "2026-10-03T15:45:00Z",
		}},
		// Zones without DST.
		{"tokyo", "30 2 * * *", "Asia/Tokyo", "2026-03-08T00:00:00Z", []string{"2026-03-08T17:30:00Z", "2026-03-09T17:30:00Z"}},
		{"utc seconds", "*/20 * * * * *", "", "2026-03-08T06:59:50Z", []string{
			"2026-03-08T07:00:00Z", "2026-03-08T07:00:20Z", "2026-03-08T07:00:40Z",
		}},
		{"utc weekly", "@weekly", "UTC", "2026-03-01T00:00:00Z", []string{"2026-03-08T00:00:00Z", "2026-03-15T00:00:00Z"}},
		{"utc monthly", "@monthly", "", "2026-01-31T10:00:00Z", []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"dom or dow", "0 0 13 * 5", "", "2026-03-01T00:00:00Z", []string{
			"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z", "2026-03-20T00:00:00Z", "2026-03-27T00:00:00Z",
			"2026-04-03T00:00:00Z", "2026-04-10T00:00:00Z", "2026-04-13T00:00:00Z", "2026-04-17T00:00:00Z",
		}},
		{"dom only", "0 0 13 * *", "", "2026-03-01T00:00:00Z", []string{"2026-03-13T00:00:00Z", "2026-04-13T00:00:00Z"}},
		{"dow names", "0 0 * * fri", "", "2026-03-01T00:00:00Z", []string{"2026-03-06T00:00:00Z", "2026-03-13T00:00:00Z"}},
		{"leap day", "0 0 29 2 *", "", "2026-01-01T00:00:00Z", []string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"sub-second after", "0 * * * * *", "", "2026-03-08T06:59:59.5Z", []string{"2026-03-08T07:00:00Z"}},
		// Past the zones' transition tables Go's ZoneBounds misreports 31 December of leap years (golang/go#81583).
		{"leap day far future", "0 0 29 2 *", ny, "2040-02-29T05:00:00Z", []string{"2044-02-29T05:00:00Z"}},
		{"31 december of a far leap year", "0 12 31 12 *", berlin, "2040-12-30T00:00:00Z", []string{"2040-12-31T11:00:00Z", "2041-12-31T11:00:00Z"}},
		{"far future dst", "30 2 * * *", berlin, "2041-03-30T12:00:00Z", []string{"2041-03-31T01:00:00Z", "2041-04-01T00:30:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sch := mustCompile(t, Spec{Cron: tt.cron, TZ: tt.tz})
			from, err := time.Parse(time.RFC3339Nano, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			got := nextN(sch, from, len(tt.want))
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("Next(%q in %q) from %s:\n got %v\nwant %v", tt.cron, tt.tz, tt.from, got, tt.want)
			}
		})
	}
}

// TestNextCronIncreasingYear walks every slot of a year in DST zones and checks the slots increase strictly and
// each is either a wall-clock match or (fixed hours only) a transition instant.
func TestNextCronIncreasingYear(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cron, tz string
		year     int
	}{
		{"*/7 * * * *", "America/New_York", 2026},
		{"*/10 1-3 * * *", "Europe/Berlin", 2026},
		{"0,15,30,45 1,2 * * *", "Australia/Lord_Howe", 2026},
		{"13 2 * * *", "America/New_York", 2026},
		{"0 0 * * *", "America/Sao_Paulo", 2018},  // midnight was the skipped hour
		{"*/10 1-3 * * *", "Europe/Berlin", 2040}, // leap year past the transition table (golang/go#81583)
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.cron, " ", tt.tz, " ", tt.year), func(t *testing.T) {
			t.Parallel()
			sch := mustCompile(t, Spec{Cron: tt.cron, TZ: tt.tz})
			loc, _ := time.LoadLocation(tt.tz)
			prev := time.Date(tt.year, 1, 1, 0, 0, 0, 0, time.UTC)
			end := time.Date(tt.year+1, 1, 1, 0, 0, 0, 0, time.UTC)
			n := 0
			for {
				next := sch.Next(prev)
				if !next.After(prev) {
					t.Fatalf("Next(%s) = %s, not after", prev, next)
				}
				if next.After(end) {
					break
				}
				local := next.In(loc)
				civil := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), local.Second(), 0, time.UTC).Unix()
				matches := false
				if m, ok := sch.cron().nextCivil(civil - 1); ok && m == civil {
					matches = true
				}
				start, _ := local.ZoneBounds()
				if !matches && !(start.Equal(next) && !sch.cron().realTime) {
					t.Fatalf("slot %s (%s) neither matches %q nor is a transition", next, local, tt.cron)
				}
				prev, n = next, n+1
			}
			if n < 300 {
				t.Fatalf("only %d slots in a year", n)
			}
		})
	}
}

// TestNextCronMatchesRobfigAwayFromDST checks that, where no transition is involved, this package agrees with
// robfig/cron's own Next: the expression means what users of that library expect.
func TestNextCronMatchesRobfigAwayFromDST(t *testing.T) {
	t.Parallel()
	exprs := []string{"*/7 * * * *", "0 9 * * 1-5", "15 10 1,15 * *", "0 0 13 * 5", "*/13 */5 * * * *", "@weekly", "0 12 * jan,jul sun"}
	from := mustTime(t, "2026-05-01T00:00:00Z")
	for _, expr := range exprs {
		sch := mustCompile(t, Spec{Cron: expr, TZ: "Asia/Tokyo"})
		theirs, err := cronParser.Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		tokyo, _ := time.LoadLocation("Asia/Tokyo")
		a, b := from, from.In(tokyo)
		for range 200 {
			a, b = sch.Next(a), theirs.Next(b)
			if !a.Equal(b) {
				t.Fatalf("%q: got %s, robfig %s", expr, a, b)
			}
		}
	}
}

func BenchmarkNextCron(b *testing.B) {
	for _, tt := range []struct{ name, cron, tz string }{
		{"every-minute-utc", "* * * * *", "UTC"},
		{"daily-new-york", "30 2 * * *", "America/New_York"},
		{"leap-day", "0 0 29 2 *", "Europe/Berlin"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			sch := mustCompile(b, Spec{Cron: tt.cron, TZ: tt.tz})
			start := mustTime(b, "2026-01-01T00:00:00Z")
			t := start
			for b.Loop() {
				if t = sch.Next(t); t.Year() > 2035 { // stay in this century's zone data
					t = start
				}
			}
		})
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"* * * * *", "*/15 * * * *", "0 30 2 * * *", "@daily", "@every 1h", "TZ=UTC * * * * *", "CRON_TZ=", "TZ=",
		"61 * * * *", "0 0 30 2 *", ", * * * *", "1-2-3 * * * *", "*/0 * * * *", "0 0 * * 7", "? ? ? ? ?", "mon-fri",
		"0 0 L * *", "0 0 1W * *", "*/99999999999999999999 * * * *", "0 0 31 4,6,9,11 *", "0 0 29 2 1",
	} {
		f.Add(s)
	}
	froms := []time.Time{
		time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC),   // a spring-forward day in New York
		time.Date(2040, 12, 30, 0, 0, 0, 0, time.UTC), // golang/go#81583 territory
	}
	f.Fuzz(func(t *testing.T, expr string) {
		sch, err := Spec{Name: "fuzz", Cron: expr, TZ: "America/New_York"}.Compile()
		if err != nil {
			return
		}
		for _, prev := range froms {
			for range 5 {
				next := sch.Next(prev)
				if next.IsZero() {
					t.Fatalf("%q compiled but has no slot after %s", expr, prev)
				}
				if !next.After(prev) {
					t.Fatalf("%q: Next(%s) = %s", expr, prev, next)
				}
				prev = next
			}
		}
	})
}
