package calendar

import (
	"sort"
	"sync"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// What a leader honours of a move policy (NextBusinessDay, PreviousBusinessDay): the runs of Exclusion.Runs.
// Apply makes a schedule.Schedule whose sequence is their instants (schedule.Schedule.Moving), each identified
// by its slot (schedule.Schedule.SlotOf), so that the leader's plans (catch-up included), next runs, a backfill
// and the audit step through the same runs. A leader's progress is the instant of the last run it emitted,
// which only grows, as the last emitted slot does without a move: the exactly-once argument of package dispatch
// holds with "slot" read as "run instant", and a run's tick is still name@slot.

// moveWindow is the first span a mover lists runs over; it grows fourfold up to UpcomingHorizon while no run
// is found.
const moveWindow = 24 * time.Hour

// mover is the schedule.Move of an Exclusion under a move policy, over a schedule's own slots (next). It lists
// runs a window at a time and keeps the last window, so that stepping through the runs one at a time costs one
// window's resolution per window, not per run. It is safe for concurrent use.
type mover struct {
	e    Exclusion
	next func(after time.Time) time.Time

	mu          sync.Mutex
	from, until time.Time // the runs of (from, until] are runs; zero until: nothing kept
	runs        []Run
}

// move is the schedule.Move: the first run whose instant is after `after`.
func (m *mover) move(after time.Time) (at, slot time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	covered := after // no run in (after, covered]
	if !m.until.IsZero() && !after.Before(m.from) && after.Before(m.until) {
		if r, ok := firstAfter(m.runs, after); ok {
			return r.At, r.Slot
		}
		covered = m.until
	}
	for span := moveWindow; covered.Sub(after) < UpcomingHorizon; span *= 4 {
		hi := covered.Add(span)
		runs, err := m.e.Runs(m.next, covered, hi)
		if err != nil {
			// A slot the calendars leave no business day for (ErrNoBusinessDay): the schedule has no next run
			// until they change (schedule.Schedule.SkipExhausted).
			m.until = time.Time{}
			return time.Time{}, time.Time{}
		}
		m.from, m.until, m.runs = after, hi, runs
		if len(runs) > 0 {
			return runs[0].At, runs[0].Slot
		}
		covered = hi
	}
	return time.Time{}, time.Time{}
}

// firstAfter returns the first of runs (in order of At) whose instant is after t.
func firstAfter(runs []Run, t time.Time) (Run, bool) {
	i := sort.Search(len(runs), func(i int) bool { return runs[i].At.After(t) })
	if i == len(runs) {
		return Run{}, false
	}
	return runs[i], true
}

// moving returns s (its own slots) as the sequence of its runs under e's move policy.
func (e Exclusion) moving(s *schedule.Schedule) *schedule.Schedule {
	m := &mover{e: e, next: s.Next}
	return s.Moving(m.move)
}
