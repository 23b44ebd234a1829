package calendar

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// cronNext returns the Next of a cron schedule.
func cronNext(t testing.TB, expr, tz string) func(time.Time) time.Time {
	t.Helper()
	s, err := schedule.Spec{Name: "x", Cron: expr, TZ: tz}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return s.Next
}

// runString writes a run as "slot->at (+merged,...)" in the zone loc, short enough to compare tables.
func runString(r Run, loc *time.Location) string {
	const layout = "Mon 01-02 15:04 MST"
	var b strings.Builder
	b.WriteString(r.Slot.In(loc).Format(layout))
	if r.Moved {
		b.WriteString(" -> " + r.At.In(loc).Format(layout))
	} else if !r.At.Equal(r.Slot) {
		b.WriteString(" !! at " + r.At.In(loc).Format(layout))
	}
	for i, m := range r.Merged {
		if i == 0 {
			b.WriteString(" +")
		} else {
			b.WriteString(",")
		}
		b.WriteString(m.In(loc).Format("Mon 01-02"))
	}
	return b.String()
}

func runStrings(runs []Run, loc *time.Location) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = runString(r, loc)
	}
	return out
}

// The merge rule of doc.go, case by case, on a US calendar in January 2027: 2027-01-01 is a Friday holiday,
// 2027-01-18 (MLK day) a Monday one.
func TestRunsMerge(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	us := mustCal(t, Spec{Name: "us", TZ: "America/New_York", Weekdays: []string{"sat", "sun"},
		Dates: []string{"2027-01-01", "2027-01-18"}})
	after, until := mustTime(t, "2026-12-31T23:59:59-05:00"), mustTime(t, "2027-01-19T23:59:59-05:00")
	tests := []struct {
		name   string
		cron   string
		policy OnExcluded
		want   []string
	}{
		{"daily, skip", "0 6 * * *", Skip, []string{
			"Mon 01-04 06:00 EST", "Tue 01-05 06:00 EST", "Wed 01-06 06:00 EST", "Thu 01-07 06:00 EST", "Fri 01-08 06:00 EST",
			"Mon 01-11 06:00 EST", "Tue 01-12 06:00 EST", "Wed 01-13 06:00 EST", "Thu 01-14 06:00 EST", "Fri 01-15 06:00 EST",
			"Tue 01-19 06:00 EST",
		}},
		// A daily schedule runs once on each business day under both moves: the moved slots merge into the
		// day's own run.
		{"daily, next", "0 6 * * *", NextBusinessDay, []string{
			"Mon 01-04 06:00 EST +Fri 01-01,Sat 01-02,Sun 01-03", "Tue 01-05 06:00 EST", "Wed 01-06 06:00 EST", "Thu 01-07 06:00 EST",
			"Fri 01-08 06:00 EST", "Mon 01-11 06:00 EST +Sat 01-09,Sun 01-10", "Tue 01-12 06:00 EST", "Wed 01-13 06:00 EST",
			"Thu 01-14 06:00 EST", "Fri 01-15 06:00 EST", "Tue 01-19 06:00 EST +Sat 01-16,Sun 01-17,Mon 01-18",
		}},
		// Under previous, the first days' slots move out of the range (to 2026-12-31), and the weekend after
		// the range moves into its last Friday... which is not in it: 2027-01-22 is after until.
		{"daily, previous", "0 6 * * *", PreviousBusinessDay, []string{
			"Mon 01-04 06:00 EST", "Tue 01-05 06:00 EST", "Wed 01-06 06:00 EST", "Thu 01-07 06:00 EST",
			"Fri 01-08 06:00 EST +Sat 01-09,Sun 01-10", "Mon 01-11 06:00 EST", "Tue 01-12 06:00 EST", "Wed 01-13 06:00 EST",
			"Thu 01-14 06:00 EST", "Fri 01-15 06:00 EST +Sat 01-16,Sun 01-17,Mon 01-18", "Tue 01-19 06:00 EST",
		}},
		// Weekend slots have no own run to merge into: Saturday's runs on Monday, and Sunday's merges into it.
		{"weekends, next", "0 6 * * 0,6", NextBusinessDay, []string{
			"Sat 01-02 06:00 EST -> Mon 01-04 06:00 EST +Sun 01-03",
			"Sat 01-09 06:00 EST -> Mon 01-11 06:00 EST +Sun 01-10",
			"Sat 01-16 06:00 EST -> Tue 01-19 06:00 EST +Sun 01-17",
		}},
		{"weekends, previous", "0 6 * * 0,6", PreviousBusinessDay, []string{
			"Sat 01-09 06:00 EST -> Fri 01-08 06:00 EST +Sun 01-10",
			"Sat 01-16 06:00 EST -> Fri 01-15 06:00 EST +Sun 01-17",
		}},
		// Two times of day on an excluded day: both move, to two instants of the target day.
		{"two times on Saturdays, next", "0 9,15 * * 6", NextBusinessDay, []string{
			"Sat 01-02 09:00 EST -> Mon 01-04 09:00 EST", "Sat 01-02 15:00 EST -> Mon 01-04 15:00 EST",
			"Sat 01-09 09:00 EST -> Mon 01-11 09:00 EST", "Sat 01-09 15:00 EST -> Mon 01-11 15:00 EST",
			"Sat 01-16 09:00 EST -> Tue 01-19 09:00 EST", "Sat 01-16 15:00 EST -> Tue 01-19 15:00 EST",
		}},
		// Sunday's slots move to Monday's instants, which have runs of their own to merge into.
		{"Sundays and Mondays at 06:00 and 22:00, next", "0 6,22 * * 0,1", NextBusinessDay, []string{
			"Mon 01-04 06:00 EST +Sun 01-03", "Mon 01-04 22:00 EST +Sun 01-03", "Mon 01-11 06:00 EST +Sun 01-10",
			"Mon 01-11 22:00 EST +Sun 01-10", "Sun 01-17 06:00 EST -> Tue 01-19 06:00 EST +Mon 01-18",
			"Sun 01-17 22:00 EST -> Tue 01-19 22:00 EST +Mon 01-18",
		}},
		// The first of the month, or the next (previous) business day: the use the policies are for.
		{"monthly, next", "0 6 1 * *", NextBusinessDay, []string{"Fri 01-01 06:00 EST -> Mon 01-04 06:00 EST"}},
		{"monthly, previous", "0 6 1 * *", PreviousBusinessDay, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := Exclusion{Calendars: []*Calendar{us}, Policy: tt.policy, Location: ny}
			runs, err := e.Runs(cronNext(t, tt.cron, "America/New_York"), after, until)
			if err != nil {
				t.Fatal(err)
			}
			if got := runStrings(runs, ny); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Runs:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}

// A moved slot merges into its target day's run even at another time of day: the day's first.
func TestRunsMergeIntoFirst(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	us := mustCal(t, Spec{Name: "us", TZ: "America/New_York", Weekdays: []string{"sat", "sun"}})
	sundays, mondays := cronNext(t, "0 22 * * 0", "America/New_York"), cronNext(t, "0 6,12 * * 1", "America/New_York")
	next := func(after time.Time) time.Time { // the union of the two schedules
		a, b := sundays(after), mondays(after)
		if a.Before(b) {
			return a
		}
		return b
	}
	e := Exclusion{Calendars: []*Calendar{us}, Policy: NextBusinessDay, Location: ny}
	runs, err := e.Runs(next, mustTime(t, "2027-01-01T00:00:00-05:00"), mustTime(t, "2027-01-11T23:00:00-05:00"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Mon 01-04 06:00 EST +Sun 01-03", "Mon 01-04 12:00 EST", "Mon 01-11 06:00 EST +Sun 01-10", "Mon 01-11 12:00 EST"}
	if got := runStrings(runs, ny); !reflect.DeepEqual(got, want) {
		t.Errorf("Runs = %q, want %q", got, want)
	}
}

// The monthly schedule's runs over 2027 in both directions, with a real year's holidays.
func TestRunsMonthly(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	us := mustCal(t, Spec{Name: "us", TZ: "America/New_York", Weekdays: []string{"sat", "sun"},
		Dates: []string{"2026-12-25", "2027-01-01", "2027-05-31", "2027-07-05", "2027-09-06", "2027-12-31", "2028-01-01"}})
	next := cronNext(t, "0 6 1 * *", "America/New_York")
	after, until := mustTime(t, "2026-12-31T23:59:59-05:00"), mustTime(t, "2027-12-31T23:59:59-05:00")
	for _, tt := range []struct {
		policy OnExcluded
		want   []string
	}{
		{NextBusinessDay, []string{
			"Fri 01-01 06:00 EST -> Mon 01-04 06:00 EST", "Mon 02-01 06:00 EST", "Mon 03-01 06:00 EST", "Thu 04-01 06:00 EDT",
			"Sat 05-01 06:00 EDT -> Mon 05-03 06:00 EDT", "Tue 06-01 06:00 EDT", "Thu 07-01 06:00 EDT",
			"Sun 08-01 06:00 EDT -> Mon 08-02 06:00 EDT", "Wed 09-01 06:00 EDT", "Fri 10-01 06:00 EDT", "Mon 11-01 06:00 EDT",
			"Wed 12-01 06:00 EST",
		}},
		// 2027-01-01 moves to 2026-12-31, out of the range; 2028-01-01 (a Saturday and a holiday, with
		// 2027-12-31 observed) moves to Thursday 2027-12-30, into it.
		{PreviousBusinessDay, []string{
			"Mon 02-01 06:00 EST", "Mon 03-01 06:00 EST", "Thu 04-01 06:00 EDT", "Sat 05-01 06:00 EDT -> Fri 04-30 06:00 EDT",
			"Tue 06-01 06:00 EDT", "Thu 07-01 06:00 EDT", "Sun 08-01 06:00 EDT -> Fri 07-30 06:00 EDT", "Wed 09-01 06:00 EDT",
			"Fri 10-01 06:00 EDT", "Mon 11-01 06:00 EDT", "Wed 12-01 06:00 EST", "Sat 01-01 06:00 EST -> Thu 12-30 06:00 EST",
		}},
	} {
		runs, err := Exclusion{Calendars: []*Calendar{us}, Policy: tt.policy, Location: ny}.Runs(next, after, until)
		if err != nil {
			t.Fatal(err)
		}
		if got := runStrings(runs, ny); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %s\nwant %s", tt.policy, strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
		}
	}
}

// Runs does not depend on how a range is cut: the runs of (a, c] are those of (a, b] and then (b, c], for any
// b. Every replica, whenever it asks, gets the same runs.
func TestRunsSplit(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	us := mustCal(t, Spec{Name: "us", TZ: "America/New_York", Weekdays: []string{"sat", "sun"},
		Dates: []string{"2027-01-01", "2027-01-18", "2027-02-15", "2027-03-15", "2027-03-16"}})
	de := mustCal(t, Spec{Name: "de", TZ: "Europe/Berlin", Weekdays: []string{"sun"}, Dates: []string{"2027-03-26", "2027-03-29"}})
	start, end := mustTime(t, "2026-12-28T00:00:00Z"), mustTime(t, "2027-04-10T00:00:00Z")
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cron := range []string{"0 6 * * *", "30 2 * * 0,6", "0 9,15 * * 6", "0 20 * * 1-5", "0 */5 * * *", "0 6 1,15 * *"} {
		next := cronNext(t, cron, "America/New_York")
		for _, p := range []OnExcluded{Skip, NextBusinessDay, PreviousBusinessDay} {
			e := Exclusion{Calendars: []*Calendar{us, de}, Policy: p, Location: ny}
			whole, err := e.Runs(next, start, end)
			if err != nil {
				t.Fatal(err)
			}
			for range 20 {
				mid := start.Add(time.Duration(rng.Int64N(int64(end.Sub(start)))))
				a, err := e.Runs(next, start, mid)
				if err != nil {
					t.Fatal(err)
				}
				b, err := e.Runs(next, mid, end)
				if err != nil {
					t.Fatal(err)
				}
				if got := append(a, b...); !reflect.DeepEqual(runStrings(got, ny), runStrings(whole, ny)) {
					t.Fatalf("%q %s: cut at %s:\n got %v\nwant %v", cron, p, mid, runStrings(got, ny), runStrings(whole, ny))
				}
			}
			// Every slot is accounted for once: a run's identity, merged into one, or skipped.
			seen := map[time.Time]int{}
			for _, r := range whole {
				seen[r.Slot]++
				for _, m := range r.Merged {
					seen[m]++
				}
				if e.Excludes(r.At) {
					t.Errorf("%q %s: run %s is on an excluded day", cron, p, runString(r, ny))
				}
			}
			for s, n := range seen {
				if n > 1 {
					t.Errorf("%q %s: slot %s appears %d times", cron, p, s, n)
				}
			}
		}
	}
}

// Under skip, Runs jumps over a calendar's excluded day; the result is that of resolving every slot.
func TestRunsSkipJumps(t *testing.T) {
	t.Parallel()
	berlin := mustZone(t, "Europe/Berlin")
	de := mustCal(t, Spec{Name: "de", TZ: "Europe/Berlin", Weekdays: []string{"sat", "sun"}, Dates: []string{"2027-03-26", "2027-03-29"}})
	us := mustCal(t, Spec{Name: "us", TZ: "America/New_York", Dates: []string{"2027-03-31"}})
	e := Exclusion{Calendars: []*Calendar{de, us}, Location: berlin}
	next := cronNext(t, "*/7 * * * *", "Europe/Berlin")
	after, until := mustTime(t, "2027-03-20T00:00:00Z"), mustTime(t, "2027-04-05T00:00:00Z")
	got, err := e.Runs(next, after, until)
	if err != nil {
		t.Fatal(err)
	}
	var want []Run
	for s := next(after); !s.After(until); s = next(s) {
		if !e.Excludes(s) {
			want = append(want, Run{Slot: s, At: s})
		}
	}
	if len(got) != len(want) || !reflect.DeepEqual(got, want) {
		t.Errorf("Runs under skip: %d runs, want %d", len(got), len(want))
	}
}

func TestRunsEdges(t *testing.T) {
	t.Parallel()
	next := cronNext(t, "0 6 * * *", "")
	e := Exclusion{Policy: NextBusinessDay}
	at := mustTime(t, "2027-06-01T06:00:00Z")
	if runs, err := e.Runs(next, at, at); runs != nil || err != nil {
		t.Errorf("Runs of an empty range = %v, %v", runs, err)
	}
	// after is excluded from the range, until included.
	runs, err := e.Runs(next, at, at.Add(24*time.Hour))
	if err != nil || len(runs) != 1 || !runs[0].At.Equal(at.Add(24*time.Hour)) {
		t.Errorf("Runs(06:00, 06:00 next day) = %v, %v", runs, err)
	}
	// A schedule that ends.
	end := func(after time.Time) time.Time {
		if s := next(after); s.Before(at) {
			return s
		}
		return time.Time{}
	}
	if runs, err := e.Runs(end, at.Add(-72*time.Hour), at.Add(72*time.Hour)); err != nil || len(runs) != 2 {
		t.Errorf("Runs of an ending schedule = %v, %v", runStrings(runs, time.UTC), err)
	}
	// A failed move fails the listing.
	early := mustCal(t, Spec{Name: "early", Weekdays: []string{"mon", "tue", "wed"}})
	late := mustCal(t, Spec{Name: "late", Weekdays: []string{"thu", "fri", "sat", "sun"}})
	e.Calendars = []*Calendar{early, late}
	if _, err := e.Runs(next, at, at.Add(48*time.Hour)); !errors.Is(err, ErrNoBusinessDay) {
		t.Errorf("Runs with no business day: %v", err)
	}
}

func TestUpcoming(t *testing.T) {
	t.Parallel()
	ny := mustZone(t, "America/New_York")
	us := mustCal(t, Spec{Name: "us", TZ: "America/New_York", Weekdays: []string{"sat", "sun"}, Dates: []string{"2027-01-01"}})
	e := Exclusion{Calendars: []*Calendar{us}, Policy: NextBusinessDay, Location: ny}
	from := mustTime(t, "2027-01-01T12:00:00-05:00")
	runs, err := e.Upcoming(cronNext(t, "0 6 * * *", "America/New_York"), from, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Mon 01-04 06:00 EST +Fri 01-01,Sat 01-02,Sun 01-03", "Tue 01-05 06:00 EST", "Wed 01-06 06:00 EST"}
	if got := runStrings(runs, ny); !reflect.DeepEqual(got, want) {
		t.Errorf("Upcoming = %q, want %q", got, want)
	}
	// A rare schedule: the next run is years away.
	runs, err = e.Upcoming(cronNext(t, "0 6 29 2 *", "America/New_York"), from, 2)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"Tue 02-29 06:00 EST", "Sun 02-29 06:00 EST -> Mon 03-01 06:00 EST"}
	if got := runStrings(runs, ny); !reflect.DeepEqual(got, want) || runs[1].Slot.Year() != 2032 {
		t.Errorf("Upcoming(Feb 29) = %q, want %q (2028, 2032)", got, want)
	}
	// Nothing ever runs: fewer than asked, within the horizon.
	runs, err = Exclusion{Calendars: []*Calendar{us}, Location: ny}.Upcoming(cronNext(t, "0 6 * * 6", "America/New_York"), from, 2)
	if err != nil || len(runs) != 0 {
		t.Errorf("Upcoming of excluded Saturdays = %v, %v", runs, err)
	}
	if runs, err := e.Upcoming(cronNext(t, "0 6 * * *", ""), from, 0); runs != nil || err != nil {
		t.Errorf("Upcoming(0) = %v, %v", runs, err)
	}
}
