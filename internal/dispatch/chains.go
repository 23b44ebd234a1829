package dispatch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/chain"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Chains. A schedule with After (schedule.Spec.After) has no slots of its own: it runs once for each slot of its
// upstream that ends as its When says, as the tick of that slot (name@slot), emitted by the leader that owns the
// chain as soon as it reads the slot's last outcome. The term follows the upstreams' outcomes on the results
// topics (package chain) and emits a chain's tick in a transaction with the chain's state, whose last slot is
// the upstream slot acted on: the state of every schedule, kept the same way.
//
// Exactly once. An upstream's slots end in slot order (package chain), and the follower reads them from before
// the chain's last slot, so a term acts on each ended slot after that last slot, in order, once: the tick and
// the state move together (a failed transaction ends the term, and the next one starts from the committed
// state); a new term, after a failover, reads the same outcomes and skips every slot up to the state it
// reads. A slot that ends while the chain's pool is not ready waits for it, in order.
//
// A chain's tick is due at once (its not_before the instant it is emitted); its deadline and start_by and
// finish_by count from then. A chain created or changed acts on the upstream slots that end after the change,
// from the first one not yet acted on.

// chains is what a term keeps of the chains it owns.
type chains struct {
	down map[string][]string  // upstream -> the owned chains that follow it
	base map[string]time.Time // chain -> the last upstream slot acted on (or its change time)
	sig  string               // what the follower reads (refreshChains restarts it when this changes)
	f    *chain.Follower
	stop func()
	held []chain.Ended // ended slots waiting for a chain's pool, in order
	// Gates (gates.go): the owned gated schedules, the ended slots of the schedules they require (in the
	// order they ended, within the widest window), and the gated schedules parked until the follower caught up.
	gates  map[string]gateOf
	hist   map[string][]chain.Ended
	parked map[*item]uint32
	// caught is the follower's CaughtUp as of the last takeEnded, read before its Take: every slot that ended
	// before the follower started is then in hist. followed are the upstreams the follower reads.
	caught   bool
	followed map[string]bool
	// dirty says a change touched a chain or an upstream: the next refreshChains rebuilds them (a scan of
	// every owned schedule, so it is done only then, and once at the term's start).
	dirty bool
}

// involves reports whether schedule name, whose definition was old (known), is a chain or an upstream.
func (c *chains) involves(name string, old store.Entry, known bool) bool {
	if c == nil {
		return false
	}
	if _, up := c.down[name]; up {
		return true
	}
	if c.required(name) {
		return true
	}
	return known && (isChain(old) || isGated(old))
}

// isGated reports whether e has a gate (schedule.Spec.Requires).
func isGated(e store.Entry) bool {
	req, _ := e.Schedule.Requires()
	return req != ""
}

// isChain reports whether e is a chain's definition (schedule.Spec.After).
func isChain(e store.Entry) bool {
	up, _ := e.Schedule.After()
	return up != ""
}

// notify is the follower's signal (nil, never ready, without a follower).
func (c *chains) notify() <-chan struct{} {
	if c == nil || c.f == nil {
		return nil
	}
	return c.f.Notify()
}

// refreshChains (re)builds the term's chains from the owned schedules, and starts (or restarts) the follower of
// their upstreams when what it must read changed. A chain's progress is kept across refreshes.
func (t *leaderTerm) refreshChains(ctx context.Context) {
	if t.ch == nil {
		t.ch = &chains{base: map[string]time.Time{}}
	}
	c := t.ch
	c.dirty = false
	c.down = map[string][]string{}
	c.gates = map[string]gateOf{}
	ups := map[string]chain.Upstream{}
	var from time.Time
	for name, it := range t.pl.items {
		up, _ := it.entry.Schedule.After()
		req, within := it.entry.Schedule.Requires()
		if up == "" && req == "" || it.entry.Schedule.Paused() {
			continue
		}
		base := t.pl.base(name) // the state read, or the change time when later
		if up != "" {
			c.down[up] = append(c.down[up], name)
			if b, ok := c.base[name]; ok && b.After(base) {
				base = b
			}
			c.base[name] = base
		} else {
			c.gates[name] = gateOf{schedule: req, within: within}
			base, up = base.Add(-within), req // the slots of req within the window before the next slot
		}
		if from.IsZero() || base.Before(from) {
			from = base
		}
		if _, done := ups[up]; done {
			continue
		}
		ue, ok := t.d.view.Get(up)
		if !ok {
			continue // written in the same breath as the chain, or deleted by a race: its next change refreshes
		}
		t.ensurePools(ctx, ue.Schedule.Pool()) // a pool this term leads nothing in yet
		pt, ok := t.pools[ue.Schedule.Pool()]
		if !ok {
			continue // its pool is not ready: the pool's return refreshes the chains
		}
		shards := ue.Schedule.Shards()
		parts := tick.SchedulePartitions(up, min(shards, pt.partitions), []string{ue.Schedule.Limit()}, pt.partitions)
		ups[up] = chain.Upstream{Schedule: up, Shards: shards, Topic: t.d.cfg.Names.Pool(ue.Schedule.Pool()).Results, Partitions: parts}
	}
	for _, names := range c.down {
		slices.Sort(names)
	}
	watched := map[string]bool{}
	for up := range c.down {
		watched[up] = true
	}
	for _, g := range c.gates {
		watched[g.schedule] = true
	}
	t.changes.watch(watched)
	var foreign []string
	for name := range watched {
		if !t.owned(name) {
			foreign = append(foreign, name)
		}
	}
	t.d.watchUpstreams(t.k, foreign)
	c.followed = map[string]bool{}
	for up := range ups {
		c.followed[up] = true
	}
	var sig strings.Builder
	keys := make([]string, 0, len(ups))
	for k := range ups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		u := ups[k]
		fmt.Fprintf(&sig, "%s/%d/%s/%v;", u.Schedule, u.Shards, u.Topic, u.Partitions)
	}
	if sig.String() == c.sig && (c.f != nil || len(ups) == 0) {
		return
	}
	if c.stop != nil {
		c.stop()
		c.f, c.stop = nil, nil
	}
	c.held, c.caught = nil, false // the new follower reads them again
	c.sig = sig.String()
	if len(ups) == 0 {
		return
	}
	list := make([]chain.Upstream, 0, len(ups))
	for _, k := range keys {
		list = append(list, ups[k])
	}
	c.f = chain.NewFollower(t.d.opts, list, from, t.logger.With("component", "chains"))
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.f.Run(fctx); err != nil {
			t.logger.Error("following the chains' upstreams", "err", err)
		}
	}()
	c.stop = func() { cancel(); <-done }
	t.logger.Info("following the upstreams of chains", "upstreams", len(list), "chains", len(c.base), "from", from.UTC())
}

// emitChains emits the ticks of the chains that the slots ended since the last call run for, in one
// transaction with their state, and moves their progress.
func (t *leaderTerm) emitChains(ctx context.Context) error {
	c := t.ch
	if c == nil {
		return nil
	}
	t.takeEnded()
	ended := c.held
	c.held = nil
	if len(ended) == 0 {
		return nil
	}
	now := t.d.cfg.Now()
	var ems []emission
	inBatch := map[string]time.Time{} // each chain's last slot in this batch: a slot read twice is emitted once
	for i, e := range ended {
		for _, name := range c.down[e.Schedule] {
			it, ok := t.pl.items[name]
			if !ok || !e.Slot.After(c.base[name]) || !e.Slot.After(inBatch[name]) {
				continue
			}
			_, when := it.entry.Schedule.After()
			if !chain.Matches(when, e.Outcome) {
				continue
			}
			if _, ready := t.pools[it.entry.Schedule.Pool()]; !ready {
				c.held = append(c.held, ended[i:]...) // in order: this slot and every later one wait for the pool
				t.reportPool(it.entry.Schedule.Pool())
				goto emit
			}
			em := newEmission(it, []time.Time{e.Slot}, 0)
			em.at = now
			ems = append(ems, em)
			inBatch[name] = e.Slot
		}
	}
emit:
	if len(ems) == 0 {
		return nil
	}
	var b batch
	recs := appendRecords(&b, ems, recordTopics{work: t.d.cfg.Names.Work, ticker: t.d.cfg.Names.Ticker, pools: t.pools}, t.partitions, t.t, now, now)
	spans := traceEmission(ctx, recs, t.d.cfg.Names.Ticker)
	err := t.d.commit(ctx, t.p, recs)
	endEmission(spans, err)
	if err != nil {
		return err
	}
	t.d.observe(ems, t.d.cfg.Now())
	for _, em := range ems {
		name := em.name()
		c.base[name] = em.slots[0]
		t.pl.items[name].base = em.slots[0]
		t.logger.Debug("chain emitted", "schedule", name, "upstream_slot", em.slots[0])
	}
	return nil
}

// takeEnded takes the slots the follower saw end: those of chains' upstreams wait in held for emitChains, those
// of gates' required schedules go to hist. Once the follower has caught up, the gated schedules parked for it
// are armed again.
func (t *leaderTerm) takeEnded() {
	c := t.ch
	if c == nil || c.f == nil {
		return
	}
	c.caught = c.f.CaughtUp() // before Take: a follower caught up has handed over every slot read before
	for _, e := range c.f.Take() {
		if _, ok := c.down[e.Schedule]; ok {
			c.held = append(c.held, e)
		}
		if c.required(e.Schedule) {
			if c.hist == nil {
				c.hist = map[string][]chain.Ended{}
			}
			c.hist[e.Schedule] = append(c.hist[e.Schedule], e)
		}
	}
	c.pruneHist(t.d.cfg.Now(), t.pl.base)
	if c.caught && len(c.parked) > 0 {
		for it, gen := range c.parked {
			t.pl.unpark(it, gen)
		}
		c.parked = nil
	}
}

// stopChains stops the follower (the term's end).
func (t *leaderTerm) stopChains() {
	if t.ch != nil && t.ch.stop != nil {
		t.ch.stop()
	}
	t.d.watchUpstreams(t.k, nil)
}
