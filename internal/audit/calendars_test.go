package audit

import (
	"reflect"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// day returns 2026-12-01 (day 1) + n days + h hours, UTC.
func day(n int, h float64) time.Time {
	return time.Date(2026, 11, 30+n, 0, 0, 0, 0, time.UTC).Add(time.Duration(h * float64(time.Hour)))
}

func (f *fixture) calendar(at time.Time, dates ...string) *fixture {
	f.t.Helper()
	c, err := calendar.Spec{Name: "hol", Dates: dates}.Compile()
	if err != nil {
		f.t.Fatal(err)
	}
	f.l.AddCalendarVersion("hol", at, c)
	return f
}

// hourly emits (10 s ahead, as a leader with the default lead) and runs the hourly slots of [from, to], but skip.
func (f *fixture) hourly(from, to time.Time, skip ...time.Time) {
	for s := from; !s.After(to); s = s.Add(time.Hour) {
		skipped := false
		for _, x := range skip {
			skipped = skipped || x.Equal(s)
		}
		if !skipped {
			f.entry(f.emit("s", s, 0, 1, s.Add(-10*time.Second), 1), ok("w1", 1))
		}
	}
}

var hourlyHol = schedule.Spec{Every: schedule.Duration(time.Hour), Exclude: []string{"hol"}}

// TestCompareCalendars: the slots a schedule's calendars exclude are counted excluded, never missing; the
// calendars in force when a slot was planned decide it (a calendar changed within the range applies from the
// first slot the leader had not emitted); a change within a slot's span (its lead, emitted ahead) makes the
// slot optional; a calendar the schedule names but that did not exist makes its slots optional; an excluded slot
// emitted anyway is unexpected.
func TestCompareCalendars(t *testing.T) {
	t.Parallel()
	o := Options{From: day(1, 0), To: day(3, 23), Now: day(5, 0), Lead: 10 * time.Second}
	for _, tc := range []struct {
		name  string
		build func(f *fixture)
		want  Counts
	}{
		{
			name: "an excluded day",
			build: func(f *fixture) {
				f.put(hourlyHol, day(1, 0)).calendar(day(0, 0), "2026-12-02")
				f.hourly(day(1, 1), day(1, 23))
				f.hourly(day(3, 0), day(3, 23))
			},
			want: Counts{Expected: 47, Emitted: 47, Executed: 47, Excluded: 24},
		},
		{
			name: "a calendar changed to exclude the day at 11:30, then back at 18:30",
			build: func(f *fixture) {
				f.put(hourlyHol, day(1, 0)).calendar(day(0, 0), "2099-01-01")
				f.calendar(day(2, 11.5), "2026-12-02").calendar(day(2, 18.5), "2099-01-01")
				f.hourly(day(1, 1), day(3, 23), day(2, 12), day(2, 13), day(2, 14), day(2, 15), day(2, 16), day(2, 17), day(2, 18))
			},
			want: Counts{Expected: 64, Emitted: 64, Executed: 64, Excluded: 7},
		},
		{
			name: "a change 5 s before a slot emitted ahead: optional, not excluded",
			build: func(f *fixture) {
				f.put(hourlyHol, day(1, 0)).calendar(day(0, 0), "2099-01-01").calendar(day(2, 12).Add(-5*time.Second), "2026-12-02")
				f.hourly(day(1, 1), day(2, 12))
				f.hourly(day(3, 0), day(3, 23))
			},
			want: Counts{Expected: 60, Emitted: 60, Executed: 60, Excluded: 11},
		},
		{
			name: "an excluded slot emitted anyway (a ticker that ignores calendars) is unexpected",
			build: func(f *fixture) {
				f.put(hourlyHol, day(1, 0)).calendar(day(0, 0), "2026-12-02")
				f.hourly(day(1, 1), day(1, 23))
				f.hourly(day(2, 5), day(2, 5))
				f.hourly(day(3, 0), day(3, 23))
			},
			want: Counts{Expected: 47, Emitted: 48, Executed: 48, Excluded: 24, Unexpected: 1},
		},
		{
			name: "a calendar that does not exist: the leader waits, nothing is missing",
			build: func(f *fixture) {
				f.put(hourlyHol, day(1, 0))
				f.hourly(day(3, 0), day(3, 23))
			},
			want: Counts{Expected: 24, Emitted: 24, Executed: 24},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tc.build(f)
			rep := Compare(f.l, o)
			if len(rep.Schedules) != 1 {
				t.Fatalf("schedules %+v", rep.Schedules)
			}
			c := rep.Schedules[0].Counts
			c.Outcomes = nil
			if !reflect.DeepEqual(c, tc.want) {
				t.Errorf("counts:\n got %+v\nwant %+v", c, tc.want)
				for _, tr := range rep.Schedules[0].Ticks {
					t.Logf("%s %s %v", tr.ID, tr.State, tr.Problems)
				}
			}
			if rep.OK != (tc.want.Missing == 0) || rep.Totals.Excluded != tc.want.Excluded {
				t.Errorf("OK %v, totals excluded %d", rep.OK, rep.Totals.Excluded)
			}
		})
	}
}

// TestCompareCalendarsPartial: a calendars history that compaction cut is said so in the report of every
// schedule that excludes a calendar.
func TestCompareCalendarsPartial(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.put(hourlyHol, day(1, 0)).calendar(day(0, 0), "2026-12-02")
	f.put(schedule.Spec{Name: "plain", Every: schedule.Duration(time.Hour)}, day(1, 0))
	f.l.CalendarsPartial = true
	rep := Compare(f.l, Options{From: day(1, 0), To: day(1, 5), Now: day(5, 0)})
	for _, s := range rep.Schedules {
		noted := false
		for _, n := range s.Notes {
			noted = noted || len(n) > 0 && n[:len("the calendars topic")] == "the calendars topic"
		}
		if noted != (s.Name == "s") {
			t.Errorf("%s: notes %q", s.Name, s.Notes)
		}
	}
}
