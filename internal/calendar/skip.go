package calendar

import (
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// What a leader honours of a schedule's calendars under the Skip policy (move.go has the move policies). A
// schedule's slot sequence under its calendars is its own slots whose instants no calendar excludes (Exclusion.Excludes); Apply makes a
// schedule.Schedule of that sequence, so that the leader's plans (catch-up included), next runs, a backfill and
// the audit all step through the same slots, with the schedule package's own Next and Plan. An excluded slot is
// never emitted, so a leader's state (the last emitted slot) still only grows, and the exactly-once argument of
// package dispatch holds unchanged: the slot after s is Next(s), only Next now passes over excluded days.

// Of returns the Exclusion of schedule s under the calendars that get finds by name: the calendars s excludes,
// its policy and its zone. missing lists, in s's order, the calendars s excludes that get does not find (not read
// yet, or deleted by a race with a writer): an Exclusion without them would run their days, so a caller must not
// use it then (the leader holds the schedule until they are known).
func Of(s *schedule.Schedule, get func(name string) (*Calendar, bool)) (e Exclusion, missing []string) {
	names := s.Exclude()
	if len(names) == 0 {
		return Exclusion{}, nil
	}
	e.Calendars = make([]*Calendar, 0, len(names))
	for _, n := range names {
		if c, ok := get(n); ok && c != nil {
			e.Calendars = append(e.Calendars, c)
		} else {
			missing = append(missing, n)
		}
	}
	e.Policy = OnExcluded(s.OnExcluded())
	e.Location = s.Spec().Location()
	return e, missing
}

// Apply returns s under e: with the slots e excludes taken out (schedule.Schedule.Skipping) under Skip, or as
// the sequence of its runs (schedule.Schedule.Moving, move.go) under a move policy; s itself when e has no
// calendar. A move applies to a cron schedule only (the writers refuse it for an interval one); an interval
// schedule's excluded slots are skipped whatever the policy.
func (e Exclusion) Apply(s *schedule.Schedule) *schedule.Schedule {
	if s.Skipped() {
		s = s.Skipping(nil)
	}
	if len(e.Calendars) == 0 {
		return s
	}
	switch e.Policy {
	case NextBusinessDay, PreviousBusinessDay:
		if s.Spec().Every == 0 {
			return e.moving(s)
		}
	}
	return s.Skipping(e.Skip)
}

// Skip is the schedule.Skip of e: a slot that a calendar excludes is taken out, with every later slot up to the
// end of that calendar's date (in the calendar's zone), which the calendar excludes too.
func (e Exclusion) Skip(slot time.Time) (bool, time.Time) {
	u := slot.Unix()
	i := e.excludedBy(u)
	if i < 0 {
		return false, time.Time{}
	}
	c := e.Calendars[i]
	return true, time.Unix(dayStart(c.loc, c.day(u)+1), 0).UTC()
}

// Apply is Of and Exclusion.Apply together: s under the calendars get finds, and the names of those it does not
// find (s is then returned unskipped, and must not be taken for the schedule's slots).
func Apply(s *schedule.Schedule, get func(name string) (*Calendar, bool)) (*schedule.Schedule, []string) {
	e, missing := Of(s, get)
	if len(missing) > 0 {
		return s, missing
	}
	return e.Apply(s), nil
}

// Getter returns a lookup of the calendars of m, by name, for Of and Apply.
func Getter(m map[string]*Calendar) func(string) (*Calendar, bool) {
	return func(name string) (*Calendar, bool) {
		c, ok := m[name]
		return c, ok
	}
}
