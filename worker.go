package tickgroup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/clock"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// WorkerConfig configures a Worker. Every field but Kafka has a usable zero value. Its durations follow the
// package's rule (see Durations in the package documentation): zero is the default, negative is none where the
// field can be none (Timeout, Grace), an error elsewhere.
type WorkerConfig struct {
	Kafka KafkaConfig
	// ID names the worker in the ledger, in logs and in Tick.Worker. Defaults to <hostname>-<pid>.
	ID string
	// Concurrency bounds the handlers running at once in this worker. Defaults to 64.
	Concurrency int
	// MaxAttempts is how many times a tick is tried before it goes to the dead-letter topic, for ticks whose
	// schedule sets none. Defaults to 3.
	MaxAttempts int
	// Backoff is the delay before the first retry, doubled per retry up to MaxBackoff, with jitter. Default to
	// 1s and 30s; a negative value is an error, and so is a MaxBackoff below Backoff.
	Backoff, MaxBackoff time.Duration
	// Timeout bounds one attempt of a tick whose schedule sets none (Schedule.Timeout). Defaults to none; a
	// negative value means none too.
	Timeout time.Duration
	// Grace is how long running handlers may go on once Run's context ends; the worker leaves the group at
	// once. Defaults to 30s; a negative value means none: the handlers' contexts end as Run's does.
	Grace time.Duration
	// GroupProtocol is the worker group's protocol. Defaults to GroupProtocolClassic; GroupProtocolConsumer
	// leaves the session timeout to the broker (SessionTimeout then does not apply) and refuses an InstanceID.
	GroupProtocol GroupProtocol
	// SessionTimeout is how long a crashed worker keeps its partitions. Defaults to 6s; a negative value is an
	// error. Classic protocol only.
	SessionTimeout time.Duration
	// InstanceID, when set, makes the worker a static group member (see the README); two running workers must
	// never share one.
	InstanceID string
	// Lease is how long a run may go on without its worker proving it still owns the tick's partition; a
	// partition's next owner waits for it before it runs a cut-off tick again. Defaults to 5s; at least 100ms
	// and at most 10m, so a negative value is an error.
	Lease time.Duration
	// MaxClockSkew is the clock difference between hosts that the lease rule tolerates; the worker warns while
	// its host is off the broker's clock by more. Defaults to 1s; a negative value is an error.
	MaxClockSkew time.Duration
	// PriorityAging is how long a tick waits for its limit before its priority counts one higher (a priority-1
	// tick outranks a fresh priority-5 one after four of them), so that a low priority is delayed, never
	// starved. Defaults to 15s; at least 1s and at most 1h.
	PriorityAging time.Duration
	// SkipInterrupted records a tick whose earlier run was cut off as interrupted and never runs it again (at
	// most once). False, the default, runs it again with Tick.Interrupted set (at least once).
	SkipInterrupted bool
	// BreachWebhook, when set, is the URL each deadline breach this worker sees is POSTed to (a schedule's
	// StartBy or FinishBy): JSON of the breach, with a Tickgroup-Signature header (HMAC-SHA256 of
	// "TIMESTAMP.BODY" under BreachSecret, when set), retried with backoff up to 5 tries; see the README.
	// BreachSecret is never logged.
	BreachWebhook string
	BreachSecret  []byte
	// RecordOutput, when positive, keeps the last RecordOutput bytes (at most MaxRecordOutput) of each tick's
	// last attempt's output in its outcome record (Outcome.Output), for ticker history and the console: what a
	// handler hands to Tick.RecordOutput (an exec handler: its standard output and error). Zero, the default,
	// keeps none: output may hold secrets, and the results topic is read by every operator.
	RecordOutput int
	// Start is where a new group starts reading a partition without a committed offset. Defaults to
	// StartAgo(10 * time.Minute).
	Start StartPosition
	// Pool is the worker pool served: the worker runs only the ticks of the schedules that name it
	// (Schedule.Pool), from the pool's own topics and group. Defaults to the default pool.
	Pool string
	// Forward, when set, replaces the handler: every tick is republished to this topic in a transaction that
	// also commits the consumed offsets (exactly once for effects that stay in Kafka). NewWorker then takes a
	// nil Handler.
	Forward string
	// Logger receives the worker's logs. Defaults to discarding them.
	Logger *slog.Logger
	// Registerer receives the worker's metrics (tickgroup_worker_*) and its Kafka clients'. Nil registers
	// nothing.
	Registerer prometheus.Registerer
}

// Worker runs the ticks of its share of the work topic's partitions.
type Worker struct {
	cfg        worker.Config
	w          *worker.Worker
	clockOpts  []kgo.Opt // the clock client's, without metrics
	clockNames kafka.Names
	component  string // the clock series' component label
	reg        prometheus.Registerer
	logger     *slog.Logger
	ready      admin.Readiness
	running    atomic.Bool // a Run is under way
}

// NewWorker checks cfg and returns a worker that runs ticks through h. It opens no connection: Run does.
func NewWorker(cfg WorkerConfig, h Handler) (*Worker, error) {
	if (h == nil) == (cfg.Forward == "") {
		return nil, errors.New("tickgroup: a worker takes a handler or a forward topic, and not both")
	}
	var handler worker.Handler
	if h != nil {
		handler = h.handle()
	}
	return newWorker(cfg, handler)
}

// newWorker is NewWorker for a handler of the worker package (the commands' exec and HTTP handlers).
func newWorker(cfg WorkerConfig, handler worker.Handler) (*Worker, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ID == "" {
		cfg.ID = kafka.InstanceName("worker")
	}
	protocol, err := cfg.GroupProtocol.internal(cfg.InstanceID)
	if err != nil {
		return nil, err
	}
	wc := worker.Config{
		Kafka:          cfg.Kafka.internal(),
		WorkerID:       cfg.ID,
		Concurrency:    cfg.Concurrency,
		MaxAttempts:    cfg.MaxAttempts,
		Backoff:        cfg.Backoff,
		MaxBackoff:     cfg.MaxBackoff,
		Timeout:        noneAs(cfg.Timeout, 0), // the worker's none
		Grace:          cfg.Grace,              // negative: none, as the worker reads it
		SessionTimeout: cfg.SessionTimeout,
		GroupProtocol:  protocol,
		InstanceID:     cfg.InstanceID,
		Lease:          cfg.Lease,
		MaxClockSkew:   cfg.MaxClockSkew,
		PriorityAging:  cfg.PriorityAging,
		Forward:        cfg.Forward,
		Pool:           cfg.Pool,
		RecordOutput:   cfg.RecordOutput,
		BreachWebhook:  cfg.BreachWebhook,
		BreachSecret:   cfg.BreachSecret,
	}
	if cfg.SkipInterrupted {
		wc.OnInterrupted = worker.OnInterruptedSkip
	}
	start, err := worker.ParseStart(string(cfg.Start))
	if err != nil {
		return nil, err
	}
	wc.Start = start
	x := &Worker{logger: logger}
	w, err := worker.New(wc, handler, worker.Deps{Logger: logger, Registerer: cfg.Registerer, Readiness: &x.ready})
	if err != nil {
		return nil, err
	}
	x.w, x.cfg = w, w.Config()
	if x.clockOpts, err = wc.Kafka.Opts(logger); err != nil {
		return nil, err
	}
	x.clockNames, x.reg = wc.Kafka.Names(), cfg.Registerer
	// The worker's clock series carry component="worker" ("worker-<pool>" for another pool than the default),
	// and its clock client's metrics the role "clock-worker" ("clock-worker-<pool>"): a ticker, or a worker of
	// another pool, in the same process measures the clock too.
	x.component = "worker"
	if cfg.Pool != "" && cfg.Pool != "default" {
		x.component += "-" + cfg.Pool
	}
	return x, nil
}

// ID is the worker's ID.
func (x *Worker) ID() string { return x.cfg.WorkerID }

// Ready reports whether the worker has joined its group, and if not, why.
func (x *Worker) Ready() (bool, string) { return x.ready.Ready() }

// Run creates the worker's topics where they are missing, runs ticks until ctx ends, then leaves the group at
// once and lets running handlers finish within the grace period. It opens its Kafka clients and closes them
// before it returns. It returns nil after a stop on the end of ctx, an error wrapping ErrInstanceFenced when
// another process took this worker's InstanceID, and otherwise what stopped it. A Worker can Run again once Run
// has returned, never twice at once.
func (x *Worker) Run(ctx context.Context) error {
	if !x.running.CompareAndSwap(false, true) {
		return errors.New("tickgroup: Worker.Run is already running")
	}
	defer x.running.Store(false)
	if err := prepareWorkerTopics(ctx, x.cfg, x.logger); err != nil {
		return runResult(ctx, err)
	}
	reg := scoped(x.reg) // the clock's series, unregistered when Run returns (the worker's own: by x.w.Run)
	defer reg.release()
	opts := x.clockOpts[:len(x.clockOpts):len(x.clockOpts)]
	if reg != nil {
		opts = append(opts, kafka.ClientMetrics(reg, "clock-"+x.component))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	clk, err := clock.New(clock.Config{
		MaxSkew:     x.cfg.MaxClockSkew,
		Consequence: "ticks keep running, but an interrupted tick's rerun may overlap its first run by the excess (the lease, the max clock skew)",
	}, clock.NewKafka(cl, x.clockNames.Clock, x.cfg.WorkerID), x.logger, componentRegisterer(reg.registerer(), x.component))
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return clk.Run(gctx) })
	g.Go(func() error { return x.w.Run(gctx) })
	return runResult(ctx, g.Wait())
}

// prepareWorkerTopics creates the worker's topics of the namespace (so a worker started before any ticker
// works) and the forward topic, with as many partitions as the work topic, where missing.
func prepareWorkerTopics(ctx context.Context, cfg worker.Config, logger *slog.Logger) error {
	opts, err := cfg.Kafka.Opts(nil)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	names := cfg.Kafka.Names().Pool(cfg.Pool)
	// Only the worker's own topics: a worker needs no permission on the ticker and schedules topics.
	if names.PoolName == "" {
		if err := kafka.EnsureTopics(tctx, adm, names, kafka.TopicOptions{Needs: names.WorkerTopics()}); err != nil {
			return fmt.Errorf("preparing topics: %w", err)
		}
	} else if _, err := kafka.EnsurePoolTopics(tctx, adm, names, kafka.TopicOptions{}); err != nil {
		return fmt.Errorf("preparing topics: %w", err)
	}
	if cfg.Forward == "" {
		return nil
	}
	parts, err := kafka.WorkPartitions(tctx, adm, names.Work)
	if err != nil {
		return err
	}
	created, err := kafka.EnsureTopic(tctx, adm, kafka.TopicSpec{Name: cfg.Forward, Partitions: int32(parts)}, -1)
	if err != nil {
		return fmt.Errorf("forward topic: %w", err)
	}
	if created {
		logger.Info("created forward topic", "topic", cfg.Forward, "partitions", parts)
	}
	return nil
}
