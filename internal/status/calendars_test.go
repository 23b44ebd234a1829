package status

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// TestCollectCalendars: a schedule's next slots are those its calendars leave (the days they exclude skipped), in
// the list and for one schedule; one that excludes a calendar the namespace does not have has no next slot, and
// a note says why.
func TestCollectCalendars(t *testing.T) {
	b := setup(t)
	// The holiday is the day of daily's next 12:00 (UTC) after now: a schedule's next slot is the first after its
	// record's time, which is now.
	now := time.Now().UTC()
	next := time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC)
	if !next.After(now) {
		next = next.AddDate(0, 0, 1)
	}
	if _, err := calendarstore.Put(b.ctx, b.cl, b.names.Calendars, calendar.Spec{Name: "hol", Dates: []string{next.Format(time.DateOnly)}}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []schedule.Spec{
		{Name: "daily", Cron: "0 12 * * *", Exclude: []string{"hol"}},
		{Name: "ghost", Cron: "0 12 * * *", Exclude: []string{"nope"}},
	} {
		v, err := schedule.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		b.put(t, s.Name, v)
	}
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Schedules {
		switch s.Name {
		case "daily":
			// The next 12:00 is excluded: the one of the day after.
			if want := next.AddDate(0, 0, 1); s.NextSlot == nil || !s.NextSlot.Equal(want) {
				t.Errorf("daily: next slot %v, want %v", s.NextSlot, want)
			}
		case "ghost":
			if s.NextSlot != nil || len(s.Notes) == 0 || !strings.Contains(s.Notes[0], "excludes nope, which the namespace does not have") ||
				!slices.Equal(s.MissingCalendars, []string{"nope"}) {
				t.Errorf("ghost: next slot %v, notes %q, missing calendars %q", s.NextSlot, s.Notes, s.MissingCalendars)
			}
		}
	}
	rep, err = Collect(b.ctx, b.opts, b.names, "st", Options{Schedule: "daily", Now: now, Upcoming: 2})
	if err != nil {
		t.Fatal(err)
	}
	if up := rep.Schedules[0].Upcoming; len(up) != 2 || up[0].Slot.Day() == next.Day() {
		t.Errorf("daily: upcoming %+v, want none on %s", up, next.Format(time.DateOnly))
	}
}
