package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Config configures a Dispatcher.
type Config struct {
	// Names are the namespace's topics and the shared transactional ID. Required.
	Names kafka.Names
	// TransactionTimeout is how long the broker waits before aborting an open transaction of a dead leader,
	// which holds back the work partitions it wrote until then. Defaults to 10s.
	TransactionTimeout time.Duration
	// MaxBatch caps the schedules emitted in one transaction. Defaults to 5000.
	MaxBatch int
	// Lead is how long before its due instant each slot's ticks are committed (the ticks carry the instant, and
	// workers hold them until then). Zero emits each slot when it falls due. At most MaxLead. `ticker run`
	// defaults it to DefaultLead.
	Lead time.Duration
	// ProducerOpts, when set, returns extra options of leader k's producer only (its metrics hooks, for
	// example). It is called once per term.
	ProducerOpts func(k int32) []kgo.Opt
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// DefaultLead is `ticker run --lead`: longer than a leader failover with the default 6 s session timeout (the
// session timeout, then the rebalance, the new leader's fencing and its state read), so that the ticks of every
// slot due during a failover are committed before it began.
const DefaultLead = 10 * time.Second

// MaxLead bounds Config.Lead. It stays well under FutureStateLimit: a state that far ahead is taken as corrupt.
const MaxLead = 5 * time.Minute

// Dispatcher runs leader terms: Lead is a leader.LeadFunc.
type Dispatcher struct {
	cfg     Config
	opts    []kgo.Opt
	view    *store.View
	logger  *slog.Logger
	metrics *metrics

	fanMu   sync.Mutex
	subs    map[int32]*changeSub // the running terms, by leader (fanout.go)
	leaders int                  // the number of leaders, once a term has read it

	warmMu sync.Mutex
	warm   map[int32]*leaderstate.Follower // the followed ticker-topic partitions (Follow), by leader
}

// New returns a Dispatcher. opts are the connection options (kafka.Config.Opts); view follows the schedules.
func New(cfg Config, opts []kgo.Opt, view *store.View, logger *slog.Logger, reg prometheus.Registerer) (*Dispatcher, error) {
	if cfg.Names.Work == "" || cfg.Names.Ticker == "" || cfg.Names.TransactionalID == "" {
		return nil, errors.New("dispatch: topic names and transactional ID are required")
	}
	if cfg.Lead < 0 || cfg.Lead > MaxLead {
		return nil, fmt.Errorf("dispatch: lead %s out of range [0, %s]", cfg.Lead, MaxLead)
	}
	cfg.TransactionTimeout = cmp.Or(cfg.TransactionTimeout, 10*time.Second)
	cfg.MaxBatch = cmp.Or(cfg.MaxBatch, 5000)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Dispatcher{
		cfg:     cfg,
		opts:    opts,
		view:    view,
		logger:  logger.With("component", "dispatch"),
		metrics: newMetrics(reg),
		subs:    map[int32]*changeSub{},
		warm:    map[int32]*leaderstate.Follower{},
	}, nil
}

func (d *Dispatcher) producerOpts(k int32) []kgo.Opt {
	if d.cfg.ProducerOpts == nil {
		return nil
	}
	return d.cfg.ProducerOpts(k)
}

// Lead runs one leader term until ctx ends (nil) or the producer fails (the error).
func (d *Dispatcher) Lead(ctx context.Context, lt leader.Term) error {
	k := lt.Partition
	logger := d.logger.With("term", lt.Number, "leader", k)
	start := time.Now()
	txnID := d.cfg.Names.LeaderTransactionalID(k)

	cl, err := kgo.NewClient(append(append(d.opts[:len(d.opts):len(d.opts)],
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(d.cfg.TransactionTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// The client's default linger, as the raw-produce baseline has: every transaction ends with a Flush,
		// which sends what lingers at once, so it delays no tick.
	), d.producerOpts(k)...)...)
	if err != nil {
		return fmt.Errorf("creating the leader's producer: %w", err)
	}
	p := &producer{cl: cl, leader: strconv.Itoa(int(k)), logger: logger}
	defer p.close()

	// 1. Fence every earlier leader. When this returns, all their transactions are decided.
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("fencing earlier leaders (InitProducerID): %w", kafka.NeedACL(err, "Write", "transactional ID", txnID))
	}
	t := term{producerID: pid, epoch: epoch, part: k}
	logger = logger.With("producer_id", pid, "epoch", epoch)
	fenced := time.Now()
	leaders, err := d.leaderCount(ctx, kadm.NewClient(cl), k)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	owned := func(name string) bool { return kafka.LeaderOf(name, leaders) == k }
	// Changes from here on reach this term (subscribe before the snapshot below).
	changes := d.subscribe(k)
	defer d.unsubscribe(k, changes)

	// 2. The state every earlier leader committed, once no other producer's transaction holds it back, and the
	// schedules.
	if err := d.waitStable(ctx, kadm.NewClient(cl), k, logger); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	state, bad, release, err := d.readState(ctx, k)
	defer release()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	for name := range state {
		if !owned(name) {
			delete(state, name) // not this leader's (only a hand-made record can be here)
		}
	}
	stateRead := time.Now()
	select {
	case <-ctx.Done():
		return nil
	case <-d.view.Loaded():
	}
	// The planner below starts from the View as it is: what changed so far is in it. This term's share is
	// dropped, or the term would set every schedule a second time (at a cold start, a million names).
	d.distribute(k)
	changes.drop()
	loaded := time.Now()
	schedules, n := d.view.All(), d.view.Len()
	if leaders > 1 {
		schedules = ownedOnly(schedules, owned)
		n = n/leaders + n/(16*leaders) // about this leader's share: the planner's slab
	}
	d.refuseFuture(state, d.cfg.Now(), logger)
	pl := newPlannerFrom(n, schedules, state, d.cfg.Lead)
	planned := time.Now()
	adm := kadm.NewClient(cl)
	partitions, err := kafka.WorkPartitions(ctx, adm, d.cfg.Names.Work)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	recovered, err := d.checkState(ctx, adm, state, pl, partitions, d.cfg.Now(), logger)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := d.rewriteState(ctx, p, t, state, recovered, bad); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// The schedules topic is shared: leader 0 alone repairs it.
	repaired := map[int64]bool{}
	repair := func() error {
		if k != 0 {
			return nil
		}
		return d.repairSchedules(ctx, p, logger, repaired)
	}
	if err := repair(); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	// State of schedules deleted while no leader ran: tombstone it so compaction drops it, unless slots of it
	// were emitted ahead that are not due yet (it is kept until they are; see planner). Those, and the ticks
	// ahead of schedules paused meanwhile, are cancelled again here: the command that paused or deleted them
	// wrote its own cancellation, but it may have failed.
	now := d.cfg.Now()
	var orphans []string
	var cancels []tick.Cancel
	for name, st := range pl.stateToCheck(state, len(recovered)) {
		e, ok := pl.entry(name)
		switch {
		case !ok && st.LastSlot.After(now):
			pl.grave(name, st.LastSlot)
			cancels = append(cancels, tick.Cancel{Schedule: name, Before: st.ScheduleVersion + 1, After: now, Reason: tick.ReasonDeleted})
		case !ok:
			orphans = append(orphans, name)
		case e.Schedule.Paused() && st.LastSlot.After(now) && st.ScheduleVersion < e.Version:
			cancels = append(cancels, tick.Cancel{Schedule: name, Before: e.Version, After: e.UpdatedAt, Reason: tick.ReasonPaused})
		}
	}
	pl.startChecked()
	if err := d.cancel(ctx, p, partitions, cancels); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := d.tombstone(ctx, p, k, orphans); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer func() { d.metrics.endTerm(pl.optedIn()) }()
	for _, name := range pl.metered {
		if it, ok := pl.items[name]; ok && it.entry.Schedule.Metrics() {
			d.metrics.next(name, it.entry, it.base)
		}
	}
	pl.metered = nil
	// took is from the term's start, rebuild from the fencing (the state read, the checks and the planner); the
	// phases say where a slow start goes.
	ms := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	logger.Info("leader term ready", "leaders", leaders, "schedules", pl.len(), "states", len(state), "work_partitions", partitions,
		"took", ms(time.Since(start)), "rebuild", ms(time.Since(fenced)), "fence", ms(fenced.Sub(start)),
		"state_read", ms(stateRead.Sub(fenced)), "schedules_wait", ms(loaded.Sub(stateRead)), "plan", ms(planned.Sub(loaded)),
		"checks", ms(time.Since(planned)))

	// 3. The loop: one timer, woken early by schedule changes.
	topics := recordTopics{work: d.cfg.Names.Work, ticker: d.cfg.Names.Ticker}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var next, spare batch
	for {
		now := d.cfg.Now()
		// Each transaction's records are planned and encoded while the transaction before commits, so that the
		// leader's CPU and the broker's round trips overlap when many schedules are due together. A failed
		// transaction ends the term, so a batch planned ahead of it is never committed after it.
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
			ems := pl.collect(&next, now, d.cfg.MaxBatch)
			var recs []*kgo.Record
			if len(ems) > 0 {
				recs = appendRecords(&next, ems, topics, partitions, t, now, d.cfg.Now())
			}
			if committing != nil {
				if err := finish(); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return err
				}
			}
			if len(ems) == 0 {
				break
			}
			committing, committed = make(chan commitResult, 1), ems
			go func(done chan<- commitResult, recs []*kgo.Record) {
				err := d.commit(ctx, p, recs)
				done <- commitResult{err: err, at: d.cfg.Now()}
			}(committing, recs)
			next, spare = spare, next // the next batch must not write over the records being produced
		}

		if gone := pl.buried(now); len(gone) > 0 {
			if err := d.tombstone(ctx, p, k, gone); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}

		wait := time.Hour
		if at, ok := pl.nextWake(); ok {
			wait = max(at.Sub(d.cfg.Now()), 0)
		}
		if at, ok := pl.nextGrave(); ok {
			wait = min(wait, max(at.Sub(d.cfg.Now()), 0))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			logger.Info("leader term ending", "cause", context.Cause(ctx))
			return nil
		case <-timer.C:
		case <-d.view.Changed():
			d.distribute(-1) // to every term of this process; this one's come on changes.notify
		case <-changes.notify:
			if err := repair(); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			now := d.cfg.Now()
			var cancels []tick.Cancel
			var gone []string
			for _, name := range changes.take() {
				old, known := pl.entry(name)
				if e, ok := d.view.Get(name); ok {
					if known && e.Spec().Paused && !old.Spec().Paused && pl.ahead(name, now) {
						cancels = append(cancels, tick.Cancel{Schedule: name, Before: e.Version, After: e.UpdatedAt, Reason: tick.ReasonPaused})
					}
					pl.set(name, e, time.Time{})
					d.metrics.next(name, e, pl.base(name))
					logger.Info("schedule changed", "schedule", name, "version", e.Version, "paused", e.Spec().Paused)
				} else if known {
					if pl.remove(name, now) {
						// Its ticks ahead are cancelled; its state stays until they are past (planner.graves).
						cancels = append(cancels, tick.Cancel{Schedule: name, Before: old.Version + 1, After: now, Reason: tick.ReasonDeleted})
					} else {
						gone = append(gone, name)
					}
					d.metrics.forget(name)
					logger.Info("schedule deleted", "schedule", name)
				}
			}
			if err := d.cancel(ctx, p, partitions, cancels); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if err := d.tombstone(ctx, p, k, gone); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			d.metrics.scheduleSeries(pl.entry, owned)
		}
	}
}

func (d *Dispatcher) observe(ems []emission, committed time.Time) {
	// Counted for the whole transaction: a slot of a million schedules adds to each counter once a transaction,
	// not once a schedule.
	var emitted, missed, late int64
	for i := range ems {
		em := &ems[i]
		shards := int64(max(em.src.Shards, 1))
		emitted += int64(len(em.slots)) * shards
		missed += em.missed
		for _, s := range em.slots {
			due := em.due(s)
			d.metrics.emitLag.Observe(max(committed.Sub(due.Add(-d.cfg.Lead)), 0).Seconds())
			if committed.After(due) {
				late += shards
			}
		}
		if em.metrics && len(em.slots) > 0 {
			d.metrics.lastSlot.WithLabelValues(em.name()).Set(float64(em.slots[len(em.slots)-1].Unix()))
			d.metrics.optIn(em.name())
		}
	}
	d.metrics.emitted.Add(float64(emitted))
	d.metrics.missed.Add(float64(missed))
	if late > 0 {
		d.metrics.emittedLate.Add(float64(late))
	}
}

// cancel writes cancels to every work partition, in one transaction of the term.
func (d *Dispatcher) cancel(ctx context.Context, p *producer, partitions int, cancels []tick.Cancel) error {
	if len(cancels) == 0 {
		return nil
	}
	var recs []*kgo.Record
	for _, c := range cancels {
		recs = append(recs, cancel.Records(c, d.cfg.Names.Work, partitions)...)
	}
	if err := d.commit(ctx, p, recs); err != nil {
		return fmt.Errorf("cancelling the ticks ahead of %d paused or deleted schedule(s): %w", len(cancels), err)
	}
	d.metrics.cancels.Add(float64(len(cancels)))
	return nil
}

// tombstone deletes the ticker-topic state of deleted schedules, in one transaction of the term.
func (d *Dispatcher) tombstone(ctx context.Context, p *producer, part int32, names []string) error {
	if len(names) == 0 {
		return nil
	}
	recs := make([]*kgo.Record, 0, len(names))
	for _, name := range names {
		recs = append(recs, &kgo.Record{Topic: d.cfg.Names.Ticker, Partition: part, Key: []byte(name)})
	}
	if err := d.commit(ctx, p, recs); err != nil {
		return fmt.Errorf("deleting the state of %d deleted schedule(s): %w", len(names), err)
	}
	return nil
}

// commitResult is how a transaction of the emission loop ended, and when.
type commitResult struct {
	err error
	at  time.Time
}

// commit writes recs in one transaction of the term and counts the result. A fencing error says so.
func (d *Dispatcher) commit(ctx context.Context, p *producer, recs []*kgo.Record) error {
	start := time.Now()
	err := p.transact(ctx, recs)
	if err == nil {
		d.metrics.transactions.WithLabelValues("committed").Inc()
		d.metrics.txnDuration.WithLabelValues(p.leader).Observe(time.Since(start).Seconds())
		return nil
	}
	if ctx.Err() != nil {
		return err // the term is ending; the abort is not a failure
	}
	d.metrics.transactions.WithLabelValues(p.lastResult).Inc()
	if isFenced(err) {
		d.metrics.fenced.Inc()
		return fmt.Errorf("fenced by a newer leader: %w", err)
	}
	return err
}

// readState reads the state of leader part's schedules; an undecodable record is reported and ignored rather
// than trusted (only leaders write the ticker topic). It starts from the state the replica kept warm while it did
// not lead that partition (see leaderstate.Follower) and reads the rest, to the last stable offset; without a warm state,
// all of it. release hands the partition back to its follower once the term ends.
//
// It also returns the undecodable records that are still the newest of their key: the term dead-letters them
// when it rewrites their schedules' state (checkState, rewriteState), so each is dead-lettered once.
func (d *Dispatcher) readState(ctx context.Context, part int32) (state map[string]stored, bad map[string]*kgo.Record, release func(), err error) {
	ts, release := d.warmFor(part).Take(), d.warmFor(part).Release
	_, err = kafka.ReadStableFrom(ctx, d.opts, d.cfg.Names.Ticker, part, ts.Next, func(r *kgo.Record) error {
		ts.Apply(r, d.invalidState)
		return nil
	})
	if err != nil {
		return nil, nil, release, fmt.Errorf("reading the leader state from %s[%d]: %w", d.cfg.Names.Ticker, part, err)
	}
	for name := range ts.Bad {
		if _, ok := ts.State[name]; ok {
			delete(ts.Bad, name) // the key has a valid state: it is rewritten by the term's next emission
		}
	}
	return ts.State, ts.Bad, release, nil
}

// warmFor returns the warm state of ticker-topic partition part, made (empty) on first use: by Follow, or by a
// term that starts before Follow has, which takes it at once.
func (d *Dispatcher) warmFor(part int32) *leaderstate.Follower {
	d.warmMu.Lock()
	defer d.warmMu.Unlock()
	w, ok := d.warm[part]
	if !ok {
		w = leaderstate.NewFollower(d.opts, d.cfg.Names.Ticker, part, d.logger, d.invalidState)
		d.warm[part] = w
	}
	return w
}

// invalidState reports an undecodable ticker-topic record, and keeps the reason with it for its dead-letter
// copy.
func (d *Dispatcher) invalidState(r *kgo.Record, err error) {
	d.logger.Error("skipping an undecodable ticker-topic record", "schedule", errlimit.Text(string(r.Key)), "offset", r.Offset, "err", err)
	d.metrics.invalidState.Inc()
	r.Headers = append(r.Headers, kgo.RecordHeader{Key: "tickgroup-error", Value: []byte(errlimit.Text(err.Error()))})
}

// Follow keeps the leader state of every ticker-topic partition (one per leader) warm while this replica does
// not lead it, so that a takeover reads only what was written since (see leaderstate.Follower). It runs until ctx ends;
// without it, each term reads its whole partition.
func (d *Dispatcher) Follow(ctx context.Context) error {
	cl, err := kgo.NewClient(d.opts...)
	if err != nil {
		return fmt.Errorf("leader state follower: client: %w", err)
	}
	n, err := kafka.Leaders(ctx, kadm.NewClient(cl), d.cfg.Names.Ticker)
	cl.Close()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("leader state follower: %w", err)
	}
	d.logger.Info("following the leader state", "leaders", n)
	g, gctx := errgroup.WithContext(ctx)
	for k := range int32(n) {
		w := d.warmFor(k) // a term that started first has it taken: it waits for the release
		g.Go(func() error { return w.Run(gctx) })
	}
	err = g.Wait()
	d.logger.Info("leader state follower stopped")
	return err
}

// producer runs the term's transactions.
type producer struct {
	cl         *kgo.Client
	leader     string // the leader's partition, the metrics' label
	logger     *slog.Logger
	inTxn      bool
	lastResult string
}

// transact writes recs in one transaction and commits it.
func (p *producer) transact(ctx context.Context, recs []*kgo.Record) error {
	if err := p.cl.BeginTransaction(); err != nil {
		p.lastResult = "failed"
		return fmt.Errorf("beginning a transaction: %w", err)
	}
	p.inTxn = true
	var (
		mu    sync.Mutex
		first error
	)
	// One promise for the transaction's records: a closure written in the loop is allocated once per record.
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = fmt.Errorf("producing %s to %s[%d]: %w", r.Key, r.Topic, r.Partition, kafka.NeedACL(err, "Write", "topic", r.Topic))
			}
			mu.Unlock()
		}
	}
	for _, r := range recs {
		p.cl.Produce(ctx, r, promise)
	}
	if err := p.cl.Flush(ctx); err != nil {
		p.lastResult = "aborted"
		return p.abort(fmt.Errorf("flushing the transaction: %w", err))
	}
	if first != nil {
		p.lastResult = "aborted"
		return p.abort(first)
	}
	err := p.cl.EndTransaction(ctx, kgo.TryCommit)
	p.inTxn = false
	if err != nil {
		// Unconfirmed: it may have committed or not. The next leader's fencing decides it either way, and the
		// state it then reads says which.
		p.lastResult = "failed"
		return fmt.Errorf("committing the transaction: %w", err)
	}
	return nil
}

// abort gives up the open transaction and returns cause.
func (p *producer) abort(cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return errors.Join(cause, fmt.Errorf("dropping buffered records: %w", err))
	}
	err := p.cl.EndTransaction(ctx, kgo.TryAbort)
	p.inTxn = false
	if err != nil {
		return errors.Join(cause, fmt.Errorf("aborting the transaction: %w", err))
	}
	return cause
}

// close aborts an open transaction (a term cancelled mid-transaction) and closes the client.
func (p *producer) close() {
	if p.inTxn {
		if err := p.abort(errors.New("term ended")); err != nil {
			p.logger.Debug("transaction aborted at the end of the term", "err", err)
		}
	}
	p.cl.Close()
}

// isFenced reports whether err says a newer producer took over the transactional ID.
func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.OperationNotAttempted) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed)
}

// ownedOnly is the schedules of seq that owned says this leader leads.
func ownedOnly(seq iter.Seq2[string, store.Entry], owned func(string) bool) iter.Seq2[string, store.Entry] {
	return func(yield func(string, store.Entry) bool) {
		for name, e := range seq {
			if owned(name) && !yield(name, e) {
				return
			}
		}
	}
}
