package status

import (
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
	tomorrow := time.Now().UTC().AddDate(0, 0, 1)
	if _, err := calendarstore.Put(b.ctx, b.cl, b.names.Calendars, calendar.Spec{Name: "hol", Dates: []string{tomorrow.Format(time.DateOnly)}}); err != nil {
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
	now := time.Date(tomorrow.Year(), tomorrow.Month(), tomorrow.Day(), 0, 0, 0, 0, time.UTC).Add(-time.Hour) // 23:00 the day before
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Schedules {
		switch s.Name {
		case "daily":
			// Today's 12:00 has passed by 23:00; tomorrow's is excluded: the day after's.
			if want := now.Add(time.Hour).AddDate(0, 0, 1).Add(12 * time.Hour); s.NextSlot == nil || !s.NextSlot.Equal(want) {
				t.Errorf("daily: next slot %v, want %v", s.NextSlot, want)
			}
		case "ghost":
			if s.NextSlot != nil || len(s.Notes) == 0 || !strings.Contains(s.Notes[0], "excludes nope, which the namespace does not have") {
				t.Errorf("ghost: next slot %v, notes %q", s.NextSlot, s.Notes)
			}
		}
	}
	rep, err = Collect(b.ctx, b.opts, b.names, "st", Options{Schedule: "daily", Now: now, Upcoming: 2})
	if err != nil {
		t.Fatal(err)
	}
	if up := rep.Schedules[0].Upcoming; len(up) != 2 || up[0].Slot.Day() == tomorrow.Day() {
		t.Errorf("daily: upcoming %+v, want none on %s", up, tomorrow.Format(time.DateOnly))
	}
}
