package dispatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
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
	// PoolTopics shape the topics of a pool that a schedule names and that do not exist yet (the leader creates
	// them where it may).
	PoolTopics kafka.TopicOptions
	// PoolRetry is how long a leader waits before it tries again to make a down pool's topics ready. Defaults
	// to 30s.
	PoolRetry time.Duration
	// ProducerOpts, when set, returns extra options of leader k's producer only (its metrics hooks, for
	// example). It is called once per term.
	ProducerOpts func(k int32) []kgo.Opt
	// StallTimeout is how long a transaction of a term (from its start to the broker's answer to its commit),
	// or the term's fencing, may go unconfirmed before the leader gives its leadership up: the term ends with
	// ErrStalled, so the replica leaves the group and another one leads (see StallTimeout, the function, for
	// the bound). Defaults to StallTimeout(Lead).
	StallTimeout time.Duration
	// Calendars gives the calendars that schedules exclude (a calendarstore.View that the caller runs). Nil: no
	// calendar is known, and a schedule that excludes one waits (nothing of it is emitted). See calendars.go.
	Calendars Calendars
	// CalendarSync bounds how long a term start waits for Calendars to read every calendar written before it.
	// Defaults to DefaultCalendarSync.
	CalendarSync time.Duration
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

	// watchMu orders the View's Watch calls; upstreams are each term's names of other leaders (fanout.go).
	watchMu   sync.Mutex
	upstreams map[int32][]string

	warmMu sync.Mutex
	warm   map[int32]*leaderstate.Follower // the followed ticker-topic partitions (Follow), by leader

	// testHold, set by this package's tests only, is every term producer's hold (see producer.hold).
	testHold func(ctx context.Context) error
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
	cfg.PoolRetry = cmp.Or(cfg.PoolRetry, 30*time.Second)
	cfg.StallTimeout = cmp.Or(cfg.StallTimeout, StallTimeout(max(cfg.Lead, 0)))
	cfg.CalendarSync = cmp.Or(cfg.CalendarSync, DefaultCalendarSync)
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
			if !em.at.IsZero() {
				break // a chain's tick is emitted when its upstream slot ends: no lead, never late
			}
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
func (d *Dispatcher) cancel(ctx context.Context, p *producer, pools map[string]poolTopic, cancels []tick.Cancel) error {
	if len(cancels) == 0 {
		return nil
	}
	var recs []*kgo.Record
	for _, c := range cancels {
		// To every pool's work partitions: ticks emitted ahead may sit in the pool the schedule left.
		for _, pt := range pools {
			recs = append(recs, cancel.Records(c, pt.work, pt.partitions)...)
		}
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
// all of it. from is the offset the read started at (0: no warm state); release hands the partition back to its
// follower once the term ends.
//
// It also returns the undecodable records that are still the newest of their key: the term dead-letters them
// when it rewrites their schedules' state (checkState, rewriteState), so each is dead-lettered once.
func (d *Dispatcher) readState(ctx context.Context, part int32) (state map[string]stored, bad map[string]*kgo.Record, from int64, release func(), err error) {
	ts, release := d.warmFor(part).Take(), d.warmFor(part).Release
	from = max(ts.Next, 0)
	_, err = kafka.ReadStableFrom(ctx, d.opts, d.cfg.Names.Ticker, part, ts.Next, func(r *kgo.Record) error {
		ts.Apply(r, d.invalidState)
		return nil
	})
	if err != nil {
		return nil, nil, from, release, fmt.Errorf("reading the leader state from %s[%d]: %w", d.cfg.Names.Ticker, part, err)
	}
	for name := range ts.Bad {
		if _, ok := ts.State[name]; ok {
			delete(ts.Bad, name) // the key has a valid state: it is rewritten by the term's next emission
		}
	}
	return ts.State, ts.Bad, from, release, nil
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
	// dog times each transaction, from its start to the answer to its commit (nil: none does).
	dog *watchdog
	// hold, when set, runs before each EndTransaction (commit or abort) and fails it with its error: a test's
	// fault (a coordinator that no longer answers). Nil in production; see fault.go.
	hold func(ctx context.Context) error
	// closeOnce closes cl once: at the term's end, or earlier by the watchdog (forceClose).
	closeOnce sync.Once
	// committed holds the producer IDs and epochs of the term's last transactions that committed: should Kafka
	// leave one of them hanging, the term knows it committed (hanging.go).
	committed commits
}

// transact writes recs in one transaction and commits it.
func (p *producer) transact(ctx context.Context, recs []*kgo.Record) error {
	p.dog.begin()
	defer p.dog.end()
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
		if ctx.Err() != nil { // the term is ending: its end must not wait for a broker that does not answer
			return p.abortWithin(fmt.Errorf("flushing the transaction: %w", err), closeAbortTimeout)
		}
		return p.abort(fmt.Errorf("flushing the transaction: %w", err))
	}
	if first != nil {
		p.lastResult = "aborted"
		return p.abort(first)
	}
	id, epoch, idErr := p.cl.ProducerID(ctx) // this transaction's: transaction version 2 bumps the epoch at its end
	err := p.endTransaction(ctx, kgo.TryCommit)
	p.inTxn = false
	if err != nil {
		// Unconfirmed: it may have committed or not. The next leader's fencing decides it either way, and the
		// state it then reads says which.
		p.lastResult = "failed"
		return fmt.Errorf("committing the transaction: %w", err)
	}
	if idErr == nil {
		p.committed.note(id, epoch)
	}
	return nil
}

// abort gives up the open transaction and returns cause.
func (p *producer) abort(cause error) error {
	return p.abortWithin(cause, 5*time.Second)
}

// abortWithin is abort, giving up after d: the transaction is then aborted by the next leader's fencing, or by
// the broker at its transaction timeout.
func (p *producer) abortWithin(cause error, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return errors.Join(cause, fmt.Errorf("dropping buffered records: %w", err))
	}
	err := p.endTransaction(ctx, kgo.TryAbort)
	p.inTxn = false
	if err != nil {
		return errors.Join(cause, fmt.Errorf("aborting the transaction: %w", err))
	}
	return cause
}

// endTransaction ends the open transaction, unless a test's fault holds it (hold).
func (p *producer) endTransaction(ctx context.Context, commit kgo.TransactionEndTry) error {
	if p.hold != nil {
		if err := p.hold(ctx); err != nil {
			return err
		}
	}
	return p.cl.EndTransaction(ctx, commit)
}

// close aborts an open transaction (a term cancelled mid-transaction) and closes the client. It gives the abort a
// second: a reachable broker takes it in milliseconds, and an unreachable one must not hold up the term's end
// (a ticker told to stop with the broker down); the next leader's fencing aborts the transaction then.
func (p *producer) close() {
	if p.inTxn {
		if err := p.abortWithin(errors.New("term ended"), closeAbortTimeout); err != nil {
			p.logger.Debug("transaction aborted at the end of the term", "err", err)
		}
	}
	p.closeClient()
}

// closeClient closes the client, once. Every call of it in progress returns ErrClientClosed: the one way to end
// those that do not take the term's context (a BeginTransaction that re-initialises the producer ID waits on
// the client's own context alone).
func (p *producer) closeClient() { p.closeOnce.Do(p.cl.Close) }

// closeAbortTimeout bounds the abort of a transaction left open at a term's end.
const closeAbortTimeout = time.Second

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
