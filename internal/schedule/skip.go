package schedule

import "time"

// Skip takes slots out of a schedule's sequence: a holiday calendar's excluded days (package calendar builds
// one from a schedule's calendars; this package knows nothing of calendars). It reports whether slot is taken
// out and, if so, an instant until which every later slot is taken out too (the end of the excluded day), so
// that Next passes over a day of slots in one step; an until at or before slot says nothing of later slots.
//
// A Skip must be pure (the same answer for the same slot, on every replica) and cheap, and it should give an
// until: Next steps once per answer, so a Skip that excludes a whole day of a 1s schedule slot by slot costs
// 86,400 steps.
type Skip func(slot time.Time) (skipped bool, until time.Time)

// MaxSkip and MaxSkipSteps bound a skipping schedule's search for a slot that its Skip keeps: Next gives up once
// it has tested more than MaxSkipSteps slots the Skip took out (with a calendar's Skip, each a whole excluded
// day) and reached more than MaxSkip past the first slot it tested. A calendar always leaves a working day
// within 366 days; only several calendars that together exclude every day (or every day on which the schedule
// has a slot) exhaust the search, and Next then returns the zero time, as past End: the schedule has no next
// slot (SkipExhausted tells the two apart). Both bounds must be passed, so that a sparse schedule (a yearly
// one, or one whose Start is years away) is never cut short by the time alone, and a dense one never spins.
const (
	MaxSkip      = 400 * 24 * time.Hour
	MaxSkipSteps = 1000
)

// Skipping returns a copy of s whose slots are those of s that skip keeps: Next, Upcoming, Plan and every plan
// step over the slots skip takes out, so that the leader and every reader of the slots (next runs, a backfill,
// the audit) enumerate the same sequence. It replaces any Skip s had; a nil skip returns s's slots unskipped.
// The copy shares everything else with s (Spec is s's: a Skip is no part of the definition). It also removes a
// Move (Moving): Skipping(nil) is s's own slots.
func (s *Schedule) Skipping(skip Skip) *Schedule {
	return s.withRare(func(x *rare) { x.skip, x.move = skip, nil })
}

// withRare returns a copy of s whose rarely set fields are s's as set changes them (s keeps its own).
func (s *Schedule) withRare(set func(x *rare)) *Schedule {
	c := *s
	x := rare{}
	if s.x != nil {
		x = *s.x
	}
	set(&x)
	c.x = &x
	return &c
}

// Skipped reports whether s has a Skip (Skipping) or a Move (Moving): its calendars applied.
func (s *Schedule) Skipped() bool { return s.x != nil && (s.x.skip != nil || s.x.move != nil) }

// SkipExhausted reports whether Next(after) is the zero time because its Skip took out every slot within
// MaxSkip of after (or its Move found no run while its own slots go on), rather than because End came first.
func (s *Schedule) SkipExhausted(after time.Time) bool {
	if s.x != nil && s.x.move != nil {
		at, _ := s.x.move(after)
		return at.IsZero() && !s.next(after).IsZero()
	}
	if s.x == nil || s.x.skip == nil {
		return false
	}
	_, exhausted := s.nextKept(after)
	return exhausted
}

// nextKept is Next for a schedule with a Skip: the first slot after `after` that the Skip keeps, searched within
// MaxSkip and MaxSkipSteps; exhausted when the search ended there rather than at End.
func (s *Schedule) nextKept(after time.Time) (t time.Time, exhausted bool) {
	var limit time.Time
	for steps := 0; ; steps++ {
		if t = s.next(after); t.IsZero() {
			return time.Time{}, false
		}
		if steps == 0 {
			limit = t.Add(MaxSkip)
		} else if steps > MaxSkipSteps && t.After(limit) {
			return time.Time{}, true
		}
		skipped, until := s.x.skip(t)
		if !skipped {
			return t, false
		}
		// Every slot before until is taken out: the next one to test is the first at or after it (slots are
		// whole seconds, so strictly after until-1ns is at or after until).
		after = t
		if until.After(t) {
			after = until.Add(-time.Nanosecond)
		}
	}
}
