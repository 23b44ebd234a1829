package schedule

import "time"

// Move is a schedule's runs under a policy that moves slots to other instants (package calendar's business-day
// moves): the first run whose instant is strictly after `after`, as that instant and the run's identity, one of
// the schedule's own slots (its tick is name@slot wherever it runs). It returns the zero at when there is none.
//
// A Move must be pure (the same answer on every replica), its instants whole seconds and strictly increasing
// with `after` (at most one run per instant), and it should be cheap when called again with the instant it
// returned last: Next steps through a moving schedule's runs one call at a time.
type Move func(after time.Time) (at, slot time.Time)

// Moving returns a copy of s whose sequence is the runs of move: Next, Upcoming, Plan and every plan step
// through the run instants, in order, so that the catch-up policies count runs and a leader's progress (its
// last emitted instant) only grows; SlotOf gives each run's identity. It replaces any Skip or Move s had
// (Skipping(nil) removes both). The copy shares everything else with s.
func (s *Schedule) Moving(move Move) *Schedule {
	return s.withRare(func(x *rare) { x.skip, x.move = nil, move })
}

// Moves reports whether s has a Move (Moving): its instants may not be its slots.
func (s *Schedule) Moves() bool { return s.x != nil && s.x.move != nil }

// SlotOf returns the identity slot of the run at instant at (one that Next returned): at itself for a schedule
// without a Move, or for an instant that is no run of it.
func (s *Schedule) SlotOf(at time.Time) time.Time {
	if s.x == nil || s.x.move == nil {
		return at
	}
	if got, slot := s.x.move(at.Add(-time.Nanosecond)); got.Equal(at) {
		return slot
	}
	return at
}
