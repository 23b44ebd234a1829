package dispatch

import (
	"fmt"
	"time"

	"github.com/tickgroup/tickgroup/internal/chain"
)

// Gates. A schedule with Requires (schedule.Spec.Requires, RequiresWithin) runs a slot only if the latest slot of
// the required schedule due within the window before it (at or before it) has ended with success when the slot
// is due. The leader decides: a gated schedule is emitted at its slots' instants, not a lead ahead
// (planner.leadOf), and each slot is decided as it is emitted, from the required schedule's outcomes the term
// follows (package chain, as for chains). A slot the gate holds back is still emitted, as a tick that says why
// (tick.Tick.Gate, major version 3): its worker records it skipped_gate with that reason and does not run it, so
// the slot has its outcome like any other, and a worker of a release before gates dead-letters it rather than
// run it.
//
// The decision needs every outcome up to the slot: until the follower has read the results partitions to the
// end they had when it started, a gated slot waits (parked, then caught up by its catch-up policy). A slot of
// the required schedule that ends within the follower's read delay (milliseconds) of the gated slot's instant
// may be decided as not ended. The decision is the leader's at emission: a new leader after a failover decides
// only the slots not emitted yet, from the same outcomes.

// gateOf is a gated schedule's gate.
type gateOf struct {
	schedule string
	within   time.Duration
}

// required reports whether a gate of the term requires schedule name.
func (c *chains) required(name string) bool {
	for _, g := range c.gates {
		if g.schedule == name {
			return true
		}
	}
	return false
}

// pruneHist drops the ended slots older than every window that could still ask for them: those of the gated
// schedules' next slots (after their bases, which catch-up after an outage may leave far behind now).
func (c *chains) pruneHist(now time.Time, base func(string) time.Time) {
	keep := now
	for name, g := range c.gates {
		if b := base(name).Add(-g.within - time.Hour); b.Before(keep) {
			keep = b
		}
	}
	for name, h := range c.hist {
		i := 0
		for i < len(h) && h[i].Slot.Before(keep) {
			i++
		}
		c.hist[name] = h[i:]
	}
}

// gateEmissions decides the gates of the gated schedules among ems: each slot's reason not to run (emission.gates,
// "" where it runs). A gated emission whose decision cannot be made yet (no follower, or one still reading the
// outcomes written before it started) is parked and left out; the follower's catching up arms it again.
func (t *leaderTerm) gateEmissions(ems []emission) []emission {
	c := t.ch
	if c == nil || len(c.gates) == 0 {
		return ems
	}
	t.takeEnded()
	out := ems[:0]
	for i := range ems {
		em := &ems[i]
		g, gated := c.gates[em.name()]
		if !gated {
			out = append(out, *em)
			continue
		}
		if c.f == nil || !c.caught || !c.followed[g.schedule] {
			if c.parked == nil {
				c.parked = map[*item]uint32{}
			}
			c.parked[em.it] = t.pl.park(em)
			continue
		}
		em.gates = make([]string, len(em.slots))
		for j, slot := range em.slots {
			em.gates[j] = t.gateReason(g, slot)
		}
		out = append(out, *em)
	}
	return out
}

// gateReason decides gate g for slot: "" when it runs, else why not.
func (t *leaderTerm) gateReason(g gateOf, slot time.Time) string {
	c := t.ch
	from := slot.Add(-g.within)
	var latest time.Time // the required schedule's latest slot due in (from, slot], by its definition
	if e, ok := t.d.view.Get(g.schedule); ok {
		for s := e.Schedule.Next(from); !s.IsZero() && !s.After(slot); s = e.Schedule.Next(s) {
			latest = s
		}
	}
	var ended *chain.Ended // the latest of its slots in (from, slot] that ended
	h := c.hist[g.schedule]
	for k := len(h) - 1; k >= 0; k-- {
		if h[k].Slot.After(from) && !h[k].Slot.After(slot) {
			ended = &h[k]
			break
		}
	}
	switch {
	case ended == nil && latest.IsZero():
		return fmt.Sprintf("requires %s: no slot of it within %s before %s", g.schedule, g.within, slot.UTC().Format(time.RFC3339))
	case ended == nil || ended.Slot.Before(latest):
		return fmt.Sprintf("requires %s: its slot %s had not ended", g.schedule, latest.UTC().Format(time.RFC3339))
	case ended.Outcome != chain.Success:
		return fmt.Sprintf("requires %s: its slot %s ended with %s", g.schedule, ended.Slot.UTC().Format(time.RFC3339), ended.Outcome)
	}
	return ""
}
