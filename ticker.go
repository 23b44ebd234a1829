package tickgroup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/clock"
	"github.com/tickgroup/tickgroup/internal/dispatch"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/shares"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/worklag"
)

// TickerConfig configures a Ticker. Every field but Kafka has a usable zero value. Its durations follow the
// package's rule (see Durations in the package documentation): zero is the default, negative is none where the
// field can be none (Lead), an error elsewhere.
type TickerConfig struct {
	Kafka KafkaConfig
	// Instance names this replica in logs and in the group (the client ID). Defaults to <hostname>-<pid>.
	Instance string
	// InstanceID, when set, makes the replica a static group member: restarted with the same ID within the
	// session timeout, it takes its leadership back at once. Two running replicas must never share one.
	InstanceID string
	// GroupProtocol is the ticker group's protocol. Defaults to GroupProtocolClassic; GroupProtocolConsumer
	// leaves the session timeout and heartbeat interval to the broker (SessionTimeout and HeartbeatInterval then
	// do not apply) and refuses an InstanceID.
	GroupProtocol GroupProtocol
	// SessionTimeout is how long the group waits for a silent replica before another leads. Defaults to 6s; a
	// negative value is an error. Classic protocol only.
	SessionTimeout time.Duration
	// HeartbeatInterval is the group heartbeat interval. Defaults to 1s; a negative value is an error. Classic
	// protocol only.
	HeartbeatInterval time.Duration
	// TransactionTimeout is how long the broker keeps a dead leader's open transaction. Defaults to 10s; a
	// negative value is an error.
	TransactionTimeout time.Duration
	// Lead is how long before its slot a tick is committed (workers hold it and start it on its instant), so a
	// failover shorter than this delays no slot. Defaults to 10s; at most 5m; a negative value means none: each
	// slot is emitted when it falls due.
	Lead time.Duration
	// WorkLagInterval is how often the leader measures the workers' lag (tickgroup_work_lag_*). Defaults to 15s;
	// a negative value is an error.
	WorkLagInterval time.Duration
	// MaxClockSkew is the largest offset of this host's clock from the broker's at which the replica may lead.
	// Defaults to 1s; a negative value is an error.
	MaxClockSkew time.Duration
	// PoolRetry is how long a leader waits before it tries again to make a pool's topics ready when it could
	// not (the pool's schedules wait meanwhile, then catch up). Defaults to 30s; a negative value is an error.
	PoolRetry time.Duration
	// WorkPartitions and ReplicationFactor apply to the topics the ticker creates when they are missing.
	// Defaults to 12 and the broker's default.
	WorkPartitions    int
	ReplicationFactor int
	// Logger receives the ticker's logs. Defaults to discarding them.
	Logger *slog.Logger
	// Registerer receives the ticker's metrics and its Kafka clients'. Nil registers nothing.
	Registerer prometheus.Registerer
}

// Ticker is one replica of a namespace's ticker group: while it owns partition 0 of the ticker topic (each
// partition, with several leaders), it leads and emits every slot of the schedules as ticks, exactly once.
type Ticker struct {
	cfg     TickerConfig
	names   kafka.Names
	opts    []kgo.Opt
	logger  *slog.Logger
	ready   admin.Readiness
	running atomic.Bool // a Run is under way
}

// NewTicker checks cfg and returns a ticker replica. It opens no connection: Run does.
func NewTicker(cfg TickerConfig) (*Ticker, error) {
	if cfg.Instance == "" {
		cfg.Instance = kafka.InstanceName("ticker")
	}
	cfg.SessionTimeout = cmp.Or(cfg.SessionTimeout, 6*time.Second)
	cfg.HeartbeatInterval = cmp.Or(cfg.HeartbeatInterval, time.Second)
	cfg.TransactionTimeout = cmp.Or(cfg.TransactionTimeout, 10*time.Second)
	cfg.WorkLagInterval = cmp.Or(cfg.WorkLagInterval, 15*time.Second)
	cfg.MaxClockSkew = cmp.Or(cfg.MaxClockSkew, clock.DefaultMaxSkew)
	switch {
	case cfg.Lead == 0:
		cfg.Lead = dispatch.DefaultLead
	case cfg.Lead < 0:
		cfg.Lead = 0
	case cfg.Lead > dispatch.MaxLead:
		return nil, fmt.Errorf("tickgroup: lead %s: at most %s", cfg.Lead, dispatch.MaxLead)
	}
	if cfg.WorkLagInterval < 0 || cfg.MaxClockSkew < 0 || cfg.SessionTimeout < 0 || cfg.HeartbeatInterval < 0 || cfg.PoolRetry < 0 || cfg.TransactionTimeout < 0 {
		return nil, errors.New("tickgroup: negative durations in the ticker config")
	}
	if err := topicOptions(cfg.WorkPartitions, cfg.ReplicationFactor).Validate(); err != nil {
		return nil, fmt.Errorf("tickgroup: %w", err)
	}
	if _, err := cfg.GroupProtocol.internal(cfg.InstanceID); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg.Kafka.ClientID = "tickgroup-ticker-" + cfg.Instance
	opts, err := cfg.Kafka.internal().Opts(logger)
	if err != nil {
		return nil, err
	}
	t := &Ticker{cfg: cfg, names: cfg.Kafka.internal().Names(), opts: opts, logger: logger}
	t.ready.Set("schedules", false) // the elector sets "group" (false until it joins, false again once stopping)
	t.ready.Set("calendars", false)
	return t, nil
}

// topicOptions are the options of the topics a ticker creates; counts beyond what Validate accepts stay beyond
// it (they are not wrapped around by the conversion).
func topicOptions(partitions, replicas int) kafka.TopicOptions {
	return kafka.TopicOptions{WorkPartitions: int32(max(min(partitions, kafka.MaxWorkPartitions+1), -1)),
		ReplicationFactor: int16(max(min(cmp.Or(replicas, -1), math.MaxInt16), -2))}
}

// Ready reports whether the replica has read the schedules and the calendars and joined the group (or is out of the election
// because of its clock), and if not, why.
func (t *Ticker) Ready() (bool, string) { return t.ready.Ready() }

// Run creates the namespace's topics where they are missing, joins the election and leads while it holds
// leadership, until ctx ends; then it hands leadership over. It opens its Kafka clients and registers its
// metrics, and closes and unregisters them before it returns. It returns nil after a stop on the end of ctx, an
// error wrapping ErrInstanceFenced when another process took this replica's InstanceID, and otherwise what
// stopped it. A Ticker can Run again once Run has returned, never twice at once.
func (t *Ticker) Run(ctx context.Context) error {
	if !t.running.CompareAndSwap(false, true) {
		return errors.New("tickgroup: Ticker.Run is already running")
	}
	defer t.running.Store(false)
	t.ready.Set("schedules", false) // a Run after another: not ready until this one has read them
	t.ready.Set("calendars", false)
	reg := scoped(t.cfg.Registerer) // what this Run registers, unregistered when it returns
	defer reg.release()
	return runResult(ctx, t.run(ctx, reg.registerer()))
}

// run is Run with its registerer (nil: no metrics).
func (t *Ticker) run(ctx context.Context, reg prometheus.Registerer) error {
	cfg, names := t.cfg, t.names
	clientMetrics := func(role string) kgo.Opt {
		if reg == nil {
			return kgo.WithHooks()
		}
		return kafka.ClientMetrics(reg, role)
	}
	withRole := func(role string) []kgo.Opt { return append(t.opts[:len(t.opts):len(t.opts)], clientMetrics(role)) }
	// The ticker's clock series carry component="ticker": a worker in the same process measures the clock too.
	clockReg := componentRegisterer(reg, "ticker")
	clockOpts := withRole("clock")
	o := topicOptions(cfg.WorkPartitions, cfg.ReplicationFactor)
	o.Needs = names.TickerTopics() // the results topic is made when this principal may, but not needed
	if err := ensureTopics(ctx, cfg.Kafka.internal(), o); err != nil {
		return err
	}
	leaders, err := countLeaders(ctx, t.opts, names)
	if err != nil {
		return err
	}
	view := store.NewView(withRole("schedules"), names.Schedules, names.DLQ, t.logger, reg)
	// With two leaders or more, a replica reads only its leaders' shares of the schedules, once leader 0 has
	// copied them (package shares); leader 0's term keeps the copy.
	view.UseShares(names.Shares, leaders, t.opts)
	var copier *shares.Copier
	if leaders > 1 {
		if copier, err = shares.New(shares.Config{Names: names, Leaders: leaders, ReplicationFactor: o.ReplicationFactor,
			TransactionTimeout: cfg.TransactionTimeout}, t.opts, t.logger, reg); err != nil {
			return err
		}
	}
	// Every replica follows the calendars, as it follows the schedules: a term reads them to their end before it
	// plans (dispatch, calendars.go), and a standby's are warm.
	calendars := calendarstore.NewView(withRole("calendars"), names.Calendars, t.logger, reg)
	disp, err := dispatch.New(dispatch.Config{
		Names:              names,
		Calendars:          calendars,
		TransactionTimeout: cfg.TransactionTimeout,
		Lead:               cfg.Lead,
		PoolRetry:          cfg.PoolRetry,
		PoolTopics:         kafka.TopicOptions{WorkPartitions: o.WorkPartitions, ReplicationFactor: o.ReplicationFactor},
		ProducerOpts: func(k int32) []kgo.Opt {
			if reg == nil {
				return nil
			}
			return []kgo.Opt{kafka.LeaderClientMetrics(reg, k)}
		},
	}, t.opts, view, t.logger, reg)
	if err != nil {
		return err
	}
	lag, err := worklag.New(worklag.Config{Topic: names.Work, Group: names.WorkerGroup, Interval: cfg.WorkLagInterval,
		Pools: poolLister(names, t.opts, t.logger)}, t.opts, t.logger, reg)
	if err != nil {
		return err
	}
	clockClient, err := kgo.NewClient(clockOpts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer clockClient.Close()
	clk, err := clock.New(clock.Config{
		MaxSkew:     cfg.MaxClockSkew,
		Consequence: "this replica does not take part in the election until it is back within",
		Readiness:   &t.ready,
	}, clock.NewKafka(clockClient, names.Clock, cfg.Instance), t.logger, clockReg)
	if err != nil {
		return err
	}
	// A replica takes part in the election once its views are loaded: a term waits for them before it plans, so
	// a replica that led before would make every slot due meanwhile late, where a loaded one could have led.
	loaded := make(chan struct{})
	elector, err := leader.New(leader.Config{
		Topic:             names.Ticker,
		Group:             names.TickerGroup,
		GroupProtocol:     kafka.GroupProtocol(cmp.Or(cfg.GroupProtocol, GroupProtocolClassic)), // checked by NewTicker
		SessionTimeout:    cfg.SessionTimeout,
		HeartbeatInterval: cfg.HeartbeatInterval,
		InstanceName:      cfg.Instance,
		InstanceID:        cfg.InstanceID,
		Readiness:         &t.ready,
		Gate:              leader.After(loaded, "the schedules and calendars are not loaded yet", clk),
		Leaders:           leaders,
	}, withRole("election"), leadTerm(disp, lag, copier, t.logger), t.logger, reg)
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return view.Run(gctx) })
	g.Go(func() error { return calendars.Run(gctx) })
	g.Go(func() error { return disp.Follow(gctx) })
	g.Go(func() error { return clk.Run(gctx) })
	g.Go(func() error { return elector.Run(gctx) })
	g.Go(func() error {
		for _, v := range []struct {
			name   string
			loaded <-chan struct{}
		}{{"schedules", view.Loaded()}, {"calendars", calendars.Loaded()}} {
			select {
			case <-gctx.Done():
				return nil
			case <-v.loaded:
				t.ready.Set(v.name, true)
			}
		}
		close(loaded)
		return nil
	})
	return g.Wait()
}

// leadTerm is one leader term: the dispatcher emits; with leader 0's, the work-lag monitor measures for the
// fleet (so the lag series come from one replica) and the copier keeps the schedule shares (nil: one leader).
// The term ends with the dispatcher; the others' own failures only log, but a missing permission ends the term.
func leadTerm(disp *dispatch.Dispatcher, lag *worklag.Monitor, copier *shares.Copier, logger *slog.Logger) leader.LeadFunc {
	return func(ctx context.Context, term leader.Term) error {
		if term.Partition != 0 {
			return disp.Lead(ctx, term)
		}
		ctx, cancel := context.WithCancel(ctx)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			aclErr error
		)
		side := func(name string, run func(context.Context) error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := run(ctx)
				if err == nil {
					return
				}
				logger.Error(name+" stopped", "err", err)
				if kafka.IsACLError(err) {
					mu.Lock()
					aclErr = err
					mu.Unlock()
					cancel() // a missing permission stops the ticker, as it does for the leader's own work
				}
			}()
		}
		side("work lag monitor", lag.Run)
		if copier != nil {
			side("schedule shares copier", copier.Run)
		}
		err := disp.Lead(ctx, term)
		cancel()
		wg.Wait()
		if err == nil && aclErr != nil {
			return aclErr
		}
		return err
	}
}

// TopicOptions are the settings of a namespace's topics where EnsureTopics and EnsurePoolTopics create them.
// The zero value of every field is its default; a negative count or retention is an error.
type TopicOptions struct {
	// WorkPartitions is the partition count of the work and results topics, at most 10000. Defaults to 12.
	WorkPartitions int32
	// Leaders is the partition count of the ticker topic when it is created: the number of leaders, each leading
	// the schedules that hash to its partition. When set, an existing ticker topic must have exactly this many
	// partitions; zero, the default, creates one and accepts any existing count.
	Leaders int32
	// ReplicationFactor of every topic created. Defaults to -1 (as does 0), the broker's default.
	ReplicationFactor int16
	// WorkRetention is how long ticks and results are kept. Defaults to 7 days.
	WorkRetention time.Duration
	// DLQRetention is how long dead letters are kept. Defaults to 14 days.
	DLQRetention time.Duration
	// ChangesRetention is how long the change log (<ns>.changes) keeps a schedule's changes. Defaults to 90
	// days.
	ChangesRetention time.Duration
	// Needs are the topics (full names: <ns>.ticker, <ns>.schedules, <ns>.work, <ns>.results, <ns>.dlq) that
	// must exist in the end. Every missing topic this principal may create is created, but a topic outside
	// Needs that it may neither create nor see is passed over, so that a role needs no permission on the others'
	// topics. Defaults to all of them.
	Needs []string
}

// internal is o as package kafka takes it. The conversion compiles only while both have the same fields.
func (o TopicOptions) internal() kafka.TopicOptions { return kafka.TopicOptions(o) }

// EnsureTopics creates the namespace's missing topics, as `ticker init` does, and checks the existing ones.
func EnsureTopics(ctx context.Context, k KafkaConfig, o TopicOptions) error {
	return ensureTopics(ctx, k.internal(), o.internal())
}

// ensureTopics is EnsureTopics.
func ensureTopics(ctx context.Context, k kafka.Config, o kafka.TopicOptions) error {
	opts, err := k.Opts(nil)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), k.Names(), o); err != nil {
		if errors.Is(err, kafka.ErrTickerTopicPartitions) {
			return fmt.Errorf("%w.\n"+
				"The number of leaders of a namespace is fixed: each schedule's state (its last emitted slot) lives in its\n"+
				"leader's partition, and moving it while tickers run could emit a slot twice. To change it, move to a new\n"+
				"namespace: 'ticker init --namespace NEW --leaders K', copy the schedules ('ticker schedule list --json'\n"+
				"into an apply file, then 'ticker schedule apply -f FILE --namespace NEW'), start tickers and workers on NEW,\n"+
				"then stop the old tickers and let the old workers drain", err)
		}
		return err
	}
	return nil
}

// countLeaders returns the namespace's number of leaders (the ticker topic's partitions).
func countLeaders(ctx context.Context, opts []kgo.Opt, names kafka.Names) (int, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	return kafka.Leaders(ctx, kadm.NewClient(cl), names.Ticker)
}

// EnsurePoolTopics creates the missing topics of a worker pool other than the default (<ns>.pool.<pool>.work,
// .results and .dlq), as `ticker init --pool` does; the leader also creates them when a schedule first names the
// pool, where it may.
func EnsurePoolTopics(ctx context.Context, k KafkaConfig, pool string, o TopicOptions) error {
	if !schedule.ValidPool(pool) {
		return fmt.Errorf("pool %q: want 1 to %d characters of a-z, 0-9, '_' and '-'", pool, schedule.MaxPoolLen)
	}
	kc := k.internal()
	opts, err := kc.Opts(nil)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	_, err = kafka.EnsurePoolTopics(ctx, kadm.NewClient(cl), kc.Names().Pool(pool), o.internal())
	return err
}

// poolLister returns the work lag's Pools: the names of every pool other than the default whose work topic
// exists, listed from the broker at each measurement. Not from the schedules: a scan of every definition held,
// each interval, kept the View locked for about 0.2 s a million schedules, and a term starting meanwhile (or a
// share's load, or the changes a term applies) waited for it. A pool a schedule names has its topic from its
// leader's first term on (dispatch, ensurePools); before that it has no ticks to lag. A failed listing keeps
// the last one, and is logged.
func poolLister(names kafka.Names, opts []kgo.Opt, logger *slog.Logger) func() []kafka.Names {
	var last []kafka.Names
	return func() []kafka.Names {
		pools, err := listPools(opts, names)
		if err != nil {
			logger.Warn("listing the pools' topics for the work lag: measuring those listed before", "err", err)
			return last
		}
		last = last[:0:0]
		for _, p := range pools {
			last = append(last, names.Pool(p))
		}
		return last
	}
}

// listPools returns the pools other than the default whose work topic exists.
func listPools(opts []kgo.Opt, names kafka.Names) ([]string, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tds, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, topic := range tds.Names() {
		if p, ok := names.PoolOfWork(topic); ok && p != "" {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}
