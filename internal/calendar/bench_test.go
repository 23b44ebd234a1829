package calendar

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// benchCalendars returns three calendars of 200 random dates each between 2026 and 2029, with weekends, in
// three zones: a schedule that excludes a US, a German and a Japanese calendar.
func benchCalendars(b *testing.B) []*Calendar {
	rng := rand.New(rand.NewPCG(7, 11))
	first := dayNumber(2026, 1, 1)
	var cals []*Calendar
	for i, tz := range []string{"America/New_York", "Europe/Berlin", "Asia/Tokyo"} {
		s := Spec{Name: fmt.Sprintf("cal-%d", i), TZ: tz, Weekdays: []string{"sat", "sun"}}
		for range 200 {
			s.Dates = append(s.Dates, formatDay(first+rng.Int64N(4*365)))
		}
		cals = append(cals, mustCal(b, s))
	}
	return cals
}

// The core function on a slot that runs: three calendars in three zones tested, no move. What a leader pays for
// each slot of a schedule with calendars.
func BenchmarkResolveRuns(b *testing.B) {
	e := Exclusion{Calendars: benchCalendars(b), Policy: NextBusinessDay, Location: mustZone(b, "America/New_York")}
	slots := benchSlots(b, e, false)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if o, _ := e.Resolve(slots[i%len(slots)]); o.Action != Runs {
			b.Fatal(o)
		}
		i++
	}
}

// An excluded slot under skip.
func BenchmarkResolveSkip(b *testing.B) {
	e := Exclusion{Calendars: benchCalendars(b), Policy: Skip, Location: mustZone(b, "America/New_York")}
	slots := benchSlots(b, e, true)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if o, _ := e.Resolve(slots[i%len(slots)]); o.Action != Skipped {
			b.Fatal(o)
		}
		i++
	}
}

// An excluded slot moved to the next business day: over a weekend or a holiday, each candidate day's instant
// found by the DST rules and tested against the three calendars.
func BenchmarkResolveMove(b *testing.B) {
	e := Exclusion{Calendars: benchCalendars(b), Policy: NextBusinessDay, Location: mustZone(b, "America/New_York")}
	slots := benchSlots(b, e, true)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if o, err := e.Resolve(slots[i%len(slots)]); o.Action != Moved || err != nil {
			b.Fatal(o, err)
		}
		i++
	}
}

// benchSlots returns daily 06:00 New York slots of 2027 that e excludes (or does not).
func benchSlots(b *testing.B, e Exclusion, excluded bool) []time.Time {
	var out []time.Time
	for t := time.Date(2027, 1, 1, 6, 0, 0, 0, e.Location); t.Year() == 2027; t = t.AddDate(0, 0, 1) {
		if e.Excludes(t) == excluded {
			out = append(out, t.UTC())
		}
	}
	if len(out) == 0 {
		b.Fatal("no slots")
	}
	return out
}

// One calendar's test of one instant.
func BenchmarkExcludes(b *testing.B) {
	c := benchCalendars(b)[1]
	t := time.Date(2027, 6, 15, 4, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		c.Excludes(t)
	}
}

// A month of a daily schedule's runs under next_business_day, with the merge rule: a "next runs" display.
func BenchmarkRunsMonth(b *testing.B) {
	e := Exclusion{Calendars: benchCalendars(b), Policy: NextBusinessDay, Location: mustZone(b, "America/New_York")}
	next := cronNext(b, "0 6 * * *", "America/New_York")
	after := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Runs(next, after, after.AddDate(0, 1, 0)); err != nil {
			b.Fatal(err)
		}
	}
}

// Compiling a calendar at MaxEntries: what a hostile record costs every replica that reads it.
func BenchmarkCompileMax(b *testing.B) {
	s := Spec{Name: "max", TZ: "Europe/Berlin", Weekdays: []string{"sun"}}
	first := dayNumber(2000, 1, 1)
	for i := range MaxEntries - 1 {
		if i%2 == 0 {
			s.Dates = append(s.Dates, formatDay(first+int64(i*3)))
		} else {
			s.Ranges = append(s.Ranges, Range{From: formatDay(first + int64(i*3)), To: formatDay(first + int64(i*3+1))})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Compile(); err != nil {
			b.Fatal(err)
		}
	}
}

// Importing the recurring events of testdata/rrule.ics.
func BenchmarkImportICS(b *testing.B) {
	data, err := os.ReadFile("testdata/rrule.ics")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ImportICS(bytes.NewReader(data), ImportOptions{Name: "x", TZ: "America/New_York"}); err != nil {
			b.Fatal(err)
		}
	}
}
