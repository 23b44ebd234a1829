package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// leaderTerm is what the phases of one leader term share: its producer (fenced), its planner, and the
// subscription to the schedules it owns. Its phases run one after the other on Lead's goroutine:
//
//	fence ──► recover (state, planner, takeover checks) ──► settle (cancels, tombstones) ──► run
//	                                                                      run: emit ◄──► wait ──► changes
type leaderTerm struct {
	d       *Dispatcher
	k       int32
	logger  *slog.Logger
	p       *producer
	t       term
	txnID   string
	leaders int
	owned   func(string) bool
	changes *changeSub
	pl      *planner
	// partitions is the default pool's work topic's partition count; pools are the work topics of every pool
	// the term's schedules name ("": the default pool), ensured by ensurePools before a schedule is planned.
	partitions int
	pools      map[string]poolTopic
	// down holds the pools whose topics could not be made ready, with when to try again: their schedules are
	// parked meanwhile (parked: planner.park, with the generation to unpark), and nothing else waits for them.
	down   map[string]time.Time
	parked map[string]map[*item]uint32
	// statused holds the pools whose status this term reported (poolStatus), to withdraw at its end.
	statused map[string]bool
	adm      *kadm.Client
	// repaired keeps the schedule records leader 0 has restated (repairSchedules).
	repaired map[int64]bool
	// bf works through the backfills of the term's schedules.
	bf *backfill.Runner
	// closers undo what the term set up, last first.
	closers []func()
	// pending is what recover found to cancel and tombstone, for settle; states is how many states it read.
	pending pending
	states  int
	// stateFrom is the ticker-topic offset the state read started at: past 0, a warm state was taken over.
	stateFrom int64
	// The phases' instants, for the "leader term ready" line.
	start, fenced, stateRead, loaded, planned time.Time
	// before is the term's transactional ID as its coordinator described it before the fencing: the decision on
	// the previous term's last transaction, should it hang (hanging.go).
	before kadm.DescribedTransactions
	// left are the hanging transactions the last sweep left to another term (hanging.go), read by the sweep only.
	left map[hangingKey]bool
	// dog watches the producer's transactions (watch); pMu guards p for it, the one reader off Lead's goroutine.
	dog *watchdog
	pMu sync.Mutex
	// ch is the term's chains (chains.go); nil until run builds them.
	ch *chains
}

func (t *leaderTerm) setProducer(p *producer) {
	t.pMu.Lock()
	defer t.pMu.Unlock()
	t.p = p
}

func (t *leaderTerm) producer() *producer {
	t.pMu.Lock()
	defer t.pMu.Unlock()
	return t.p
}

// Lead runs one leader term until ctx ends (nil), the producer fails (the error) or a transaction stalls (an
// error wrapping ErrStalled; see watch).
func (d *Dispatcher) Lead(ctx context.Context, lt leader.Term) error {
	t := &leaderTerm{d: d, k: lt.Partition, logger: d.logger.With("term", lt.Number, "leader", lt.Partition), start: time.Now(),
		txnID: d.cfg.Names.LeaderTransactionalID(lt.Partition), repaired: map[int64]bool{}, dog: newWatchdog(d.cfg.StallTimeout, lt.Unreachable)}
	outer := ctx
	ctx, stop := context.WithCancelCause(ctx)
	stopWatch := t.watch(ctx, stop)
	defer stopWatch()
	defer t.close()
	err := t.fence(ctx)
	if err == nil {
		err = t.recover(ctx)
	}
	if err == nil {
		err = t.settle(ctx)
	}
	if err == nil {
		err = t.run(ctx)
	}
	// The one exit: an error once the term's context has ended is how the term ended (a cancelled request), not
	// a failure of the leader, unless the watchdog ended it.
	if outer.Err() != nil {
		return nil
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrStalled) {
		return cause
	}
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// watch runs the term's watchdog until the returned function is called (Lead's end). A transaction (or the
// fencing) unconfirmed for longer than Config.StallTimeout is a stall: a leader that keeps partition 0 while it
// cannot commit is the one failure nobody else can mend, since its group membership stays healthy and no other
// replica leads. So the term gives leadership up: watch logs why, counts it, and ends the term's context with
// the stall as its cause; Lead then returns it, and the Elector leaves the group and rejoins after its backoff
// (package leader), so another replica takes the partition over and fences this one's producer, which aborts
// the stalled transaction. Alone in the group, the replica leads again after the backoff and tries anew.
//
// Every call of the term takes its context, but one the client makes on its own does not: a BeginTransaction
// that re-initialises the producer ID waits for the coordinator on the client's context alone. So if the term
// has not returned stallGrace after the stall, watch closes its producer's client, which ends every call.
func (t *leaderTerm) watch(ctx context.Context, stop context.CancelCauseFunc) func() {
	done := make(chan struct{}) // Lead returns
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t.dog.run(ctx, func(d time.Duration) {
			t.d.metrics.stalled.Inc()
			t.logger.Error(fmt.Sprintf("no transaction committed for %s: giving up leadership", d.Round(time.Millisecond)),
				"stall_timeout", t.d.cfg.StallTimeout)
			stop(stallError(d, t.d.cfg.StallTimeout))
			select {
			case <-done:
			case <-time.After(stallGrace):
				if p := t.producer(); p != nil {
					t.logger.Warn("the stalled term has not stopped: closing its producer", "grace", stallGrace)
					p.closeClient()
				}
			}
		})
	}()
	return func() {
		close(done)
		stop(nil)
		<-exited
	}
}

// stallGrace is how long a stalled term may take to stop on its own (its abort is given closeAbortTimeout)
// before the watchdog closes its producer.
const stallGrace = 3 * closeAbortTimeout

func (t *leaderTerm) close() {
	for i := len(t.closers) - 1; i >= 0; i-- {
		t.closers[i]()
	}
}

// fence creates the term's producer and fences every earlier leader: when it returns, all their transactions
// are decided. It subscribes to the changes of the schedules this leader owns, before recover's snapshot.
func (t *leaderTerm) fence(ctx context.Context) error {
	d := t.d
	cl, err := kgo.NewClient(append(append(d.opts[:len(d.opts):len(d.opts)],
		kgo.TransactionalID(t.txnID),
		kgo.TransactionTimeout(d.cfg.TransactionTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// The client's default linger, as the raw-produce baseline has: every transaction ends with a Flush,
		// which sends what lingers at once, so it delays no tick.
	), d.producerOpts(t.k)...)...)
	if err != nil {
		return fmt.Errorf("creating the leader's producer: %w", err)
	}
	p := &producer{cl: cl, leader: strconv.Itoa(int(t.k)), logger: t.logger, dog: t.dog, hold: d.faultHold(t.logger)}
	if d.testHold != nil {
		p.hold = d.testHold
	}
	t.setProducer(p)
	t.closers = append(t.closers, p.close)

	// What the coordinator holds of the previous term's last transaction, before InitProducerID moves it on.
	if t.before, err = kadm.NewClient(cl).DescribeTransactions(ctx, t.txnID); err != nil {
		t.logger.Debug("describing the transactional ID before the fencing", "err", err)
	}
	t.dog.begin() // InitProducerID waits for every earlier transaction to be decided: it can stall too
	pid, epoch, err := cl.ProducerID(ctx)
	t.dog.end()
	if err != nil {
		return fmt.Errorf("fencing earlier leaders (InitProducerID): %w", kafka.NeedACL(err, "Write", "transactional ID", t.txnID))
	}
	t.t = term{producerID: pid, epoch: epoch, part: t.k}
	t.logger = t.logger.With("producer_id", pid, "epoch", epoch)
	t.fenced = time.Now()
	if t.leaders, err = d.leaderCount(ctx, kadm.NewClient(cl), t.k); err != nil {
		return err
	}
	k, leaders := t.k, t.leaders
	t.owned = func(name string) bool { return kafka.LeaderOf(name, leaders) == k }
	t.changes = d.subscribe(k)
	t.closers = append(t.closers, func() { d.unsubscribe(k, t.changes) })
	return nil
}

// recover reads the state every earlier leader committed (once no other producer's transaction holds it back)
// and the schedules, builds the planner, checks the state against the work topic (takeover.go) and rewrites
// what it recovered. Leader 0 also repairs the schedules topic.
func (t *leaderTerm) recover(ctx context.Context) error {
	d, k := t.d, t.k
	cl := t.p.cl
	adm := kadm.NewClient(cl)
	settle := func(ctx context.Context) { t.settleAtStart(ctx, adm) }
	if err := d.waitStable(ctx, adm, k, settle, t.logger); err != nil {
		return err
	}
	state, bad, from, release, err := d.readState(ctx, k)
	t.stateFrom = from
	t.closers = append(t.closers, release)
	if err != nil {
		return err
	}
	for name := range state {
		if !t.owned(name) {
			delete(state, name) // not this leader's (only a hand-made record can be here)
		}
	}
	t.states, t.stateRead = len(state), time.Now()
	// The schedules this term leads: the View's (loaded before the replica joined the election), or on the
	// shares, this leader's share, read now.
	releaseShare, err := d.view.Acquire(ctx, k)
	if err != nil {
		return err
	}
	t.closers = append(t.closers, releaseShare)
	// The calendars the planner applies: every one written before the fencing (calendars.go, Failover).
	if err := t.syncCalendars(ctx); err != nil {
		return err
	}
	// The planner below starts from the View as it is: what changed so far is in it. This term's share is
	// dropped, or the term would set every schedule a second time (at a cold start, a million names). So is a
	// calendar change so far: the planner reads the calendars as they are.
	//
	// The plan runs inside All, with the View locked: the replica's other shares, loading at a cold start or a
	// takeover, fold nothing meanwhile. That is on purpose. Planning from a copy, with the loads folding beside
	// it, made terms ready later on the 3M fleet of docs/benchmarks.md (cold start 7.5-13.4 s against 6.3-10.4,
	// a takeover's second term 4.5-5.2 s against 3.5-3.7, 867 ticks late against none): the loads and plans are
	// CPU-bound, and serialized the first term is ready sooner and the last no later.
	d.distribute(k)
	t.changes.drop()
	t.loaded = time.Now()
	schedules, n := d.view.All(), d.view.Len()
	if t.leaders > 1 {
		schedules = ownedOnly(schedules, t.owned)
		parts := t.leaders // about this leader's share of the View: the planner's slab
		if d.view.Sharded() {
			parts = max(d.view.Held(), 1) // the View holds the shares of the leaders this replica runs
		}
		n = n/parts + n/(16*parts)
	}
	d.refuseFuture(state, d.cfg.Now(), t.logger)
	var cals func(string) (*calendar.Calendar, bool)
	if d.cfg.Calendars != nil {
		cals = d.cfg.Calendars.Get
	}
	t.pl = newPlannerFrom(n, schedules, state, d.cfg.Lead, cals)
	t.planned = time.Now()
	t.closers = append(t.closers, func() { d.metrics.leaderSchedules.DeleteLabelValues(t.leaderLabel()) })
	t.countSchedules()
	t.closers = append(t.closers, func() { d.metrics.setWaitingCalendar(k, 0) })
	t.reportCalendars()
	t.adm = adm
	if t.partitions, err = kafka.WorkPartitions(ctx, adm, d.cfg.Names.Work); err != nil {
		return err
	}
	t.pools = map[string]poolTopic{"": {work: d.cfg.Names.Work, partitions: t.partitions}}
	t.down = map[string]time.Time{}
	t.parked = map[string]map[*item]uint32{}
	t.statused = map[string]bool{}
	t.closers = append(t.closers, func() {
		for pool := range t.statused { // the next leader of this partition says again what it finds
			d.metrics.setPool(t.k, pool, poolStatus{})
		}
	})
	t.discoverPools(ctx)
	var named []string
	for _, it := range t.pl.items {
		if p := it.entry.Schedule.Pool(); p != "" {
			named = append(named, p)
		}
	}
	t.ensurePools(ctx, named...)
	recovered, err := d.checkState(ctx, adm, state, t.pl, t.pools, d.cfg.Now(), t.logger)
	if err != nil {
		return err
	}
	if err := d.rewriteState(ctx, t.p, t.t, state, recovered, bad); err != nil {
		return err
	}
	if err := t.repair(ctx); err != nil {
		return err
	}
	t.settleState(state, len(recovered))
	return nil
}

// pending are the cancels and tombstones that settle writes, found by recover.
type pending struct {
	cancels []tick.Cancel
	orphans []string
}

// settleState finds, among the states the planner did not take, those of schedules deleted while no leader
// ran: their state is tombstoned so compaction drops it, unless slots of it were emitted ahead that are not due
// yet (it is kept until they are; see planner). Those, and the ticks ahead of schedules paused meanwhile, are
// cancelled again: the change was seen by no leader.
func (t *leaderTerm) settleState(state map[string]stored, recovered int) {
	now := t.d.cfg.Now()
	for name, st := range t.pl.stateToCheck(state, recovered) {
		e, ok := t.pl.entry(name)
		switch {
		case !ok && st.LastSlot.After(now):
			t.pl.grave(name, st.LastSlot)
			t.pending.cancels = append(t.pending.cancels, tick.Cancel{Schedule: name, Before: st.ScheduleVersion + 1, After: now, Reason: tick.ReasonDeleted})
		case !ok:
			t.pending.orphans = append(t.pending.orphans, name)
		case e.Schedule.Pausing() && st.LastSlot.After(now) && st.ScheduleVersion < e.Version:
			t.pending.cancels = append(t.pending.cancels, pauseCancel(name, e))
		}
	}
	t.pl.startChecked()
}

// settle writes what recover found to cancel and tombstone, starts the schedules' metric series and says the
// term is ready.
func (t *leaderTerm) settle(ctx context.Context) error {
	d := t.d
	if err := d.cancel(ctx, t.p, t.pools, t.pending.cancels); err != nil {
		return err
	}
	if err := d.tombstone(ctx, t.p, t.k, t.pending.orphans); err != nil {
		return err
	}
	t.pending = pending{}
	pl := t.pl
	t.closers = append(t.closers, func() { d.metrics.endTerm(pl.optedIn()) })
	for _, name := range pl.metered {
		if it, ok := pl.items[name]; ok && it.entry.Schedule.Metrics() && pl.waitingFor(name) == nil {
			d.metrics.next(name, it.entry, it.base)
		}
	}
	pl.metered = nil
	// took is from the term's start, rebuild from the fencing (the state read, the checks and the planner); the
	// phases say where a slow start goes.
	ms := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	t.logger.Info("leader term ready", "leaders", t.leaders, "schedules", pl.len(), "states", t.states, "state_from", t.stateFrom, "work_partitions", t.partitions,
		"took", ms(time.Since(t.start)), "rebuild", ms(time.Since(t.fenced)), "fence", ms(t.fenced.Sub(t.start)),
		"state_read", ms(t.stateRead.Sub(t.fenced)), "schedules_wait", ms(t.loaded.Sub(t.stateRead)), "plan", ms(t.planned.Sub(t.loaded)),
		"checks", ms(time.Since(t.planned)))
	return nil
}

// repair restates the schedule records whose newest record is invalid. The schedules topic is shared: leader 0
// alone repairs it.
func (t *leaderTerm) repair(ctx context.Context) error {
	// Each leader its own keys: on the shares its View holds only those (and a replica on the whole topic
	// beside replicas on the shares repairs the same ones).
	return t.d.repairSchedules(ctx, t.p, t.logger, t.repaired, t.owned)
}

// run is the term's loop: one timer, woken early by schedule changes. It emits what is due, tombstones the
// state of deleted schedules once their ticks ahead are past, and applies changes, until ctx ends.
func (t *leaderTerm) run(ctx context.Context) error {
	d, pl := t.d, t.pl
	e := &emitter{t: t, topics: recordTopics{work: d.cfg.Names.Work, ticker: d.cfg.Names.Ticker, pools: t.pools}}
	t.bf = backfill.NewRunner(backfill.Config{Names: d.cfg.Names, Now: d.cfg.Now, Opts: d.opts, Admin: t.adm, Logger: t.logger,
		Epoch: int64(t.t.epoch), DeadLetter: t.k == 0, Metrics: d.metrics.backfill}, backfillTerm{t})
	t.bf.Start(ctx)
	t.closers = append(t.closers, t.bf.Stop, t.sweepHanging(ctx))
	t.refreshChains(ctx)
	t.closers = append(t.closers, t.stopChains)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var calendarsChanged <-chan struct{} // nil without calendars: never ready
	if d.cfg.Calendars != nil {
		calendarsChanged = d.cfg.Calendars.Changed()
	}
	for {
		now := d.cfg.Now()
		if err := e.emit(ctx, now); err != nil {
			return err
		}
		if len(pl.calNotes.waiting)+len(pl.calNotes.exhausted) > 0 {
			t.reportCalendars()
		}
		if gone := pl.buried(now); len(gone) > 0 {
			if err := d.tombstone(ctx, t.p, t.k, gone); err != nil {
				return err
			}
		}
		wait := time.Hour
		if len(t.down) > 0 {
			// First: a pool back arms its waiting schedules, which may be due at once.
			if at := t.retryDown(ctx, d.cfg.Now()); !at.IsZero() {
				wait = max(time.Until(at), 0)
			}
		}
		if at, ok := pl.nextWake(); ok {
			wait = min(wait, max(at.Sub(d.cfg.Now()), 0))
		}
		if at, ok := pl.nextGrave(); ok {
			wait = min(wait, max(at.Sub(d.cfg.Now()), 0))
		}
		if at, ok := t.bf.Wake(); ok {
			wait = min(wait, at)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			t.logger.Info("leader term ending", "cause", context.Cause(ctx))
			return nil
		case <-timer.C:
			// A pool back (retryDown), a schedule read at last: the backfills and chains waiting for them go on.
			if err := t.bf.Step(ctx); err != nil {
				return err
			}
			if t.ch.dirty {
				t.refreshChains(ctx)
			}
			if err := t.emitChains(ctx); err != nil {
				return err
			}
		case <-d.view.Changed():
			d.distribute(-1) // to every term of this process; this one's come on changes.notify
		case <-calendarsChanged:
			d.distributeCalendars() // likewise
		case <-t.ch.notify():
			if err := t.emitChains(ctx); err != nil {
				return err
			}
		case <-t.changes.notify:
			if err := t.applyChanges(ctx); err != nil {
				return err
			}
			t.countSchedules()
			if t.changes.takeWatched() && t.ch != nil {
				t.ch.dirty = true // an upstream of a chain or gate changed (perhaps another leader's)
			}
			if t.ch.dirty {
				t.refreshChains(ctx)
			}
			if t.changes.takeCalendars() {
				t.applyCalendars()
			}
			if err := t.bf.Step(ctx); err != nil {
				return err
			}
		case ev := <-t.bf.Events():
			t.bf.TakeEvent(ev)
			if err := t.bf.Step(ctx); err != nil {
				return err
			}
		case err := <-t.bf.Fatal():
			return err
		case o := <-t.bf.Outcomes():
			t.bf.TakeOutcomes(o)
			if err := t.bf.Step(ctx); err != nil {
				return err
			}
		}
	}
}

// backfillTerm is what the term's backfill runner needs of it (backfill.Term); the runner calls it on the term's
// loop only.
type backfillTerm struct{ t *leaderTerm }

func (b backfillTerm) Owns(schedule string) bool { return b.t.owned(schedule) }

func (b backfillTerm) Schedule(name string) (store.Entry, bool) { return b.t.pl.entry(name) }

func (b backfillTerm) Pool(name string) (backfill.Pool, bool) {
	pt, ok := b.t.pools[name]
	return backfill.Pool{Work: pt.work, Partitions: pt.partitions}, ok
}

func (b backfillTerm) Commit(ctx context.Context, recs []*kgo.Record) error {
	return b.t.d.commit(ctx, b.t.p, recs)
}

// emitter writes the due slots, one transaction at a time, each transaction's records planned and encoded while
// the transaction before commits, so that the leader's CPU and the broker's round trips overlap when many
// schedules are due together. A failed transaction ends the term, so a batch planned ahead of it is never
// committed after it.
type emitter struct {
	t           *leaderTerm
	topics      recordTopics
	next, spare batch
}

// emit commits every slot due at now (and within the lead), batch by batch.
func (e *emitter) emit(ctx context.Context, now time.Time) error {
	t := e.t
	d, pl := t.d, t.pl
	var (
		committing chan commitResult
		committed  []emission
	)
	finish := func() error {
		res := <-committing
		committing = nil
		if res.err != nil {
			return res.err
		}
		d.observe(committed, res.at) // when it committed, not when the next batch was ready
		for _, em := range committed {
			if em.metrics {
				d.metrics.next(em.name(), em.entry, pl.base(em.name()))
			}
		}
		return nil
	}
	for {
		ems := pl.collect(&e.next, now, d.cfg.MaxBatch)
		collected := len(ems)
		ems = t.routable(ems)
		ems = t.gateEmissions(ems)
		var recs []*kgo.Record
		if len(ems) > 0 {
			recs = appendRecords(&e.next, ems, e.topics, t.partitions, t.t, now, d.cfg.Now())
		}
		if committing != nil {
			if err := finish(); err != nil {
				return err
			}
		}
		if collected == 0 {
			return nil
		}
		if len(ems) == 0 {
			continue // every schedule of the batch is in a pool that is not ready
		}
		committing, committed = make(chan commitResult, 1), ems
		spans := traceEmission(ctx, recs, d.cfg.Names.Ticker)
		go func(done chan<- commitResult, recs []*kgo.Record) {
			err := d.commit(ctx, t.p, recs)
			endEmission(spans, err)
			done <- commitResult{err: err, at: d.cfg.Now()}
		}(committing, recs)
		e.next, e.spare = e.spare, e.next // the next batch must not write over the records being produced
	}
}

// pauseCancel is the cancel of the ticks that a pause (e, pausing) leaves emitted ahead: those of older versions
// due after the pause, and, for a pause with an end, only those whose slot is before the end (the slots from it
// on run, as a resume then would let them).
func pauseCancel(name string, e store.Entry) tick.Cancel {
	c := tick.Cancel{Schedule: name, Before: e.Version, After: e.UpdatedAt, Reason: tick.ReasonPaused}
	if u := e.Schedule.PausedUntil(); u != nil {
		c.Until = *u
	}
	return c
}

// pauseExtends reports whether the change from old to e pauses slots that old left to run: a pause where there
// was none, or one that ends later (or never) than old's.
func pauseExtends(old, e *schedule.Schedule) bool {
	switch {
	case !e.Pausing():
		return false
	case !old.Pausing():
		return true
	}
	oldEnd, end := old.PausedUntil(), e.PausedUntil()
	return oldEnd != nil && (end == nil || end.After(*oldEnd))
}

// applyChanges takes the schedule changes this term was told of: a new or changed definition applies from the
// first slot not emitted yet; a pause cancels the ticks emitted ahead; a deletion cancels them too and keeps the
// state until they are past, or tombstones it at once.
func (t *leaderTerm) applyChanges(ctx context.Context) error {
	d, pl := t.d, t.pl
	if err := t.repair(ctx); err != nil {
		return err
	}
	now := d.cfg.Now()
	var cancels []tick.Cancel
	var gone []string
	for _, name := range t.changes.take() {
		old, known := pl.entry(name)
		e, ok := d.view.Get(name)
		if t.ch.involves(name, old, known) || (ok && (isChain(e) || isGated(e))) {
			t.ch.dirty = true
		}
		if ok {
			// A schedule moved to another pool goes on from the first slot not emitted yet, there: the ticks
			// emitted ahead stay in the pool they were written to and run there, once.
			t.unparkChanged(name)
			t.ensurePools(ctx, e.Schedule.Pool())
			if known && pauseExtends(old.Schedule, e.Schedule) && pl.ahead(name, now) {
				cancels = append(cancels, pauseCancel(name, e))
			}
			pl.set(name, e, time.Time{})
			t.meterNext(name)
			t.logger.Info("schedule changed", "schedule", name, "version", e.Version, "paused", e.Spec().Paused)
		} else if known {
			t.unparkChanged(name)
			if pl.remove(name, now) {
				// Its ticks ahead are cancelled; its state stays until they are past (planner.graves).
				cancels = append(cancels, tick.Cancel{Schedule: name, Before: old.Version + 1, After: now, Reason: tick.ReasonDeleted})
			} else {
				gone = append(gone, name)
			}
			d.metrics.forget(name)
			t.logger.Info("schedule deleted", "schedule", name)
		}
	}
	if err := d.cancel(ctx, t.p, t.pools, cancels); err != nil {
		return err
	}
	if err := d.tombstone(ctx, t.p, t.k, gone); err != nil {
		return err
	}
	d.metrics.scheduleSeries(pl.entry, t.owned)
	t.reportCalendars()
	return nil
}

// ensurePools makes the topics of each pool named that the term does not know yet (where this principal may
// create them; otherwise they must exist: ticker init --pool) and learns its work topic's partition count. A
// pool that cannot be made ready is down: its schedules wait, parked (routable), until a later try succeeds
// (retryDown) and they catch up, and every other schedule goes on.
func (t *leaderTerm) ensurePools(ctx context.Context, pools ...string) {
	d := t.d
	for _, pool := range pools {
		if _, ok := t.pools[pool]; ok {
			continue
		}
		if _, down := t.down[pool]; down {
			continue // retryDown tries again on its own schedule
		}
		n := d.cfg.Names.Pool(pool)
		parts, err := kafka.EnsurePoolTopics(ctx, t.adm, n, d.cfg.PoolTopics)
		if err != nil {
			if ctx.Err() == nil {
				t.down[pool] = time.Now().Add(d.cfg.PoolRetry)
				t.reportPool(pool)
				t.logger.Error("pool not ready: its schedules wait for it, and then catch up as their catch-up policy says (ticker init --pool)", "pool", pool,
					"retry_in", d.cfg.PoolRetry, "error", err)
			}
			continue
		}
		delete(t.down, pool)
		t.pools[pool] = poolTopic{work: n.Work, partitions: parts}
		if t.ch != nil {
			t.ch.dirty = true // an upstream in the pool can be followed now
		}
		t.logger.Info("pool ready", "pool", pool, "work", n.Work, "work_partitions", parts, "schedules_resumed", len(t.parked[pool]))
		for it, gen := range t.parked[pool] {
			t.pl.unpark(it, gen)
		}
		delete(t.parked, pool)
		t.reportPool(pool)
	}
}

// retryDown tries again the pools that are down and due for a try, and returns when the next try is due (zero:
// none is down).
func (t *leaderTerm) retryDown(ctx context.Context, now time.Time) time.Time {
	var due []string
	for pool, at := range t.down {
		if !now.Before(at) {
			due = append(due, pool)
			delete(t.down, pool)
		}
	}
	t.ensurePools(ctx, due...)
	var next time.Time
	for _, at := range t.down {
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// discoverPools adds to the term's pools every pool whose work topic exists, without creating anything: the
// ticks emitted ahead of a schedule that has since left a pool (or been deleted) still sit there, and a pause or
// deletion cancels them there too. A principal that may not list the topics finds the pools its schedules name.
func (t *leaderTerm) discoverPools(ctx context.Context) {
	tds, err := kafka.ListFresh(ctx, t.adm) // a pool created a moment ago counts
	if err != nil {
		t.logger.Warn("listing the topics to find the pools (cancels reach the pools the schedules name)", "error", err)
		return
	}
	names := t.d.cfg.Names
	for topic, td := range tds {
		if pool, ok := names.PoolOfWork(topic); ok && pool != "" && td.Err == nil && len(td.Partitions) > 0 {
			t.pools[pool] = poolTopic{work: topic, partitions: len(td.Partitions)}
		}
	}
}

// routable drops from ems the emissions of schedules whose pool is not ready (down) and parks those schedules
// until it is (planner.park: nothing of theirs is lost, their catch-up policy decides when the pool is back),
// and returns the rest (ems is reused).
func (t *leaderTerm) routable(ems []emission) []emission {
	out := ems[:0]
	for i := range ems {
		em := &ems[i]
		if _, ready := t.pools[em.pool]; ready {
			out = append(out, *em)
			continue
		}
		waiting := t.parked[em.pool]
		if waiting == nil {
			waiting = map[*item]uint32{}
			t.parked[em.pool] = waiting
		}
		if gen, ok := waiting[em.it]; ok && gen == em.it.gen {
			continue // parked by an earlier emission of this batch, whose base stands
		}
		waiting[em.it] = t.pl.park(em)
		t.reportPool(em.pool)
	}
	return out
}

// unparkChanged forgets schedule name among the parked ones (it changed, moved or went: a change arms it anew).
func (t *leaderTerm) unparkChanged(name string) {
	it, ok := t.pl.items[name]
	if !ok {
		return
	}
	for pool, waiting := range t.parked {
		if _, ok := waiting[it]; ok {
			delete(waiting, it)
			t.reportPool(pool)
		}
	}
}

// reportPool reports this term's status of pool to the metrics (metrics.setPool).
func (t *leaderTerm) reportPool(pool string) {
	_, down := t.down[pool]
	st := poolStatus{down: down, waiting: len(t.parked[pool])}
	if st != (poolStatus{}) {
		t.statused[pool] = true
	}
	t.d.metrics.setPool(t.k, pool, st)
}

// leaderLabel is the term's leader as a metric label.
func (t *leaderTerm) leaderLabel() string { return strconv.Itoa(int(t.k)) }

// countSchedules exports how many schedules the term leads.
func (t *leaderTerm) countSchedules() {
	t.d.metrics.leaderSchedules.WithLabelValues(t.leaderLabel()).Set(float64(len(t.pl.items)))
}
