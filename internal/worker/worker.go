package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/notify"
)

// Deps are the worker's collaborators.
type Deps struct {
	// Logger receives the worker's logs. Defaults to discarding them.
	Logger *slog.Logger
	// Registerer receives the worker's and its Kafka clients' metrics while Run runs (they are unregistered
	// as it returns). Nil registers nothing.
	Registerer prometheus.Registerer
	// Readiness, when set, gets the condition "group": true once this worker has received its first
	// assignment.
	Readiness *admin.Readiness
}

// ReadinessCondition is the name of the readiness condition the worker sets.
const ReadinessCondition = "group"

// ErrFencedInstance is returned by Run when another process joined the group with this worker's instance ID.
var ErrFencedInstance = errors.New("another worker joined the group with this instance ID (fenced): stopping")

// Causes of a lane's cancellation.
var (
	errRevoked      = errors.New("partition revoked")
	errLost         = errors.New("partition lost")
	errGraceExpired = errors.New("shutdown grace period expired")
)

// Worker consumes the work topic and runs each tick through a Handler (or forwards it, in forward mode).
type Worker struct {
	cfg     Config
	handler Handler
	logger  *slog.Logger
	reg     prometheus.Registerer
	// metricsReg receives the worker's own metrics (labelled with its pool) while a Run runs.
	metricsReg prometheus.Registerer
	ready      *admin.Readiness
	m          *metrics
	names      kafka.Names
	// limitView follows the limits topic while a Run runs (nil when Config.Limits came with the config).
	limitView *limit.View
	conn      []kgo.Opt

	cancelWarned atomic.Int64 // when refusedCancels last warned (Unix ns)
	running      atomic.Bool  // Run is running: a second Run at the same time is refused

	// *session is the state of one Run, made by Run and left to the next Run when it returns (every goroutine
	// of a Run ends before it returns). Its fields are promoted: w.lanes is the current Run's.
	*session
	// breachHook notifies deadline breaches (Config.BreachWebhook; nil: none).
	breachHook *notify.Webhook
}

// session is one Run of a Worker: its clients, its ledger, its lanes and runners, and the channels of its
// shutdown.
type session struct {
	// cl is the group's client. Its group callbacks can run before kgo.NewClient returns (the join starts
	// inside it), so the ones that need it call client, which waits for clSet, closed once cl is stored:
	// reading cl directly there, a partition assigned that early pinned no start offset (pinStart) and its
	// lane's ledger start dereferenced a nil client.
	cl          atomic.Pointer[kgo.Client]
	clSet       chan struct{}
	prod        *kgo.Client
	ledger      *ledger.Log // the execution ledger: writes entries, reads back the partitions the lanes hold
	start       kgo.Offset  // the start offset given to kgo, compared in pinStart
	startAt     time.Time   // when start was computed
	resultParts int
	dlqParts    int
	runq        chan run                // records for the runners
	hardCtx     context.Context         // ends when the grace period runs out
	stopBy      time.Time               // the stop's deadline: the grace period plus StopMargin from its start
	unrecorded  atomic.Int64            // outcome records given up as the worker stopped
	gaveUp      int                     // runs whose records were given up at the stop's deadline
	stopPoll    context.CancelCauseFunc // ends the poll loop with a fatal cause (a missing ACL), see fatal
	pollCtx     context.Context         // the poll loop's: ends when the worker stops (or on a fatal cause)
	draining    chan struct{}           // closed when shutdown begins: lanes stop before their next record
	commitWake  chan struct{}
	assignedYet atomic.Bool

	commitMu sync.Mutex // serialises commits with the commit of a revocation
	mu       sync.Mutex // guards lanes and their done offsets
	lanes    map[int32]*lane
	retiring map[*lane]bool // lanes no longer assigned whose runs go on
	starting *starting      // the attempts whose start is written and whose handler has not started
	closing  sync.WaitGroup // the retired lanes' closeLedger, which Run waits for
	sum      summary
}

func newSession() *session {
	return &session{clSet: make(chan struct{}), lanes: map[int32]*lane{}, retiring: map[*lane]bool{}, starting: newStarting()}
}

// New checks cfg and returns a worker running handler, or, when cfg.Forward is set, forwarding ticks (handler
// must then be nil).
func New(cfg Config, handler Handler, deps Deps) (*Worker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	switch {
	case cfg.Forward == "" && handler == nil:
		return nil, errors.New("worker config: a handler or a forward topic is required")
	case cfg.Forward != "" && handler != nil:
		return nil, errors.New("worker config: a handler and a forward topic are mutually exclusive")
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "worker")
	conn, err := cfg.Kafka.Opts(logger)
	if err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	if deps.Readiness != nil {
		deps.Readiness.Set(ReadinessCondition, false)
	}
	names := cfg.Kafka.Names().Pool(cfg.Pool)
	var view *limit.View
	if cfg.Limits == nil {
		// The pool's limits, followed for as long as a Run runs (its metrics registered with the worker's).
		view = limit.NewView(conn, names.Limits, logger, nil)
		cfg.Limits = view
	}
	var hook *notify.Webhook
	if cfg.BreachWebhook != "" {
		if hook, err = notify.New("breach-"+cmp.Or(cfg.Pool, kafka.DefaultPool), cfg.BreachWebhook, cfg.BreachSecret, logger.With("component", "breach-webhook"), deps.Registerer); err != nil {
			return nil, fmt.Errorf("worker config: %w", err)
		}
	}
	return &Worker{
		breachHook: hook,
		cfg:        cfg,
		handler:    handler,
		logger:     logger,
		reg:        deps.Registerer,
		ready:      deps.Readiness,
		m:          newMetrics(nil), // registered by Run, on metricsReg
		metricsReg: poolRegisterer(deps.Registerer, cfg.Pool),
		names:      names,
		limitView:  view,
		conn:       conn,
		session:    newSession(),
	}, nil
}

// setClient makes cl the group's client, for client and cl.
func (w *Worker) setClient(cl *kgo.Client) {
	w.cl.Store(cl)
	close(w.clSet)
}

// client returns the group's client, waiting for Run to have stored it (see cl).
func (w *Worker) client() *kgo.Client {
	<-w.clSet
	return w.cl.Load()
}

// ID is the worker ID written into outcome records.
func (w *Worker) ID() string { return w.cfg.WorkerID }

// Config returns the worker's configuration, defaults filled in.
func (w *Worker) Config() Config { return w.cfg }

func (w *Worker) hooks(role string) []kgo.Opt {
	if w.reg == nil {
		return nil
	}
	if w.names.PoolName != "" {
		role += "-" + w.names.PoolName // workers of several pools may share a registerer
	}
	return []kgo.Opt{kafka.ClientMetrics(w.reg, role)}
}

func (w *Worker) opts(role string, extra ...[]kgo.Opt) []kgo.Opt {
	opts := append([]kgo.Opt(nil), w.conn...)
	for _, e := range extra {
		opts = append(opts, e...)
	}
	return append(opts, w.hooks(role)...)
}

// Run consumes until ctx ends, then shuts down gracefully: it stops fetching and starting records, commits and
// leaves the group at once (its partitions move to other workers, which wait only for the ticks still running
// here), lets the running handlers finish within the grace period (then cuts them), and writes their outcomes.
// It returns nil on such a stop.
func (w *Worker) Run(ctx context.Context) error {
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("worker: Run is already running")
	}
	defer w.running.Store(false)
	unregister, err := w.m.register(w.metricsReg)
	if err != nil {
		return fmt.Errorf("worker: registering its metrics (a worker of pool %s already runs on this registerer?): %w", cmp.Or(w.names.PoolName, kafka.DefaultPool), err)
	}
	defer unregister()
	if w.limitView != nil {
		unregisterView, err := registerAll(w.metricsReg, w.limitView.Collectors())
		if err != nil {
			return fmt.Errorf("worker: registering the limits' metrics: %w", err)
		}
		defer unregisterView()
	}
	if w.cl.Load() != nil {
		w.session = newSession() // a Run before this one: start afresh
	}
	if w.cfg.Forward != "" {
		return w.runForward(ctx)
	}
	w.logger.Info("starting worker", "worker_id", w.cfg.WorkerID, "group", w.names.WorkerGroup, "topic", w.names.Work,
		"concurrency", w.cfg.Concurrency, "max_attempts", w.cfg.MaxAttempts, "start", w.cfg.Start.String())

	prod, err := w.openProducer(ctx)
	if err != nil {
		return err
	}
	closeProd := sync.OnceFunc(prod.Close)
	defer closeProd()
	tailCl, err := w.openLedger(prod)
	if err != nil {
		return err
	}
	defer tailCl.Close()
	defer background(ctx, w.ledger.Run)()

	hardCtx, hardCancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer hardCancel(nil)
	w.hardCtx = hardCtx
	w.runq = make(chan run)
	var runners sync.WaitGroup
	w.runners(&runners)
	w.draining = make(chan struct{})
	w.commitWake = make(chan struct{}, 1)

	pollCtx, stopPoll := context.WithCancelCause(ctx)
	defer stopPoll(nil)
	w.pollCtx, w.stopPoll = pollCtx, stopPoll
	cl, err := w.openConsumer()
	if err != nil {
		close(w.runq) // no lane was made: the runners return at once
		runners.Wait()
		return err
	}
	w.setClient(cl)
	stopCommitter := background(ctx, w.committer)
	stopSummary := background(ctx, func(ctx context.Context) { w.summarize(ctx, time.Minute) })
	defer stopSummary()
	if w.breachHook != nil {
		defer background(ctx, func(ctx context.Context) { _ = w.breachHook.Run(ctx) })()
	}

	stopView := func() {}
	if w.limitView != nil { // started once fatal can stop the poll loop
		stopView = background(ctx, func(ctx context.Context) {
			if err := w.limitView.Run(ctx); err != nil {
				// A worker that may not read the limits could start no limited tick: it stops, naming the
				// permission, as it does for every other topic it needs.
				w.logger.Error("following the limits topic", "topic", w.names.Limits, "error", err)
				w.fatal(err)
			}
		})
		defer stopView()
	}
	pollErr := w.poll(pollCtx, cl)

	w.stopBy = time.Now().Add(max(w.cfg.Grace, 0) + StopMargin)
	lanes := w.leave(ctx, cl, pollErr, stopCommitter)
	w.waitRuns(append(lanes, w.retiringLanes()...), hardCancel, closeProd)
	close(w.runq) // every lane has stopped: nothing is handed over any more
	runners.Wait()
	w.flush(ctx, prod, closeProd, lanes)
	stopSummary()
	stopView() // before the last line, which says how the stop went
	if n := w.unrecorded.Load(); n > 0 || w.gaveUp > 0 {
		w.logger.Warn("worker stopped; records not written (the broker did not take them): the ticks concerned keep their offsets uncommitted, and their next owner runs them again, marked interrupted",
			"outcomes_not_written", n, "runs_not_recorded", w.gaveUp, "took", time.Since(w.stopBy.Add(-max(w.cfg.Grace, 0)-StopMargin)).Round(time.Millisecond))
	} else {
		w.logger.Info("worker stopped")
	}
	return pollErr
}

// StopMargin is how long past the grace period a stopping worker may take to record what its runs did (their
// ledger entries and outcomes, its offsets). Past it, a broker that does not take them (unreachable) does not
// hold the stop up: what is not written yet is given up, said in the last log line, and the ticks concerned run
// again on their next owner, marked interrupted.
const StopMargin = 4 * time.Second

// stopLeft is the time left to the stop's deadline, at least min.
func (w *Worker) stopLeft(min time.Duration) time.Duration {
	return max(time.Until(w.stopBy), min)
}

// openProducer opens the client that writes the ledger, outcomes and dead letters, and checks that the results
// topic has a partition for every work partition.
func (w *Worker) openProducer(ctx context.Context) (*kgo.Client, error) {
	prod, err := kgo.NewClient(w.opts("producer", kafka.WorkerProducerOpts())...)
	if err != nil {
		return nil, fmt.Errorf("worker: producer client: %w", err)
	}
	if w.resultParts, w.dlqParts, err = w.partitionCounts(ctx, prod); err != nil {
		prod.Close()
		return nil, err
	}
	workParts, err := kafka.WorkPartitions(ctx, kadm.NewClient(prod), w.names.Work)
	if err != nil {
		prod.Close()
		return nil, fmt.Errorf("worker: %w", err)
	}
	if w.resultParts < workParts {
		prod.Close()
		// Results partition p is work partition p's execution ledger.
		return nil, fmt.Errorf("worker: topic %s has %d partitions, fewer than the %d of %s: add partitions to it (kafka-topics --alter --partitions %d)",
			w.names.Results, w.resultParts, workParts, w.names.Work, workParts)
	}
	w.prod = prod
	return prod, nil
}

// openLedger makes the execution ledger, writing through prod and reading back through the client it returns
// (the caller closes it once the ledger has stopped).
func (w *Worker) openLedger(prod *kgo.Client) (*kgo.Client, error) {
	tailCl, err := kgo.NewClient(w.opts("ledger", []kgo.Opt{
		// A partition added for a new lane is fetched from the next fetch request on, so fetches must not
		// wait long on idle partitions.
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.FetchMaxPartitionBytes(1 << 20),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	})...)
	if err != nil {
		return nil, fmt.Errorf("worker: ledger client: %w", err)
	}
	w.ledger = ledger.NewLog(ledger.LogConfig{
		Topic: w.names.Results, Worker: w.cfg.WorkerID, Lease: w.cfg.Lease, MaxClockSkew: w.cfg.MaxClockSkew, Now: w.cfg.Now,
		Producer: prod, Reader: tailCl, ReaderOpts: w.conn, Logger: w.logger,
		Metrics: ledger.Metrics{Unreadable: w.m.ledgerBad, Refused: w.m.ledgerRefused, BatchEntries: w.m.ledgerBatch, Takeover: w.m.takeover},
	})
	return tailCl, nil
}

// openConsumer opens the group's client; it joins the group at once, and its callbacks make and retire the
// lanes.
func (w *Worker) openConsumer() (*kgo.Client, error) {
	w.startAt = w.cfg.Now()
	w.start = w.cfg.Start.Offset(w.startAt)
	cl, err := kgo.NewClient(w.opts("consumer",
		kafka.WorkerGroupOpts(w.names, w.start, w.cfg.SessionTimeout, w.cfg.InstanceID, w.cfg.GroupProtocol),
		[]kgo.Opt{
			// Rebalances wait while a polled batch is handed to the lanes, so a batch of a partition that
			// is revoked and reassigned meanwhile can never reach the new lane.
			kgo.BlockRebalanceOnPoll(),
			kgo.OnPartitionsAssigned(w.assigned),
			kgo.OnPartitionsRevoked(w.revoked),
			kgo.OnPartitionsLost(w.lost),
			kgo.AdjustFetchOffsetsFn(w.pinStart),
		})...)
	if err != nil {
		return nil, fmt.Errorf("worker: consumer client: %w", err)
	}
	return cl, nil
}

// leave is the first half of the shutdown, once the poll loop has returned: no lane starts another record, the
// finished offsets are committed, and the worker leaves the group, so that its partitions move on now rather
// than after the runs still going. It returns the lanes that were assigned.
func (w *Worker) leave(ctx context.Context, cl *kgo.Client, pollErr error, stopCommitter func()) []*lane {
	if w.ready != nil {
		w.ready.Set(ReadinessCondition, false) // shutting down: not ready from the first moment
	}
	w.logger.Info("stopping worker", "grace", w.cfg.Grace)
	close(w.draining)
	lanes := w.allLanes()
	for _, l := range lanes {
		<-l.done // nothing more starts
	}
	stopCommitter()
	// Bounded: with the broker unreachable a commit would wait for it.
	commitCtx, cancelCommit := context.WithTimeout(context.WithoutCancel(ctx), min(3*time.Second, w.stopLeft(time.Second)))
	w.commit(commitCtx)
	cancelCommit()
	// Close leaves the group (OnPartitionsRevoked runs first: it commits and retires the lanes, whose runs go on).
	memberID, _ := cl.GroupMetadata() // the leave below names it
	cl.Close()
	if w.cfg.InstanceID != "" && !errors.Is(pollErr, ErrFencedInstance) {
		w.leaveStatic(ctx, memberID)
	}
	return lanes
}

// flush is the last half of the shutdown, once every run has ended: the ledger's entries and the outcomes are
// written, and nothing of this Run outlives it (a Run after it starts from a new session): the records still
// unacknowledged fail once the producer closes, their callbacks run, and the retired lanes close their ledgers.
func (w *Worker) flush(ctx context.Context, prod *kgo.Client, closeProd func(), lanes []*lane) {
	flushCtx, cancelFlush := context.WithTimeout(context.WithoutCancel(ctx), min(10*time.Second, w.stopLeft(500*time.Millisecond)))
	w.ledger.Flush(flushCtx)
	if err := prod.Flush(flushCtx); err != nil {
		w.logger.Warn("flushing outcome records", "error", err)
	}
	cancelFlush()
	closeProd()
	for _, l := range append(lanes, w.retiringLanes()...) {
		l.waitPending(min(5*time.Second, w.stopLeft(100*time.Millisecond)))
	}
	w.closing.Wait()
}

// retiringLanes returns the lanes no longer assigned whose runs go on.
func (w *Worker) retiringLanes() []*lane {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*lane, 0, len(w.retiring))
	for l := range w.retiring {
		out = append(out, l)
	}
	return out
}

// allLanes returns the current lanes.
func (w *Worker) allLanes() []*lane {
	w.mu.Lock()
	defer w.mu.Unlock()
	lanes := make([]*lane, 0, len(w.lanes))
	for _, l := range w.lanes {
		lanes = append(lanes, l)
	}
	return lanes
}

// leaveStatic removes this static member from the group. Close does not send LeaveGroup for a static member
// (the point of static membership is that a restart keeps the assignment), so without this a graceful stop
// would leave its partitions idle for the session timeout. It leaves as memberID (see kafka.LeaveStatic), so
// that a worker stopping just after a duplicate took its instance ID does not remove the duplicate.
func (w *Worker) leaveStatic(ctx context.Context, memberID string) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(w.conn...)
	if err != nil {
		w.logger.Warn("leaving the group by instance ID", "instance_id", w.cfg.InstanceID, "error", err)
		return
	}
	defer cl.Close()
	err = kafka.LeaveStatic(lctx, cl, w.names.WorkerGroup, w.cfg.InstanceID, memberID, "graceful stop")
	switch {
	case errors.Is(err, kerr.FencedInstanceID):
		w.logger.Warn("not leaving the group: another worker holds this instance ID now", "instance_id", w.cfg.InstanceID)
	case err != nil:
		w.logger.Warn("leaving the group by instance ID", "instance_id", w.cfg.InstanceID, "error", err)
	}
}

// partitionCounts returns the partition counts of the results and dead-letter topics.
func (w *Worker) partitionCounts(ctx context.Context, cl *kgo.Client) (results, dlq int, err error) {
	adm := kadm.NewClient(cl)
	rt, err := kafka.WaitTopic(ctx, adm, w.names.Results)
	if err != nil {
		return 0, 0, fmt.Errorf("worker: %w", err)
	}
	dt, err := kafka.WaitTopic(ctx, adm, w.names.DLQ)
	if err != nil {
		return 0, 0, fmt.Errorf("worker: %w", err)
	}
	return len(rt.Partitions), len(dt.Partitions), nil
}

// poll fetches records and hands each partition's batch to its lane until ctx ends.
//
// Each batch goes into its lane's queue at once, so a lane keeps reading while it holds ticks for their instant
// (queue.go). Memory stays bounded by pausing: a partition is paused when its lane holds laneQueueMax records
// and resumed by the lane below half of that. kgo strips a paused partition from every later poll (its buffered
// data is dropped and fetched again on resume).
func (w *Worker) poll(ctx context.Context, cl *kgo.Client) error {
	for {
		fetches := cl.PollRecords(ctx, 10_000)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			cl.AllowRebalance()
			if cause := context.Cause(ctx); kafka.IsACLError(cause) {
				return cause
			}
			return nil
		}
		fenced := false
		var denied error
		fetches.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, kerr.FencedInstanceID) {
				fenced = true
				return
			}
			if !errors.Is(err, context.Canceled) {
				w.logger.Warn("fetch error", "topic", topic, "partition", p, "error", err)
			}
			denied = cmp.Or(denied, w.denied(topic, err))
		})
		if fenced {
			cl.AllowRebalance()
			w.logger.Error("fenced: another worker joined the group with this instance ID; stopping", "instance_id", w.cfg.InstanceID)
			return fmt.Errorf("worker %s: instance ID %q: %w", w.cfg.WorkerID, w.cfg.InstanceID, ErrFencedInstance)
		}
		if denied != nil {
			cl.AllowRebalance()
			return fmt.Errorf("consuming: %w", denied)
		}
		fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
			if len(ftp.Records) == 0 || ftp.Topic != w.names.Work {
				return
			}
			w.mu.Lock()
			l := w.lanes[ftp.Partition]
			w.mu.Unlock()
			if l == nil {
				return // not ours any more; kgo will not return it again
			}
			if l.enqueue(ftp.Records) {
				cl.PauseFetchPartitions(map[string][]int32{ftp.Topic: {ftp.Partition}})
			}
		})
		cl.AllowRebalance()
	}
}

// assigned starts a lane per new partition. It runs before fetching of those partitions begins.
func (w *Worker) assigned(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
	parts := assigned[w.names.Work]
	w.mu.Lock()
	for _, p := range parts {
		if old := w.lanes[p]; old != nil { // cannot happen: revoked or lost always comes first
			old.cancel(errRevoked)
		}
		l := w.newLane(p)
		w.lanes[p] = l
		go l.run()
	}
	n := len(w.lanes)
	w.mu.Unlock()
	// A partition paused by a lane that was revoked mid-batch must flow again for its new lane.
	cl.ResumeFetchPartitions(map[string][]int32{w.names.Work: parts})
	w.m.partitions.Set(float64(n))
	if w.ready != nil && !w.assignedYet.Swap(true) {
		w.ready.Set(ReadinessCondition, true)
	}
	w.logger.Info("partitions assigned", "partitions", parts, "owned", n)
}

// revoked stops the lanes of the revoked partitions from starting records and commits what they finished;
// their running handlers go on (see lane), and their outcomes reach the ledger, where the partitions' next
// owners read them. Nothing is committed for them afterwards.
func (w *Worker) revoked(ctx context.Context, cl *kgo.Client, revoked map[string][]int32) {
	parts := revoked[w.names.Work]
	if len(parts) == 0 {
		return
	}
	lanes := w.stopLanes(parts, errRevoked)
	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	offsets, meta := w.retire(lanes, true)
	if len(offsets) > 0 {
		commitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		w.commitOffsets(commitCtx, cl, offsets, meta)
	}
	w.logger.Info("partitions revoked", "partitions", parts, "runs_going_on", running(lanes))
}

// lost stops the lanes of lost partitions, without committing: the group expired this worker (it was frozen or
// cut off) or this worker could not reach the group's coordinator (the broker went away), and another member
// may own them already. Their runs go on under their leases, as after a revocation: a run whose lease cannot be
// renewed is cut when the lease ends (and an exec handler's process group is killed by its supervisor even when
// this process is frozen), and the partition's next owner waits for the lease before it runs the tick again.
// Cutting the runs here would turn every outage of the broker into interrupted ticks.
func (w *Worker) lost(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	parts := lost[w.names.Work]
	if len(parts) == 0 {
		return
	}
	lanes := w.stopLanes(parts, errLost)
	w.retire(lanes, false)
	w.logger.Warn("partitions lost", "partitions", parts, "runs_going_on", running(lanes))
	w.settle(lanes)
}

// settleMax bounds settle: the producer's delivery timeout (kafka.WorkerProducerOpts), past which what it holds
// has failed anyway.
const settleMax = time.Minute

// settle waits until the lost lanes' attempts have left the starting set (their starts confirmed, or taken back)
// and every ledger entry queued so far is acknowledged, or settleMax passed, or the worker stops. kgo calls lost
// from its group loop, which rejoins the group only once lost returns, and a rebalance of the classic protocol
// waits for every member: after an outage of the broker, what this worker wrote during it (the outcome of a run
// that ended meanwhile, the release of a start it takes back) reaches the ledger before any new owner of its
// partitions claims them and reads them. Without it, a new owner could find such a run unfinished, its lease long
// over, and run the tick again as an interrupted one, though it ran once.
func (w *Worker) settle(lanes []*lane) {
	ctx, cancel := context.WithTimeout(w.pollCtx, settleMax)
	defer cancel()
	begin := time.Now()
	for _, l := range lanes {
		select {
		case <-l.starts.idle():
		case <-ctx.Done():
			return
		}
	}
	w.ledger.Flush(ctx)
	w.logger.Debug("lost partitions settled in the ledger", "took", time.Since(begin).Round(time.Millisecond), "error", ctx.Err())
}

// stopLanes stops the lanes of parts from starting records (their runs go on), and waits until nothing more
// starts.
func (w *Worker) stopLanes(parts []int32, cause error) []*lane {
	w.mu.Lock()
	var lanes []*lane
	for _, p := range parts {
		if l := w.lanes[p]; l != nil {
			lanes = append(lanes, l)
			l.cancel(cause)
		}
	}
	w.mu.Unlock()
	for _, l := range lanes {
		<-l.done
	}
	return lanes
}

// running counts the records the lanes are still handling.
func running(lanes []*lane) int {
	n := 0
	for _, l := range lanes {
		n += l.handling()
	}
	return n
}

// retire removes lanes and returns their uncommitted finished offsets (and the offsets' metadata) when commit
// is set.
func (w *Worker) retire(lanes []*lane, commit bool) (map[string]map[int32]kgo.EpochOffset, map[int32]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var offsets map[string]map[int32]kgo.EpochOffset
	meta := map[int32]string{}
	for _, l := range lanes {
		if m := l.commitMeta(l.doneOffset.Offset); commit && l.dirty && m != "" {
			if offsets == nil {
				offsets = map[string]map[int32]kgo.EpochOffset{w.names.Work: {}}
			}
			offsets[w.names.Work][l.partition] = l.doneOffset
			meta[l.partition] = m
		}
		l.active = false
		l.ledger.Retire()
		w.retiring[l] = true // its runs go on: a shutdown waits for them too (waitRuns); closeLedger forgets it
		if w.lanes[l.partition] == l {
			delete(w.lanes, l.partition)
		}
		w.closing.Go(l.closeLedger)
	}
	w.m.partitions.Set(float64(len(w.lanes)))
	return offsets, meta
}

// waitRuns waits for the runs of lanes to end, cutting them when the grace period ends, and for their outcome
// records. A run that has not ended by the stop's deadline waits for a record the broker does not take (a
// ledger entry, an outcome): the producer is closed then, which fails every record it holds, and the run ends.
func (w *Worker) waitRuns(lanes []*lane, hardCancel context.CancelCauseFunc, closeProd func()) {
	all := make(chan struct{})
	go func() {
		for _, l := range lanes {
			l.runs.Wait()
		}
		close(all)
	}()
	timer := time.NewTimer(w.cfg.Grace)
	defer timer.Stop()
	select {
	case <-all:
	case <-timer.C:
		w.logger.Warn("grace period over: cancelling in-flight handlers", "grace", w.cfg.Grace, "running", running(lanes))
		hardCancel(errGraceExpired)
		deadline := time.NewTimer(w.stopLeft(0) - time.Second)
		defer deadline.Stop()
		select {
		case <-all:
		case <-deadline.C:
			w.gaveUp = running(lanes)
			w.logger.Warn("runs still waiting for the broker to take their records at the stop's deadline: giving those records up",
				"running", w.gaveUp, "stop_margin", StopMargin)
			closeProd()
			<-all
		}
	}
	for _, l := range lanes {
		l.waitPending(min(10*time.Second, w.stopLeft(100*time.Millisecond)))
	}
}

// committer commits finished offsets whenever a lane finishes a record: at once when the worker is idle, at
// most once per commitSpacing under load (finished records wait for the next commit meanwhile). What a crash
// leaves uncommitted is not run again: the next owner reads its outcomes in the ledger. Sparse commits spare
// the broker a write to its offsets topic per round trip.
func (w *Worker) committer(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.commitWake:
		}
		if wait := commitSpacing - time.Since(last); wait > 0 && !sleep(ctx, wait) {
			return
		}
		last = time.Now()
		if !w.commit(ctx) {
			select { // retry failed commits after a pause
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				w.wakeCommitter()
			}
		}
	}
}

// commitSpacing is the least time between the starts of two commits of the committer.
const commitSpacing = 100 * time.Millisecond

func (w *Worker) wakeCommitter() {
	select {
	case w.commitWake <- struct{}{}:
	default:
	}
}

// commit commits every lane's finished offset not yet committed. It reports false when a commit failed (the
// offsets stay pending).
func (w *Worker) commit(ctx context.Context) bool {
	cl := w.client()
	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	w.mu.Lock()
	offsets := map[string]map[int32]kgo.EpochOffset{}
	meta := map[int32]string{}
	var lanes []*lane
	for p, l := range w.lanes {
		if l.dirty {
			m := l.commitMeta(l.doneOffset.Offset)
			if m == "" {
				continue // the lane's claim does not stand yet: a commit now would carry no ledger position
			}
			if offsets[w.names.Work] == nil {
				offsets[w.names.Work] = map[int32]kgo.EpochOffset{}
			}
			offsets[w.names.Work][p] = l.doneOffset
			meta[p] = m
			l.dirty = false
			lanes = append(lanes, l)
		}
	}
	w.mu.Unlock()
	if len(lanes) == 0 {
		return true
	}
	if w.commitOffsets(ctx, cl, offsets, meta) {
		for _, l := range lanes {
			l.ledger.Forget(offsets[w.names.Work][l.partition].Offset)
		}
		return true
	}
	w.mu.Lock()
	for _, l := range lanes { // try again unless something newer is pending or the lane is gone
		if l.active && !l.dirty {
			l.dirty = true
		}
	}
	w.mu.Unlock()
	return false
}

func (w *Worker) commitOffsets(ctx context.Context, cl *kgo.Client, offsets map[string]map[int32]kgo.EpochOffset, meta map[int32]string) bool {
	var cerr error
	cl.CommitOffsetsSync(ledger.WithCommitMeta(ctx, w.names.Work, meta), offsets, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = commitErr(resp, err)
	})
	if cerr != nil {
		w.m.commits.WithLabelValues("error").Inc()
		w.logger.Warn("committing offsets", "offsets", offsetsAttr(offsets), "error", cerr)
		return false
	}
	w.m.commits.WithLabelValues("ok").Inc()
	w.logger.Debug("committed offsets", "offsets", offsetsAttr(offsets))
	return true
}

func offsetsAttr(offsets map[string]map[int32]kgo.EpochOffset) map[int32]int64 {
	out := map[int32]int64{}
	for _, ps := range offsets {
		for p, eo := range ps {
			out[p] = eo.Offset
		}
	}
	return out
}

// pinStart runs once per assignment, before fetching starts. For every partition without a committed offset
// (kgo hands it the configured start offset) it resolves the start to an exact offset and commits it. Without
// this, a brand-new group that crashed before its first commit would resolve "latest" again on the next
// assignment and skip the ticks written in between.
func (w *Worker) pinStart(ctx context.Context, offsets map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
	defer w.adjusted(offsets[w.names.Work])
	cl := w.client()
	var fresh []int32
	for p, o := range offsets[w.names.Work] {
		if o == w.start || o.EpochOffset().Offset < 0 {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) == 0 {
		return offsets, nil
	}
	adm := kadm.NewClient(cl)
	var listed kadm.ListedOffsets
	var err error
	switch w.cfg.Start.kind {
	case "earliest":
		listed, err = adm.ListStartOffsets(ctx, w.names.Work)
	case "ago":
		listed, err = adm.ListOffsetsAfterMilli(ctx, w.startAt.Add(-w.cfg.Start.ago).UnixMilli(), w.names.Work)
	default:
		// The last stable offset, as a read_committed consumer's "latest": an open transaction's ticks
		// sit below the high watermark and must still be read once committed.
		listed, err = adm.ListCommittedOffsets(ctx, w.names.Work)
	}
	if err != nil {
		w.logger.Warn("resolving the start offset of new partitions; using the unpinned start", "partitions", fresh, "error", err)
		return offsets, nil
	}
	// The pin carries no ledger position: the partition's first owner reads its whole retained ledger, as for
	// a commit of an older build. A position at the ledger's end would claim that nothing in it is about
	// offsets from the pinned start on, which does not hold: an earlier owner in this group may have run ticks
	// there while all its commits were refused (this pin included), the group's offsets may have expired or
	// been deleted while its ticks and outcomes are retained (StartEarliest, StartAgo), and the fencing token
	// must go on above every claim still in the ledger, not restart at 1.
	commit := map[string]map[int32]kgo.EpochOffset{w.names.Work: {}}
	for _, p := range fresh {
		lo, ok := listed.Lookup(w.names.Work, p)
		if !ok || lo.Err != nil {
			continue
		}
		offsets[w.names.Work][p] = kgo.NewOffset().At(lo.Offset)
		commit[w.names.Work][p] = kgo.EpochOffset{Epoch: -1, Offset: lo.Offset}
	}
	if len(commit[w.names.Work]) > 0 && w.commitOffsets(ctx, cl, commit, nil) {
		w.logger.Info("new group: pinned start offsets", "start", w.cfg.Start.String(), "offsets", offsetsAttr(commit))
	}
	return offsets, nil
}

// adjusted tells the lanes of parts that their start offsets are settled.
func (w *Worker) adjusted(parts map[int32]kgo.Offset) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := range parts {
		if l := w.lanes[p]; l != nil {
			select {
			case <-l.adjusted:
			default:
				close(l.adjusted)
			}
		}
	}
}

// commitErr returns the first error of a commit: the request's or a partition's.
func commitErr(resp *kmsg.OffsetCommitResponse, err error) error {
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("partition %d: %w", p.Partition, err)
			}
		}
	}
	return nil
}

// denied returns a refusal of the worker's group or of a topic it reads as an ACLError, and nil for any other
// error: a missing ACL stops the worker instead of a fetch loop that logs the refusal forever.
func (w *Worker) denied(topic string, err error) error {
	switch {
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		return kafka.NeedACL(err, "Read", "group", w.names.WorkerGroup)
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return kafka.NeedACL(err, "Read", "topic", cmp.Or(topic, w.names.Work))
	}
	return nil
}

// refusedCancels counts n cancel records of partition p that were not written transactionally, and warns about
// them at most once a minute.
func (w *Worker) refusedCancels(p int32, n int) {
	w.m.cancelsRefused.Add(float64(n))
	now := time.Now().UnixNano()
	if last := w.cancelWarned.Load(); now-last < int64(time.Minute) || !w.cancelWarned.CompareAndSwap(last, now) {
		return
	}
	w.logger.Warn("cancel record not written in a transaction (not the leader's): ignored; who writes cancels to the work topic?",
		"partition", p, "count", n)
}

// fatal stops the worker with err, gracefully (in-flight handlers finish, offsets are committed): for what
// retrying cannot cure, a missing ACL.
func (w *Worker) fatal(err error) {
	if w.stopPoll != nil {
		w.stopPoll(err)
	}
}

// poolRegisterer labels the worker's metrics with its pool ("default" for the default pool), so that the
// workers of every pool can be told apart on one dashboard.
func poolRegisterer(reg prometheus.Registerer, pool string) prometheus.Registerer {
	if reg == nil {
		return nil
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"pool": cmp.Or(pool, kafka.DefaultPool)}, reg)
}

// background runs fn in a goroutine under a context that ctx's end does not end (a shutdown step decides when
// it stops), and returns the function that ends that context and waits for fn to return. Calling it again
// returns at once.
func background(ctx context.Context, fn func(context.Context)) (stop func()) {
	bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(bctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
