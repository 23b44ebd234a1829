package dispatch

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// planner is a term's view of what to emit when: the schedules, each one's base (slots at or before it are
// done: emitted, or passed over by the catch-up policy) and the timer heap. It does no I/O, so the emission loop
// can be measured and tested without a broker.
//
// A slot is emitted lead before it is due (Schedule.Due: slot plus jitter), so the ticks of the next lead are
// always committed and a worker starts each one on its instant, whatever happens to the leader meanwhile.
//
// Slots are emitted in increasing order per schedule name, whatever happens to the schedule: a change (or a
// resume) applies from the first slot after the ones already emitted, never to them, and a deleted schedule
// keeps its base as a grave until its emitted slots have passed, so that a schedule created again under the
// same name cannot emit one of them a second time. A slot is therefore emitted at most once, under one version.
type planner struct {
	lead    time.Duration
	entries map[string]store.Entry
	base    map[string]time.Time
	gens    map[string]uint64
	graves  map[string]time.Time // deleted schedules whose emitted slots are not all past: name -> base
	heap    dueHeap
}

// emission is what one schedule emits in one transaction.
type emission struct {
	name   string
	entry  store.Entry
	slots  []time.Time
	missed int64
}

// newPlanner starts from the schedules and the stored state. A schedule's base is its last emitted slot, or the
// time it was last changed if that is later: changing (or resuming) a schedule never catches up slots from
// before the change.
//
// lead is how long before its due instant a slot is emitted.
func newPlanner(entries map[string]store.Entry, state map[string]State, lead time.Duration) *planner {
	p := &planner{
		lead:    lead,
		entries: make(map[string]store.Entry, len(entries)),
		base:    make(map[string]time.Time, len(entries)),
		gens:    make(map[string]uint64, len(entries)),
		graves:  map[string]time.Time{},
		heap:    make(dueHeap, 0, len(entries)),
	}
	for name, e := range entries {
		p.set(name, e, state[name].LastSlot)
	}
	return p
}

// set (re)arms schedule name with definition e; last is the last emitted slot known for it.
func (p *planner) set(name string, e store.Entry, last time.Time) {
	p.gens[name]++
	p.entries[name] = e
	base := last
	if b, ok := p.base[name]; ok && b.After(base) {
		base = b
	}
	if g, ok := p.graves[name]; ok {
		delete(p.graves, name)
		if g.After(base) {
			base = g
		}
	}
	if e.UpdatedAt.After(base) {
		base = e.UpdatedAt
	}
	p.base[name] = base
	p.arm(name)
}

// remove forgets a deleted schedule. It reports whether slots of it were emitted that are not due yet at now:
// then its base stays as a grave until they are (see buried), and the caller keeps its state that long.
func (p *planner) remove(name string, now time.Time) (ahead bool) {
	p.gens[name]++
	base, ok := p.base[name]
	delete(p.entries, name)
	delete(p.base, name)
	if ok && base.After(now) {
		p.graves[name] = base
		return true
	}
	return false
}

// grave keeps the base of a schedule that is gone (its state outlived it) until its emitted slots have passed.
func (p *planner) grave(name string, base time.Time) { p.graves[name] = base }

// buried returns (and forgets) the graves whose emitted slots have all passed by now: their state can go.
func (p *planner) buried(now time.Time) []string {
	var out []string
	for name, base := range p.graves {
		if !base.After(now) {
			out = append(out, name)
			delete(p.graves, name)
		}
	}
	return out
}

// nextGrave is when the earliest grave can be buried.
func (p *planner) nextGrave() (time.Time, bool) {
	var first time.Time
	for _, base := range p.graves {
		if first.IsZero() || base.Before(first) {
			first = base
		}
	}
	return first, !first.IsZero()
}

// ahead reports whether slots of name were emitted that are not due at now.
func (p *planner) ahead(name string, now time.Time) bool {
	base, ok := p.base[name]
	return ok && base.After(now)
}

func (p *planner) arm(name string) {
	e := p.entries[name]
	if e.Spec().Paused {
		return
	}
	next := e.Schedule.Next(p.base[name])
	if next.IsZero() {
		return // past its end
	}
	p.heap.push(due{at: e.Schedule.Due(next).Add(-p.lead), name: name, gen: p.gens[name]})
}

// nextWake is when the earliest schedule is due.
func (p *planner) nextWake() (time.Time, bool) {
	for {
		d, ok := p.heap.peek()
		if !ok {
			return time.Time{}, false
		}
		if d.gen != p.gens[d.name] {
			p.heap.pop() // superseded by a change
			continue
		}
		return d.at, true
	}
}

// collect takes the schedules due at now+lead (at most max of them) and plans their slots: the late ones after
// the catch-up policy, and every one due by now+lead. Their bases move past the planned slots and they are
// re-armed at once: a failed transaction ends the term, and the next term starts again from the committed state.
func (p *planner) collect(now time.Time, max int) []emission {
	var out []emission
	for len(out) < max {
		d, ok := p.heap.peek()
		if !ok || d.at.After(now) {
			break
		}
		p.heap.pop()
		if d.gen != p.gens[d.name] {
			continue
		}
		e := p.entries[d.name]
		plan := e.Schedule.PlanAhead(p.base[d.name], now, now.Add(p.lead))
		if n := len(plan.Emit); n > 0 {
			p.base[d.name] = plan.Emit[n-1]
		}
		if !plan.Next.IsZero() {
			// Everything before Next was considered: emitted or passed over by the catch-up policy.
			p.base[d.name] = plan.Next.Add(-time.Nanosecond)
			p.heap.push(due{at: e.Schedule.Due(plan.Next).Add(-p.lead), name: d.name, gen: d.gen})
		}
		if len(plan.Emit) > 0 || plan.Missed > 0 {
			out = append(out, emission{name: d.name, entry: e, slots: plan.Emit, missed: plan.Missed})
		}
	}
	return out
}

// term identifies the producer that writes a transaction.
type term struct {
	producerID int64
	epoch      int16
	part       int32 // the ticker-topic partition led: where the state records go
}

// appendRecords appends the tick records and the state record of ems, for a work topic of partitions
// partitions.
func appendRecords(recs []*kgo.Record, ems []emission, names recordTopics, partitions int, t term, now time.Time) []*kgo.Record {
	var ticks []tick.Tick
	for _, em := range ems {
		if len(em.slots) == 0 {
			continue
		}
		spec := em.entry.Spec()
		src := tick.Source{
			Schedule:    em.name,
			Shards:      spec.Shards,
			Payload:     spec.Payload,
			Version:     em.entry.Version,
			Deadline:    time.Duration(spec.Deadline),
			LeaderEpoch: int64(t.epoch),
			Overlap:     spec.Overlap,
		}
		for _, slot := range em.slots {
			ticks = src.AppendSlot(ticks[:0], slot, em.entry.Schedule.Due(slot), now)
			for _, tk := range ticks {
				v, _ := tick.Encode(tk) // a Tick of plain fields always encodes
				recs = append(recs, &kgo.Record{
					Topic:     names.work,
					Partition: tk.Partition(partitions),
					Key:       []byte(tk.ID),
					Value:     v,
				})
			}
		}
		st := State{
			LastSlot:        em.slots[len(em.slots)-1],
			ScheduleVersion: em.entry.Version,
			ProducerID:      t.producerID,
			LeaderEpoch:     int64(t.epoch),
			EmittedAt:       now,
		}
		recs = append(recs, &kgo.Record{Topic: names.ticker, Partition: t.part, Key: []byte(em.name), Value: EncodeState(st)})
	}
	return recs
}

type recordTopics struct{ work, ticker string }
