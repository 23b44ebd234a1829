package audit

import (
	"time"

	"github.com/tickgroup/tickgroup/internal/chain"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Chains. A chain (schedule.Spec.After) has no slots of its own: it is expected to run once for each slot of its
// upstream that ended as its When says, as the tick name@slot. The audit derives those from the upstream's
// ticks in the log: a slot ends once every shard's tick has an outcome (the first one in log order), and counts
// as package chain counts it. A slot at or before the chain's newest version took effect is not expected (the
// leader acts on the slots after the change); one within ChangeSlack after it is optional, as is every slot of
// a chain whose newest version is paused. The newest version's When judges every slot. The expected tick is due when the slot's last shard finished (its outcome's finished_at).

// chainVersion returns the upstream and When of def's newest version, if it is a chain.
func chainVersion(def *Definition) (up, when string, since time.Time) {
	if def == nil || len(def.Versions) == 0 {
		return "", "", time.Time{}
	}
	v := def.Versions[len(def.Versions)-1]
	if v.Schedule == nil {
		return "", "", time.Time{}
	}
	up, when = v.Schedule.After()
	since = v.At
	// Since the first of the versions in a row that follow the same upstream: a pause, a resume or a change of
	// When does not start the chain anew.
	for i := len(def.Versions) - 2; i >= 0 && up != ""; i-- {
		p := def.Versions[i].Schedule
		if p == nil {
			break
		}
		if pu, _ := p.After(); pu != up {
			break
		}
		since = def.Versions[i].At
	}
	return up, when, since
}

// expectChain derives the expected ticks of chain def (after up, on when) in [from, o.To].
func (sr *ScheduleReport) expectChain(l *Log, def *Definition, up, when string, since, from time.Time, o Options) map[string]expectation {
	type slotState struct {
		shards  int
		ended   int
		failure bool
		other   bool
		last    time.Time
	}
	slots := map[int64]*slotState{}
	for _, t := range l.Ticks {
		if t.Schedule != up || t.Trigger || t.Backfill || t.Slot.Before(from) || t.Slot.After(o.To) {
			continue
		}
		st := slots[t.Slot.Unix()]
		if st == nil {
			st = &slotState{shards: max(t.Shards, 1)}
			slots[t.Slot.Unix()] = st
		}
		for _, e := range t.Ledger {
			if e.Kind != ledger.KindOutcome {
				continue
			}
			st.ended++
			switch e.Status {
			case ledger.StatusOK:
			case ledger.StatusFailed, ledger.StatusDeadLettered:
				st.failure = true
			default:
				st.other = true
			}
			at := e.At
			if e.FinishedAt != nil {
				at = *e.FinishedAt // an outcome record says when it finished, not "at"
			}
			if at.After(st.last) {
				st.last = at
			}
			break // the first outcome counts
		}
	}
	sched := def.Versions[len(def.Versions)-1].Schedule
	shards := sched.Shards()
	out := map[string]expectation{}
	for unix, st := range slots {
		if st.ended < st.shards {
			continue // not ended (yet): nothing is expected of the chain
		}
		o2 := chain.Success
		switch {
		case st.failure:
			o2 = chain.Failure
		case st.other:
			o2 = chain.Other
		}
		slot := time.Unix(unix, 0).UTC()
		if !chain.Matches(when, o2) || !slot.After(since) {
			continue // the leader acts on the upstream's slots after the chain's change
		}
		// A paused chain emits nothing from its pause on: the slots before it may have run, so none is missing.
		x := expectation{slot: slot, at: st.last, sched: sched, optional: slot.Sub(since) <= o.ChangeSlack || sched.Paused(), due: st.last}
		for shard := range shards {
			x.shard = shard
			out[tick.ID(def.Name, slot, shard, shards)] = x
		}
	}
	return out
}
