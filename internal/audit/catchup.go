package audit

import (
	"sort"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// emissionIndex is what the work topic says about leader terms: every scheduled emission in time order, the
// first emission of each term (producer epoch), and per schedule its emitted slots. It answers whether a slot
// that was never emitted was passed over by the catch-up policy.
type emissionIndex struct {
	all   []termEmission
	first map[int64]time.Time
	slots map[string][]slotEmission
}

type termEmission struct {
	at    time.Time
	epoch int64
}

// slotEmission is the earliest emission of one slot (any shard).
type slotEmission struct {
	slot time.Time
	termEmission
}

func newEmissionIndex(l *Log) *emissionIndex {
	x := &emissionIndex{first: map[int64]time.Time{}, slots: map[string][]slotEmission{}}
	earliest := map[string]map[int64]termEmission{} // schedule -> slot (Unix ns) -> earliest emission
	for _, t := range l.Ticks {
		if t.Trigger || t.Backfill || len(t.Emissions) == 0 {
			continue // triggers are written by the CLI, not by a leader term
		}
		if earliest[t.Schedule] == nil {
			earliest[t.Schedule] = map[int64]termEmission{}
		}
		for _, e := range t.Emissions {
			te := termEmission{at: e.EmittedAt, epoch: e.LeaderEpoch}
			x.all = append(x.all, te)
			if f, ok := x.first[te.epoch]; !ok || te.at.Before(f) {
				x.first[te.epoch] = te.at
			}
			k := t.Slot.UnixNano()
			if cur, ok := earliest[t.Schedule][k]; !ok || te.at.Before(cur.at) {
				earliest[t.Schedule][k] = te
			}
		}
	}
	// The other schedules' ticks a scoped read did not keep (ReadSchedule): a term's first and last emission
	// answer "was a term emitting at or after due, before the next one began" as all of them would, for terms
	// that follow one another.
	for epoch, s := range l.terms {
		x.all = append(x.all, termEmission{s.first, epoch}, termEmission{s.last, epoch})
		if f, ok := x.first[epoch]; !ok || s.first.Before(f) {
			x.first[epoch] = s.first
		}
	}
	sort.Slice(x.all, func(i, j int) bool { return x.all[i].at.Before(x.all[j].at) })
	for name, m := range earliest {
		s := make([]slotEmission, 0, len(m))
		for k, te := range m {
			s = append(s, slotEmission{slot: time.Unix(0, k).UTC(), termEmission: te})
		}
		sort.Slice(s, func(i, j int) bool { return s[i].slot.Before(s[j].slot) })
		x.slots[name] = s
	}
	return x
}

// passedOver reports whether slot e (due at due), which no tick of any shard was emitted for, was passed over
// legitimately by schedule name's catch-up policy: no leader term was running when it fell due, and the term that
// came next planned it among its missed slots. In the log:
//
//  1. the first emission of any schedule at or after due is the first emission of its term (so no term was
//     emitting between the slot's due time and that term's start);
//  2. the schedule's next emitted slot after e belongs to that term, and the previous one does not;
//  3. latest and all: that next slot was emitted in the term's first batch (every schedule due at a term's
//     start is planned in its first batch); all: e is older than the catchup_max newest slots due then.
//
// Under skip, 3 does not apply: the term emits nothing that is more than 2 s late and its next slot later.
func (x *emissionIndex) passedOver(name string, e expectation, due time.Time) bool {
	i := sort.Search(len(x.all), func(i int) bool { return !x.all[i].at.Before(due) })
	if i == len(x.all) {
		return false // nothing emitted since: the fleet is down (or the slot was dropped), not a catch-up
	}
	start := x.all[i]
	if !x.first[start.epoch].Equal(start.at) {
		return false // a term was running when the slot fell due, and did not emit it
	}
	slots := x.slots[name]
	j := sort.Search(len(slots), func(j int) bool { return slots[j].slot.After(e.slot) })
	if j == len(slots) || slots[j].epoch != start.epoch {
		return false
	}
	if j > 0 && (slots[j-1].slot.Equal(e.slot) || slots[j-1].epoch == start.epoch) {
		return false // another shard of the slot was emitted, or the new term emitted an earlier slot
	}
	// The policy as the leader reads it (its default included: a schedule with no catchup field is all).
	switch e.sched.Catchup() {
	case schedule.CatchupSkip:
		return true
	case schedule.CatchupAll:
		if !slots[j].at.Equal(start.at) {
			return false
		}
		limit := e.sched.CatchupMax()
		newer := 0 // slots after e that were due at the term's start
		for s := e.sched.Next(e.at); !s.IsZero() && !e.sched.Due(s).After(start.at) && newer < limit; s = e.sched.Next(s) {
			newer++
		}
		return newer >= limit
	default: // latest
		return slots[j].at.Equal(start.at)
	}
}
