package dispatch

import (
	"iter"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/schedule"
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
//
// It holds one item per schedule, in one map, and the heap refers to items by pointer: a million schedules cost
// one map slot, one item and one heap entry each, far less than four maps keyed by name would (docs/benchmarks.md,
// "Figures behind code comments").
type planner struct {
	lead   time.Duration
	items  map[string]*item
	graves map[string]time.Time // deleted schedules whose emitted slots are not all past: name -> base
	heap   dueQueue
	// bulk is set while newPlannerFrom fills the heap: entries are appended and ordered once at the end.
	bulk bool
	// metered lists the schedules with their own metrics that the term started with (set in bulk), so that
	// the term start does not visit every item for the few that have them.
	metered []string
	// When the planner was built from a state (a takeover), what the term start's checks need of it, found by
	// the build's own lookups (see withoutState and stateToCheck): the schedules that had no state, the paused
	// ones that had one, and how many had one. Dropped by startChecked.
	fromState   bool
	stateless   []string
	pausedState []string
	stated      int
	// touched only keeps what collect's touch reads.
	touched uint32
	// The calendars (calendars.go): how the planner finds one by name, the schedules that exclude some (few:
	// a map of their own, not a field of every item), and what the term reports of them.
	calendars func(name string) (*calendar.Calendar, bool)
	excluding map[string]*exclusion
	calNotes  calNotes
}

// item is one schedule of the planner.
type item struct {
	entry store.Entry
	// base: slots at or before it are done (emitted, or passed over by the catch-up policy).
	base time.Time
	// gen counts the item's changes; a heap entry of an older generation is stale. An item that is removed
	// gets one more, so every heap entry of it is stale.
	gen uint32
	// hash is tick.NameHash of the name once a record of the schedule was made (0 until then: a name whose
	// hash is 0 is hashed every time), kept for the partitions of its next ticks.
	hash uint32
}

// emission is what one schedule emits in one transaction. It carries what the transaction's records and its
// metrics take from the definition, read once by collect: at a million schedules each definition is a miss of
// the processor's caches, and the records, then the metrics, came back to it after thousands of others.
type emission struct {
	src     tick.Source // name, shards, payload, version, deadline, overlap; LeaderEpoch is the record writer's
	entry   store.Entry
	it      *item // for its name's hash (see appendRecords)
	slots   []time.Time
	missed  int64
	from    time.Time // the schedule's base before collect planned this emission (see park)
	jitter  bool      // the schedule has a jitter: a slot's due instant may not be the slot (see due)
	moves   bool      // the schedule's calendars move slots: slots are run instants, not identities (see slot)
	at      time.Time // a chain's emission: the instant its ticks run at (emitted at once), for every slot
	gates   []string  // a gated schedule's emission: per slot, why its gate holds it back ("": it runs)
	metrics bool      // the schedule opts in to metrics of its own
	pool    string
}

// newEmission is the emission of slots, and missed passed over, by the schedule of it.
func newEmission(it *item, slots []time.Time, missed int64) emission {
	e := it.entry
	s := e.Schedule
	startBy, finishBy := s.Watch()
	return emission{
		src: tick.Source{
			Schedule:    s.Name(),
			Shards:      s.Shards(),
			Payload:     s.Payload(),
			Version:     e.Version,
			Deadline:    s.Deadline(),
			Overlap:     s.Overlap(),
			Metrics:     s.Metrics(),
			Timeout:     s.Timeout(),
			MaxAttempts: s.MaxAttempts(),
			StartBy:     startBy,
			FinishBy:    finishBy,
			Limit:       s.Limit(),
			Priority:    s.Priority(),
		},
		entry:   e,
		it:      it,
		slots:   slots,
		missed:  missed,
		jitter:  s.Jittered(),
		moves:   s.Moves(),
		metrics: s.Metrics(),
		pool:    s.Pool(),
	}
}

// name is the schedule's name.
func (em *emission) name() string { return em.src.Schedule }

// due is when slot is due (Schedule.Due), without reading the definition again when it has no jitter.
func (em *emission) due(slot time.Time) time.Time {
	if !em.jitter {
		return slot
	}
	return em.entry.Schedule.Due(slot)
}

// slot is the identity of the run at instant at (Schedule.SlotOf): at itself unless the schedule's calendars move
// slots, whose runs' instants the emission's slots are then (package calendar, move.go).
func (em *emission) slot(at time.Time) time.Time {
	if !em.moves {
		return at
	}
	return em.entry.Schedule.SlotOf(at)
}

// stored is what a term keeps of a schedule's state (package leaderstate).
type stored = leaderstate.Stored

// newPlanner starts from the schedules and the stored state. A schedule's base is its last emitted slot, or the
// time it was last changed if that is later: changing (or resuming) a schedule never catches up slots from
// before the change.
//
// lead is how long before its due instant a slot is emitted.
func newPlanner(entries map[string]store.Entry, state map[string]stored, lead time.Duration) *planner {
	return newPlannerFrom(len(entries), maps.All(entries), state, lead, nil)
}

// newPlannerFrom is newPlanner from a sequence of n schedules (a View's, read under its lock: no copy of them
// is made first). The sequence lists each name once, as a map's does. calendars finds the calendars the
// schedules exclude (nil: none is known, and a schedule that excludes one waits; see calendars.go).
//
// A second goroutine fills the map of names while this one fills the heap: at a million schedules each insert
// into the map costs a cache miss or two (the name's bytes, the table's group), and a cold start waits for both.
func newPlannerFrom(n int, entries iter.Seq2[string, store.Entry], state map[string]stored, lead time.Duration,
	calendars func(string) (*calendar.Calendar, bool)) *planner {
	p := &planner{
		lead:      lead,
		items:     make(map[string]*item, n), // sized once: growing it rehashes every name again and again, for the same memory
		graves:    map[string]time.Time{},
		heap:      dueQueue{cur: make(dueHeap, 0, n), next: make(dueHeap, 0, n)}, // next: the first slot re-arms every schedule
		bulk:      true,
		calendars: calendars,
		excluding: map[string]*exclusion{},
	}
	if p.calendars == nil {
		p.calendars = func(string) (*calendar.Calendar, bool) { return nil, false }
	}
	const chunkLen = 4096
	chunks := make(chan []namedItem, 4)
	filled := fillItems(p.items, chunks)
	slab := itemSlab{left: n}
	chunk := make([]namedItem, 0, chunkLen)
	// The schedules are taken in groups: their definitions (and states) are first read one after the other, then
	// planned. A million definitions do not fit the caches, and reading each just before planning it waited for
	// one memory load at a time; read in a row, the processor has a group's loads in flight together.
	type pending struct {
		name    string
		e       store.Entry
		metered bool
		last    time.Time
		stated  bool
	}
	var group [32]pending
	grouped := 0
	if p.fromState = len(state) > 0; p.fromState {
		p.stateless = make([]string, 0, max(n-len(state), 0)) // a takeover's: few, as most have a state
	}
	plan := func() {
		for i := range group[:grouped] {
			group[i].metered = group[i].e.Schedule.Metrics() // the first read of each definition
			if p.fromState {
				st, ok := state[group[i].name] // and its state, as a takeover has one for most
				group[i].last, group[i].stated = st.LastSlot, ok
			}
		}
		for _, x := range group[:grouped] {
			it := slab.take()
			if x.metered {
				p.metered = append(p.metered, x.name)
			}
			switch {
			case !p.fromState:
			case !x.stated:
				p.stateless = append(p.stateless, x.name)
			default:
				p.stated++
				if x.e.Schedule.Pausing() { // a pause with an end too: its ticks ahead are cancelled (settleState)
					p.pausedState = append(p.pausedState, x.name)
				}
			}
			p.update(it, x.name, x.e, x.last, false)
			if chunk = append(chunk, namedItem{x.name, it}); len(chunk) == chunkLen {
				chunks <- chunk
				chunk = make([]namedItem, 0, chunkLen)
			}
		}
		grouped = 0
	}
	for name, e := range entries {
		group[grouped] = pending{name: name, e: e}
		if grouped++; grouped == len(group) {
			plan()
		}
	}
	plan()
	chunks <- chunk
	close(chunks)
	p.heap.cur.init()
	<-filled
	p.bulk = false
	return p
}

// namedItem is a schedule's item with its name, as newPlannerFrom hands it to fillItems.
type namedItem struct {
	name string
	it   *item
}

// fillItems starts the goroutine that puts in items every item of chunks, until chunks is closed; the channel
// it returns is closed then.
func fillItems(items map[string]*item, chunks <-chan []namedItem) <-chan struct{} {
	filled := make(chan struct{})
	go func() {
		defer close(filled)
		for c := range chunks {
			for _, x := range c {
				items[x.name] = x.it
			}
		}
	}()
	return filled
}

// itemSlab hands out the items of left schedules from slabs of itemSlabLen rather than one allocation of them
// all: one block for every schedule is fresh memory, each of its pages faulted in on first write during a cold
// start, while blocks this size can take the pages the schedules' load has just freed. More than left schedules
// take their own.
type itemSlab struct {
	slab []item
	left int
}

const itemSlabLen = 1024

// take returns the next item.
func (s *itemSlab) take() *item {
	if len(s.slab) == 0 && s.left > 0 {
		s.slab = make([]item, min(itemSlabLen, s.left))
		s.left -= len(s.slab)
	}
	if len(s.slab) == 0 {
		return &item{}
	}
	it := &s.slab[0]
	s.slab = s.slab[1:]
	return it
}

// withoutState yields the schedules that have no entry in state: the state the planner was built from, or that
// state with entries added since. Built from a state, the planner knows them already; a takeover's million
// schedules are then not looked up a second time.
func (p *planner) withoutState(state map[string]stored) iter.Seq2[string, store.Entry] {
	return func(yield func(string, store.Entry) bool) {
		if !p.fromState {
			for name, it := range p.items {
				if _, ok := state[name]; !ok && !yield(name, it.entry) {
					return
				}
			}
			return
		}
		for _, name := range p.stateless {
			it, ok := p.items[name]
			if _, has := state[name]; ok && !has && !yield(name, it.entry) {
				return
			}
		}
	}
}

// stateToCheck yields the entries of state that a term start's last check needs (the Lead loop over them): the
// states of schedules the planner does not hold, and those of paused schedules. state is the state the planner
// was built from, with nothing deleted since and added entries only of running schedules it holds (checkState's
// recoveries, which skip paused ones): added counts them. When every entry of state then belongs to a schedule
// of the planner, that is the paused schedules' alone; otherwise (or when the planner was built without a
// state) every entry is yielded.
func (p *planner) stateToCheck(state map[string]stored, added int) iter.Seq2[string, stored] {
	return func(yield func(string, stored) bool) {
		if p.fromState && p.stated+added == len(state) {
			for _, name := range p.pausedState {
				if st, ok := state[name]; ok && !yield(name, st) {
					return
				}
			}
			return
		}
		for name, st := range state {
			if !yield(name, st) {
				return
			}
		}
	}
}

// startChecked drops what the term start's checks needed (withoutState, stateToCheck).
func (p *planner) startChecked() {
	p.fromState, p.stateless, p.pausedState, p.stated = false, nil, nil, 0
}

// entry returns the definition of schedule name.
func (p *planner) entry(name string) (store.Entry, bool) {
	it, ok := p.items[name]
	if !ok {
		return store.Entry{}, false
	}
	return it.entry, true
}

// leadOf is how far ahead of its slots' instants schedule e is emitted: the lead, or none for a gated schedule
// (schedule.Spec.Requires), whose gate is decided on the slot's instant (gates.go).
func (p *planner) leadOf(e store.Entry) time.Duration {
	if req, _ := e.Schedule.Requires(); req != "" {
		return 0
	}
	return p.lead
}

// base returns the base of schedule name (zero when it is unknown).
func (p *planner) base(name string) time.Time {
	if it, ok := p.items[name]; ok {
		return it.base
	}
	return time.Time{}
}

// optedIn lists the schedules whose definition opts in to per-schedule metrics: the only ones with series of
// their own (a change or a deletion drops a schedule's series as it happens). A term's end drops those alone,
// rather than asking the registry to delete two series of each of a million schedules, which a revoked term's
// handoff would wait for (docs/benchmarks.md, "Figures behind code comments").
func (p *planner) optedIn() iter.Seq[string] {
	return func(yield func(string) bool) {
		for name, it := range p.items {
			if it.entry.Schedule.Metrics() && !yield(name) {
				return
			}
		}
	}
}

// len is the number of schedules.
func (p *planner) len() int { return len(p.items) }

// set (re)arms schedule name with definition e; last is the last emitted slot known for it.
func (p *planner) set(name string, e store.Entry, last time.Time) {
	it, known := p.items[name]
	if !known {
		it = &item{}
		p.items[name] = it
	}
	p.update(it, name, e, last, known)
}

// update (re)arms it, the item of schedule name, with definition e; known says whether it has a base already.
func (p *planner) update(it *item, name string, e store.Entry, last time.Time, known bool) {
	it.gen++
	it.entry = e
	base := last
	if known && it.base.After(base) {
		base = it.base
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
	it.base = base
	if p.exclude(name, it) {
		p.arm(it)
	}
}

// remove forgets a deleted schedule. It reports whether slots of it were emitted that are not due yet at now:
// then its base stays as a grave until they are (see buried), and the caller keeps its state that long.
func (p *planner) remove(name string, now time.Time) (ahead bool) {
	it, ok := p.items[name]
	if !ok {
		return false
	}
	it.gen++
	delete(p.items, name)
	p.unexclude(name)
	if it.base.After(now) {
		p.graves[name] = it.base
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

// park takes back what collect planned for em and leaves its schedule unarmed: nothing of it is emitted until
// unpark. Its base returns to where it was, so the slots planned (and those that fall due meanwhile) are planned
// again then, after the schedule's catch-up policy, as after a leader's outage. It returns the generation to
// hand to unpark.
func (p *planner) park(em *emission) uint32 {
	it := em.it
	it.base = em.from
	it.gen++ // the heap entry collect pushed is stale
	return it.gen
}

// unpark arms again the schedule parked with generation gen, unless it changed since (a change arms it).
func (p *planner) unpark(it *item, gen uint32) {
	if it.gen == gen {
		p.arm(it)
	}
}

// ahead reports whether slots of name were emitted that are not due at now.
func (p *planner) ahead(name string, now time.Time) bool {
	it, ok := p.items[name]
	return ok && it.base.After(now)
}

func (p *planner) arm(it *item) {
	e := it.entry
	if e.Schedule.Paused() {
		return
	}
	next := e.Schedule.Next(it.base)
	if next.IsZero() {
		p.noteExhausted(it) // past its end, or its calendars exclude every slot for a long time
		return
	}
	d := due{at: e.Schedule.Due(next).Add(-p.leadOf(e)).UnixNano(), it: it, gen: it.gen}
	if p.bulk {
		p.heap.cur = append(p.heap.cur, d)
		return
	}
	p.heap.push(d)
}

// nextWake is when the earliest schedule is due.
func (p *planner) nextWake() (time.Time, bool) {
	for {
		d, ok := p.heap.peek()
		if !ok {
			return time.Time{}, false
		}
		if d.gen != d.it.gen {
			p.heap.pop() // superseded by a change
			continue
		}
		return time.Unix(0, d.at), true
	}
}

// collect takes the schedules due at now+lead (at most max of them) and plans their slots: the late ones after
// the catch-up policy, and every one due by now+lead. Their bases move past the planned slots and they are
// re-armed at once: a failed transaction ends the term, and the next term starts again from the committed state.
//
// The emissions and their slots are written into b (whatever it held before is overwritten), whose records
// are then made from them (appendRecords): a slot of a million schedules is planned without an allocation each.
func (p *planner) collect(b *batch, now time.Time, max int) []emission {
	out, slots := b.ems[:0], b.slots[:0]
	defer func() { b.ems, b.slots = out, slots }()
	at := now.UnixNano()
	// The due entries are taken in groups, and each group's items, then their definitions, are read in a row
	// before any is planned (see touch): with a million schedules each of these is a miss of the caches, and
	// read one schedule at a time the loop waited for one memory load after another. An entry re-armed below
	// is pushed after its group was taken; if it is due already (MaxAhead slots were planned), a later group
	// takes it.
	var group [32]due
	for len(out) < max {
		n := 0
		for n < len(group) && n < max-len(out) {
			d, ok := p.heap.peek()
			if !ok || d.at > at {
				break
			}
			group[n] = p.heap.pop()
			n++
		}
		if n == 0 {
			break
		}
		p.touch(group[:n])
		for _, d := range group[:n] {
			it := d.it
			if d.gen != it.gen {
				continue
			}
			e := it.entry
			from := it.base
			// The slots of earlier emissions stay as they are: slots only grows (by reallocation, past its
			// capacity).
			var plan schedule.Plan
			lead := p.leadOf(e)
			slots, plan = e.Schedule.AppendPlanAhead(slots, it.base, now, now.Add(lead))
			if n := len(plan.Emit); n > 0 {
				it.base = plan.Emit[n-1]
			}
			switch {
			case !plan.Next.IsZero() && e.Schedule.Skipped():
				// Everything before Next was considered, but the slots between the last one planned and Next are
				// excluded ones: the base stops at now (at the last emitted slot, when later), so that a calendar
				// that stops excluding the slots not yet due before Next gets them emitted (calendars.go).
				c := plan.Next.Add(-time.Nanosecond)
				if now.Before(c) {
					c = now
				}
				if c.After(it.base) {
					it.base = c
				}
				p.heap.push(due{at: e.Schedule.Due(plan.Next).Add(-lead).UnixNano(), it: it, gen: d.gen})
			case !plan.Next.IsZero():
				// Everything before Next was considered: emitted or passed over by the catch-up policy.
				it.base = plan.Next.Add(-time.Nanosecond)
				p.heap.push(due{at: e.Schedule.Due(plan.Next).Add(-lead).UnixNano(), it: it, gen: d.gen})
			case e.Schedule.Skipped():
				p.noteExhausted(it)
			}
			if len(plan.Emit) > 0 || plan.Missed > 0 {
				em := newEmission(it, plan.Emit, plan.Missed)
				em.from = from
				out = append(out, em)
			}
		}
	}
	return out
}

// touch reads, for each entry of group, its item, then the item's definition, each a row of loads that do not
// wait for one another: the processor has a row's cache misses in flight together, and collect then finds
// them in the cache. What it reads is kept in p.touched, so that the compiler cannot drop the loads.
func (p *planner) touch(group []due) {
	// An item and a definition can each span two cache lines: each is read at both ends
	// (its first field, and its last word: the entry's generation and hash, the definition's rarely set fields).
	var sum uint32
	for _, d := range group {
		sum += d.it.gen
	}
	for _, d := range group {
		s := d.it.entry.Schedule
		sum += uint32(len(s.Name())) + uint32(s.Deadline())
	}
	p.touched += sum
}

// touchNames reads the first byte of each name and payload of ems in a row, as touch does for collect: the
// records copy them next, and at a million schedules each was a miss of the caches, waited for one at a time.
// It returns what it read, for the caller to keep (so that the compiler cannot drop the loads).
func touchNames(ems []emission) byte {
	var sum byte
	for i := range ems {
		if name := ems[i].src.Schedule; name != "" {
			sum += name[0]
		}
		if payload := ems[i].src.Payload; payload != "" {
			sum += payload[0]
		}
	}
	return sum
}

// term identifies the producer that writes a transaction.
type term struct {
	producerID int64
	epoch      int16
	part       int32 // the ticker-topic partition led: where the state records go
}

// batch holds one transaction: its emissions and their slots (collect), and its records (appendRecords). The
// records come from one slab, and their keys and values from one byte arena (a leader writes two records per
// schedule per slot, and these were six of their eleven allocations). A batch is reused once its transaction
// has ended: the term alternates two, one being committed while the next is prepared.
type batch struct {
	ems   []emission
	slots []time.Time
	recs  []*kgo.Record
	slab  []kgo.Record
	arena []byte
	// What writes the records, keeping the instants that they share formatted (tick.Stamp).
	ticks            tick.Writer
	lastSlot, emitAt tick.Stamp
	// touched only keeps what appendRecords' touchNames reads.
	touched byte
}

// appendRecords fills b with the tick records and the state record of ems, for a work topic of partitions
// partitions, and returns them. Whatever b held before is overwritten. now is the emission instant the ticks
// and states carry (emitted_at); stamp is the records' timestamp, when the batch is made: without one, the
// client reads the clock for every record.
func appendRecords(b *batch, ems []emission, names recordTopics, partitions int, t term, now, stamp time.Time) []*kgo.Record {
	b.reserve(ems)
	// The slab is not grown past n, and the arena only by reallocation: every record, key and value taken from
	// them stays as it was written until the batch is reused.
	recs, slab, arena := b.recs[:0], b.slab[:0], b.arena[:0]
	defer func() { b.recs, b.slab, b.arena = recs, slab, arena }()
	add := func(r kgo.Record) {
		slab = append(slab, r)
		recs = append(recs, &slab[len(slab)-1])
	}
	var touched byte
	for i := range ems {
		em := &ems[i]
		if i%32 == 0 {
			touched += touchNames(ems[i:min(i+32, len(ems))])
		}
		if len(em.slots) == 0 {
			continue
		}
		src := em.src
		src.LeaderEpoch = int64(t.epoch)
		work, parts := names.work, partitions
		if em.pool != "" {
			pt := names.pools[em.pool] // resolved before the schedule was planned (leaderTerm.ensurePools)
			work, parts = pt.work, pt.partitions
		}
		name, shards := src.Schedule, max(src.Shards, 1)
		hash := em.it.hash // of the name; 0 until the first key is written (the ID starts with the name)
		for i, at := range em.slots {
			due, slot := em.due(at), em.slot(at)
			if em.gates != nil {
				src.Gate = em.gates[i]
			}
			if !em.at.IsZero() {
				due, at = em.at, em.at // a chain's tick: named by the upstream slot, due at once
			}
			for shard := range shards {
				k := len(arena)
				arena = b.ticks.AppendID(arena, name, slot, shard, shards)
				key := arena[k:len(arena):len(arena)]
				v := len(arena)
				// A tick the Writer cannot write (a time json.Marshal refuses) gets an empty value, as the failed
				// AppendEncode of its Tick did before: the Writer refuses exactly what json.Marshal does.
				arena, _ = b.ticks.AppendTick(arena, src, key, slot, at, due, now, shard)
				if hash == 0 {
					hash = tick.NameHash(key[:len(name)])
					em.it.hash = hash
				}
				p := tick.PartitionOfHash(hash, shard, parts)
				if src.Limit != "" {
					p = tick.LimitPartition(src.Limit, parts) // every tick of a limit meets on one partition
				}
				add(kgo.Record{
					Topic:     work,
					Partition: p,
					Key:       key,
					Value:     arena[v:len(arena):len(arena)],
					Timestamp: stamp,
				})
			}
		}
		if !writeStateRecords {
			continue
		}
		st := leaderstate.State{
			LastSlot:        em.slots[len(em.slots)-1],
			ScheduleVersion: src.Version,
			ProducerID:      t.producerID,
			LeaderEpoch:     int64(t.epoch),
			EmittedAt:       now,
		}
		k := len(arena)
		arena = append(arena, name...)
		key := arena[k:len(arena):len(arena)]
		v := len(arena)
		arena = leaderstate.AppendState(arena, st, &b.lastSlot, &b.emitAt)
		add(kgo.Record{Topic: names.ticker, Partition: t.part, Key: key, Value: arena[v:len(arena):len(arena)], Timestamp: stamp})
	}
	b.touched += touched
	return recs
}

// reserve makes room in b's slab and arena for the records of ems (about their sizes), so that appendRecords
// does not grow the slab and grows the arena only by reallocation.
func (b *batch) reserve(ems []emission) {
	n, size := 0, 0
	for i := range ems {
		em := &ems[i]
		k := len(em.slots) * max(em.src.Shards, 1)
		n += k + 1
		size += k*(3*len(em.name())+240+len(em.src.Payload)) + len(em.name()) + 160 // about their sizes
	}
	if cap(b.slab) < n {
		b.slab = make([]kgo.Record, 0, n)
	}
	if cap(b.arena) < size {
		b.arena = make([]byte, 0, size)
	}
}

// recordTopics are where appendRecords writes: the default pool's work topic, the ticker topic, and the other
// pools' work topics with their partition counts.
type recordTopics struct {
	work, ticker string
	pools        map[string]poolTopic
}

// poolTopic is a pool's work topic and its partition count.
type poolTopic struct {
	work       string
	partitions int
}
