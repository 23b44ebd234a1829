package dispatch

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// calendarSet is a planner's calendar lookup that a test changes as a View would.
type calendarSet struct {
	mu sync.Mutex
	m  map[string]*calendar.Calendar
}

func newCalendarSet(t testing.TB, specs ...calendar.Spec) *calendarSet {
	c := &calendarSet{m: map[string]*calendar.Calendar{}}
	c.put(t, specs...)
	return c
}

func (c *calendarSet) put(t testing.TB, specs ...calendar.Spec) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range specs {
		cal, err := s.Compile()
		if err != nil {
			t.Fatal(err)
		}
		c.m[s.Name] = cal
	}
}

func (c *calendarSet) get(name string) (*calendar.Calendar, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cal, ok := c.m[name]
	return cal, ok
}

// sim drives a planner over simulated time, as a term's loop does, and keeps what it emitted.
type sim struct {
	t       *testing.T
	p       *planner
	now     time.Time
	emitted []time.Time
}

// until runs the planner's wake-ups up to end (simulated), and returns the slots emitted meanwhile.
func (s *sim) until(end time.Time) []time.Time {
	s.t.Helper()
	var out []time.Time
	for {
		at, ok := s.p.nextWake()
		if !ok || at.After(end) {
			s.now = end
			return out
		}
		s.now = maxTime(s.now, at)
		for _, em := range s.p.collect(&batch{}, s.now, 100) {
			out = append(out, em.slots...)
			s.emitted = append(s.emitted, em.slots...)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func utc(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func hours(t testing.TB, ts []time.Time) string {
	t.Helper()
	var b []string
	for _, x := range ts {
		b = append(b, x.UTC().Format("01-02T15"))
	}
	return strings.Join(b, " ")
}

// TestPlannerCalendars drives a planner over simulated days with an hourly schedule that excludes a calendar:
// an excluded day's slots are never emitted; a calendar change applies from the first slot not emitted yet (a
// slot emitted ahead stays, and is not emitted again), and one that stops excluding a day runs its slots from
// the change on, not the ones already past; a schedule whose calendar is unknown waits, then catches up by its
// policy; a new term from the state continues as the running one would; calendars that exclude every day leave
// the schedule no slot, noted once.
func TestPlannerCalendars(t *testing.T) {
	t.Parallel()
	lead := 10 * time.Second
	hol := func(dates ...string) calendar.Spec { return calendar.Spec{Name: "hol", Dates: dates} }
	cals := newCalendarSet(t, hol("2027-12-25"))
	spec := schedule.Spec{Name: "h", Every: schedule.Duration(time.Hour), Catchup: "all", Exclude: []string{"hol"}}
	entries := map[string]store.Entry{"h": entry(t, spec, utc(t, "2027-12-24T20:30:00Z"))}
	s := &sim{t: t, p: newPlannerFrom(1, maps.All(entries), nil, lead, cals.get)}

	// The 25th is excluded: the slot after the 24th's last is the 26th's first.
	got := s.until(utc(t, "2027-12-26T02:00:00Z"))
	if want := "12-24T21 12-24T22 12-24T23 12-26T00 12-26T01 12-26T02"; hours(t, got) != want {
		t.Errorf("across an excluded day: %s, want %s", hours(t, got), want)
	}

	// A calendar that now excludes the 26th, applied just after the 03:00 slot was emitted ahead (at 02:59:50):
	// that slot stays emitted and is not emitted again; the next ones are excluded.
	s.until(utc(t, "2027-12-26T02:59:55Z"))
	cals.put(t, hol("2027-12-25", "2027-12-26"))
	if !s.p.recalendar("h", s.now) {
		t.Fatal("recalendar: no change")
	}
	got = s.until(utc(t, "2027-12-27T01:00:00Z"))
	if want := "12-27T00 12-27T01"; hours(t, got) != want {
		t.Errorf("after a change within the lead: %s, want %s", hours(t, got), want)
	}
	if n := countOf(s.emitted, utc(t, "2027-12-26T03:00:00Z")); n != 1 {
		t.Errorf("the slot emitted ahead of the change: %d times, want once", n)
	}

	// A calendar excluding the 28th, then taken back at noon on the 28th: its slots run from 13:00, the
	// morning's are not caught up.
	cals.put(t, hol("2027-12-28"))
	s.p.recalendar("h", s.now)
	s.until(utc(t, "2027-12-28T12:00:00Z"))
	cals.put(t, hol("2099-01-01"))
	s.p.recalendar("h", s.now)
	got = s.until(utc(t, "2027-12-28T14:00:00Z"))
	if want := "12-28T13 12-28T14"; hours(t, got) != want {
		t.Errorf("after a calendar stopped excluding the day at noon: %s, want %s", hours(t, got), want)
	}

	// Every slot emitted once, in order.
	for i := 1; i < len(s.emitted); i++ {
		if !s.emitted[i].After(s.emitted[i-1]) {
			t.Fatalf("slots out of order or twice: %s", hours(t, s.emitted))
		}
	}
}

func countOf(ts []time.Time, x time.Time) int {
	n := 0
	for _, y := range ts {
		if y.Equal(x) {
			n++
		}
	}
	return n
}

// TestPlannerWaitsForCalendar: a schedule whose calendar the leader does not know is not armed, is counted and
// noted once; once the calendar is read it is armed from its base, and its catch-up policy emits what fell due,
// without an excluded slot.
func TestPlannerWaitsForCalendar(t *testing.T) {
	t.Parallel()
	cals := newCalendarSet(t)
	spec := schedule.Spec{Name: "h", Every: schedule.Duration(time.Hour), Catchup: "all", Exclude: []string{"late"}}
	entries := map[string]store.Entry{"h": entry(t, spec, utc(t, "2027-12-24T20:30:00Z"))}
	s := &sim{t: t, p: newPlannerFrom(1, maps.All(entries), nil, 0, cals.get)}
	if _, ok := s.p.nextWake(); ok {
		t.Fatal("a waiting schedule is armed")
	}
	if s.p.waiting() != 1 || !slices.Equal(s.p.calNotes.waiting, []string{"h"}) || !slices.Equal(s.p.waitingFor("h"), []string{"late"}) {
		t.Errorf("waiting %d, notes %v, for %v", s.p.waiting(), s.p.calNotes.waiting, s.p.waitingFor("h"))
	}
	s.now = utc(t, "2027-12-26T01:30:00Z")
	cals.put(t, calendar.Spec{Name: "late", Dates: []string{"2027-12-25"}})
	if !s.p.recalendar("h", s.now) || s.p.waiting() != 0 {
		t.Fatal("not armed once the calendar is known")
	}
	got := s.until(s.now)
	if want := "12-24T21 12-24T22 12-24T23 12-26T00 12-26T01"; hours(t, got) != want {
		t.Errorf("caught up: %s, want %s", hours(t, got), want)
	}
}

// TestPlannerCalendarsAcrossTerms: a new term built from the state the running one wrote plans the same slots as
// the running one would: none of the excluded day, none twice.
func TestPlannerCalendarsAcrossTerms(t *testing.T) {
	t.Parallel()
	cals := newCalendarSet(t, calendar.Spec{Name: "hol", TZ: "Europe/Berlin", Dates: []string{"2027-12-25"}})
	spec := schedule.Spec{Name: "h", Every: schedule.Duration(time.Hour), Catchup: "all", Exclude: []string{"hol"}}
	entries := map[string]store.Entry{"h": entry(t, spec, utc(t, "2027-12-24T20:30:00Z"))}
	one := &sim{t: t, p: newPlannerFrom(1, maps.All(entries), nil, 0, cals.get)}
	first := one.until(utc(t, "2027-12-24T23:30:00Z")) // the leader dies within the excluded day (Berlin's 25th)
	state := map[string]stored{"h": {LastSlot: first[len(first)-1]}}
	two := &sim{t: t, p: newPlannerFrom(1, maps.All(entries), state, 0, cals.get), now: utc(t, "2027-12-25T12:00:00Z")}
	second := two.until(utc(t, "2027-12-26T00:00:00Z"))
	// Berlin's 25th is 2027-12-24T23:00Z to 2027-12-25T23:00Z.
	if got, want := hours(t, append(first, second...)), "12-24T21 12-24T22 12-25T23 12-26T00"; got != want {
		t.Errorf("across a failover within the excluded day: %s, want %s", got, want)
	}
}

// TestPlannerCalendarsExhausted: calendars that together exclude every day leave the schedule unarmed and
// noted, and planning it does not spin.
func TestPlannerCalendarsExhausted(t *testing.T) {
	t.Parallel()
	cals := newCalendarSet(t, calendar.Spec{Name: "week", Weekdays: []string{"mon", "tue", "wed", "thu", "fri"}},
		calendar.Spec{Name: "weekend", Weekdays: []string{"sat", "sun"}})
	spec := schedule.Spec{Name: "s", Every: schedule.Duration(time.Second), Exclude: []string{"week", "weekend"}}
	start := time.Now()
	p := newPlannerFrom(1, maps.All(map[string]store.Entry{"s": entry(t, spec, t0)}), nil, 0, cals.get)
	if _, ok := p.nextWake(); ok {
		t.Error("armed")
	}
	if !slices.Equal(p.calNotes.exhausted, []string{"s"}) || p.waiting() != 0 {
		t.Errorf("notes %+v, waiting %d", p.calNotes, p.waiting())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("planning took %s", d)
	}
}
