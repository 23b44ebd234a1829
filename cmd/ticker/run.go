package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/clock"
	"github.com/tickgroup/tickgroup/internal/dispatch"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tracing"
)

const usage = `Usage: ticker COMMAND [flags]

tickgroup's scheduler: every host runs the same binary; the replica that owns a partition of the ticker topic
leads that partition's schedules and emits each of their slots exactly once, as a tick record on the work topic.

Commands:
  run                  join the fleet and emit ticks while leading (until SIGINT/SIGTERM)
  init                 create the namespace's topics and exit
  schedule put NAME    create or replace a schedule (--every D | --cron EXPR [--tz ZONE], ...)
  schedule get NAME    print a schedule as JSON
  schedule list        list the schedules
  schedule delete NAME delete a schedule
  schedule pause NAME  stop emitting a schedule's slots (they are not caught up on resume)
  schedule resume NAME emit again, from the next slot after the resume
  schedule trigger NAME
                       emit one tick now, with an ID that can never collide with a scheduled slot
  schedule apply -f FILE
                       make the schedules match a YAML file (--prune, --dry-run)
  schedule backfill NAME --from T --to T
                       run the past slots of a range again (--dry-run, --reprocess, --list, --cancel ID)
  schedule log [NAME]  who changed which schedule, when and why
  limit put NAME       create or replace a named limit (--concurrency N, --rate R/WINDOW, --pool POOL)
  limit list           list the limits, and how many schedules name each
  limit get NAME       print a limit as JSON
  limit delete NAME    delete a limit no schedule names
  calendar put NAME    create or replace a named calendar of excluded days (--dates, --range, --weekdays, --tz,
                       --ics FILE)
  calendar list        list the calendars, and how many schedules exclude each
  calendar get NAME    print a calendar as JSON
  calendar delete NAME delete a calendar no schedule excludes
  console              serve web pages of the fleet and its schedules (--listen; --actions with authentication)
  status               who leads, each schedule's last and next slot, work-topic lag (--json)
  audit                compare the slots that should exist with the ticks emitted and executed: missing,
                       doubled, ran twice, marked re-run (exit 1 when a tick is missing, doubled or ran twice
                       unmarked; --strict: on any re-run; --from, --to, --json)
  history NAME         each slot of one schedule: when emitted, and every execution (--since, --json)
  version              print the version

Run 'ticker COMMAND --help' for a command's flags. Every flag can also be set with TICKGROUP_<FLAG>, for
example TICKGROUP_BROKERS=kafka-1:9092,kafka-2:9092; init, schedule, limit, calendar, audit and history read
only the connection and logging variables.

Exit status: 0 on success or a clean stop, 1 on an error, 2 on bad usage, an invalid schedule, limit or
calendar, or a change refused before anything was written (a schedule naming a limit or a calendar it cannot
name).`

// commands are ticker's commands by every spelling, looked up by run. The typed ones say how their command line
// is read: init, status, audit and history take only the connection and logging flags from TICKGROUP_* variables
// (a worker's TICKGROUP_POOL, TICKGROUP_GRACE or TICKGROUP_TIMEOUT on the host must not create a pool's topics
// or change what is read or counted); status and history take NAME before, between or after the flags.
var commands = map[string]func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error{
	"run":       typed("run", true, flagsFirst, func() command { return &runCommand{} }),
	"init":      typed("init", false, flagsFirst, func() command { return &initCommand{} }),
	"schedule":  runSchedule,
	"schedules": runSchedule,
	"limit":     runLimit,
	"limits":    runLimit,
	"calendar":  runCalendar,
	"calendars": runCalendar,
	"status":    typed("status", false, cli.ParseInterspersed, func() command { return &statusCommand{} }),
	"console":   typed("console", true, flagsFirst, func() command { return &consoleCommand{} }),
	"history":   typed("history", false, parseAround, func() command { return &historyCommand{} }),
	"audit":     typed("audit", false, flagsFirst, func() command { return &auditCommand{} }),
	"version":   runVersion,
	"--version": runVersion,
	"help":      runHelp,
	"-h":        runHelp,
	"-help":     runHelp,
	"--help":    runHelp,
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return cli.Usagef("a command is required")
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintln(stderr, usage)
		return cli.Usagef("unknown command %q", args[0])
	}
	return cmd(ctx, args[1:], getenv, stdout, stderr)
}

func runVersion(_ context.Context, args []string, _ func(string) string, stdout, _ io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprintln(stdout, "Usage: ticker version\n\nPrint the version of this build.")
		return nil
	}
	fmt.Fprintln(stdout, "ticker", admin.Version)
	return nil
}

func runHelp(_ context.Context, _ []string, _ func(string) string, stdout, _ io.Writer) error {
	fmt.Fprintln(stdout, usage)
	return nil
}

func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// command is one of ticker's commands (but schedule, which has its own table of subcommands). Each parses and
// checks its own flags and arguments, before any connection, then runs.
type command interface {
	// flags registers the command's flags on fs, the common ones included, and returns the head of its usage.
	flags(fs *flag.FlagSet) string
	// check takes the positional arguments once the flags are parsed, and checks them with the flags' values: a
	// mistake is a cli.UsageError.
	check(positional []string) error
	// run does the work: its output on stdout, its logs on stderr.
	run(ctx context.Context, stdout, stderr io.Writer) error
}

// parser parses args into fs, the flags not given from getenv, and returns the positional arguments.
type parser func(fs *flag.FlagSet, args []string, getenv func(string) string) ([]string, error)

// flagsFirst is the flag package's order: the flags, then the arguments (the first argument ends the flags).
func flagsFirst(fs *flag.FlagSet, args []string, getenv func(string) string) ([]string, error) {
	if err := cli.Parse(fs, args, getenv); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}

// typed runs the command that newCommand makes, as ticker NAME: parse reads its command line; with ownEnv every
// one of its flags may come from a TICKGROUP_* variable, else only the connection and logging ones (a variable
// meant for another command on the host, such as a worker's TICKGROUP_TIMEOUT, must not reach it).
func typed(name string, ownEnv bool, parse parser, newCommand func() command) func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
		cmd := newCommand()
		fs := flag.NewFlagSet("ticker "+name, flag.ContinueOnError)
		fs.SetOutput(stdout) // help; errors are returned and printed on stderr by main
		usage, env := cli.UsageCommonEnv, cli.CommonEnv(getenv)
		if ownEnv {
			usage, env = cli.Usage, getenv
		}
		fs.Usage = usage(fs, cmd.flags(fs))
		positional, err := parse(fs, args, env)
		if err != nil {
			return err
		}
		if err := cmd.check(positional); err != nil {
			return err
		}
		return cmd.run(ctx, stdout, stderr)
	}
}

// topicFlags are the settings of topics the command creates when they are missing.
type topicFlags struct {
	workPartitions    int
	replicationFactor int
}

func (t *topicFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&t.workPartitions, "work-partitions", kafka.DefaultWorkPartitions, "partitions of the work and results topics, when this command creates them")
	fs.IntVar(&t.replicationFactor, "replication-factor", -1, "replication factor of topics this command creates (-1: the broker default; use 3 in production)")
}

// check refuses the counts no topic can be made with (the config's 0 would mean its default; the flag's is a
// mistake).
func (t topicFlags) check() error {
	if t.workPartitions < 1 || t.workPartitions > kafka.MaxWorkPartitions {
		return cli.Usagef("--work-partitions %d: want 1 to %d", t.workPartitions, kafka.MaxWorkPartitions)
	}
	if t.replicationFactor != -1 && (t.replicationFactor < 1 || t.replicationFactor > math.MaxInt16) {
		return cli.Usagef("--replication-factor %d: want -1 (the broker's default) or at least 1", t.replicationFactor)
	}
	return nil
}

func (t topicFlags) options() tickgroup.TopicOptions {
	return tickgroup.TopicOptions{WorkPartitions: int32(t.workPartitions), ReplicationFactor: int16(t.replicationFactor)}
}

const runUsage = `Usage: ticker run [flags]

Join the ticker group; while this replica owns a partition of <ns>.ticker it leads that partition's schedules
(one partition per leader: ticker init --leaders): it fences earlier leaders of the partition, reads the last
emitted slot of each of its schedules and emits every slot as tick records on <ns>.work, each slot exactly once,
--lead before it is due (workers start each tick on its instant). Runs until SIGINT or SIGTERM, then hands
leadership over and exits 0.

Traces (OpenTelemetry): off unless OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp)
is set; then each tick's emission is the root span of its trace, exported over OTLP/HTTP (the standard OTEL_
variables: headers, service name, resource attributes, sampler).`

// runCommand is ticker run: a replica of the fleet, until a signal.
type runCommand struct {
	common             cli.Common
	topics             topicFlags
	groupProtocol      string
	sessionTimeout     time.Duration
	heartbeatInterval  time.Duration
	transactionTimeout time.Duration
	lagInterval        time.Duration
	lead               time.Duration
	instance           string
	instanceID         string
	profiles           bool
	gc                 cli.GCPercent
	maxClockSkew       time.Duration
	poolRetry          time.Duration
}

func (c *runCommand) flags(fs *flag.FlagSet) string {
	c.common.Register(fs, "127.0.0.1:9090")
	c.topics.register(fs)
	fs.StringVar(&c.groupProtocol, "group-protocol", string(kafka.GroupProtocolClassic), "group protocol of the election: classic, or consumer (KIP-848, Kafka 4.0+: the broker assigns partitions and decides the session timeout and heartbeat interval, group.consumer.session.timeout.ms, 45s by default, and group.consumer.heartbeat.interval.ms, so --session-timeout and --heartbeat-interval do not apply; not with --instance-id)")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", 6*time.Second, "how long the group waits for a silent replica before another leads (crash failover time; within the broker's group.min/max.session.timeout.ms; classic protocol only)")
	fs.DurationVar(&c.heartbeatInterval, "heartbeat-interval", time.Second, "group heartbeat interval (a graceful handoff takes about one; classic protocol only)")
	fs.DurationVar(&c.transactionTimeout, "transaction-timeout", 10*time.Second, "how long the broker keeps a dead leader's open transaction before aborting it")
	fs.DurationVar(&c.lead, "lead", dispatch.DefaultLead, fmt.Sprintf("commit each slot's ticks this long before the slot is due; workers hold them and start each on its instant, so a leader failover shorter than this delays no slot (0: emit when due; at most %s)", dispatch.MaxLead))
	fs.DurationVar(&c.lagInterval, "work-lag-interval", 15*time.Second, "while leading, how often to measure the workers' lag on the work topic (tickgroup_work_lag_*)")
	fs.DurationVar(&c.poolRetry, "pool-retry", 30*time.Second, "while leading, how long to wait before trying again to make a worker pool's topics ready when that failed (its schedules wait meanwhile, then catch up)")
	c.gc.Register(fs)
	fs.BoolVar(&c.profiles, "pprof", false, "also serve the Go runtime profiles (net/http/pprof) under /debug/pprof/ on the admin address")
	fs.DurationVar(&c.maxClockSkew, "max-clock-skew", clock.DefaultMaxSkew, "largest offset of this host's clock from the broker's (measured every 10s on <ns>.clock) at which this replica may lead; beyond it, it leaves the election until the clock is back")
	fs.StringVar(&c.instance, "instance", kafka.InstanceName("ticker"), "name of this replica in logs and in the group (client ID)")
	fs.StringVar(&c.instanceID, "instance-id", "", "static group membership: a replica restarted with the same ID within the session timeout takes its leadership back at once (no rebalance); never give two running replicas the same ID (the older one is fenced and exits 1); off by default")
	return runUsage
}

func (c *runCommand) check(positional []string) error {
	if len(positional) > 0 {
		return cli.Usagef("ticker run: unexpected argument %q", positional[0])
	}
	if err := c.common.Finish(); err != nil {
		return err
	}
	if err := c.topics.check(); err != nil {
		return err
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{"--session-timeout", c.sessionTimeout}, {"--heartbeat-interval", c.heartbeatInterval}, {"--transaction-timeout", c.transactionTimeout},
		{"--work-lag-interval", c.lagInterval}, {"--max-clock-skew", c.maxClockSkew}, {"--pool-retry", c.poolRetry}} {
		if d.value <= 0 {
			return cli.Usagef("%s %s: want a positive duration", d.flag, d.value)
		}
	}
	if c.lead < 0 || c.lead > dispatch.MaxLead {
		return cli.Usagef("--lead %s: want a duration between 0 and %s", c.lead, dispatch.MaxLead)
	}
	if err := c.gc.Check(); err != nil {
		return err
	}
	return checkGroupProtocol(c.groupProtocol, c.instanceID)
}

// checkGroupProtocol refuses a --group-protocol other than classic or consumer, and consumer with --instance-id:
// the static membership of both roles (fencing the older holder of an ID, leaving by ID on a graceful stop) is the
// classic protocol's.
func checkGroupProtocol(protocol, instanceID string) error {
	p, err := kafka.ParseGroupProtocol(protocol)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("--group-protocol: %w", err)}
	}
	if p == kafka.GroupProtocolConsumer && instanceID != "" {
		return cli.Usagef("--instance-id needs --group-protocol classic: static membership under the consumer protocol is not supported")
	}
	return nil
}

func (c *runCommand) run(ctx context.Context, _, stderr io.Writer) error {
	logger := c.common.Logger(stderr).With("instance", c.instance)
	logger.Debug(cli.SignalsHandled) // main handles them since before run; this is the log's first line
	c.gc.Apply()
	flushTraces, err := tracing.Start(ctx, "ticker", logger)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	defer flushTraces()
	reg := admin.NewRegistry("ticker")
	t, err := tickgroup.NewTicker(c.tickerConfig(logger, reg))
	if err != nil {
		return cli.UsageError{Err: err}
	}
	g, gctx := errgroup.WithContext(ctx)
	if c.common.MetricsAddr != "" {
		srv, err := admin.NewServer(c.common.MetricsAddr, reg, t, logger)
		if err != nil {
			return err
		}
		if c.profiles {
			srv.ServeProfiles()
		}
		g.Go(func() error { return srv.Run(gctx) })
	}
	g.Go(func() error { return t.Run(gctx) })
	logger.Info("ticker starting", "version", admin.Version, "namespace", c.common.Kafka.Namespace, "brokers", strings.Join(c.common.Kafka.Brokers, ","))
	err = g.Wait()
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	logger.Info("ticker stopped")
	return nil
}

// tickerConfig is the library's config from the flags.
func (c *runCommand) tickerConfig(logger *slog.Logger, reg *prometheus.Registry) tickgroup.TickerConfig {
	lead := c.lead
	if lead == 0 {
		lead = -1 // the flag's 0 means emit when due; the config's 0 means the default
	}
	return tickgroup.TickerConfig{
		Kafka:              c.common.PublicKafka(),
		Instance:           c.instance,
		InstanceID:         c.instanceID,
		GroupProtocol:      tickgroup.GroupProtocol(c.groupProtocol),
		SessionTimeout:     c.sessionTimeout,
		HeartbeatInterval:  c.heartbeatInterval,
		TransactionTimeout: c.transactionTimeout,
		Lead:               lead,
		WorkLagInterval:    c.lagInterval,
		MaxClockSkew:       c.maxClockSkew,
		PoolRetry:          c.poolRetry,
		WorkPartitions:     c.topics.workPartitions,
		ReplicationFactor:  c.topics.replicationFactor,
		Logger:             logger,
		Registerer:         reg,
	}
}

const initUsage = `Usage: ticker init [flags]

Create the namespace's topics (<ns>.ticker, .schedules, .work, .results, .dlq, .clock, .changes, .backfills,
.backfills.progress, .limits, .calendars) where missing, <ns>.ticker with one partition per leader, and check that an existing <ns>.ticker has --leaders partitions; with --pool, also
the topics of those worker pools. 'ticker run' and 'worker run' create missing topics at start-up too (with one
leader), and the leader creates a pool's topics when a schedule first names it, where it may.`

// initCommand is ticker init: the namespace's topics, and those of the pools named.
type initCommand struct {
	common  cli.Common
	topics  topicFlags
	leaders int
	pools   string
}

func (c *initCommand) flags(fs *flag.FlagSet) string {
	c.common.Register(fs, "")
	c.topics.register(fs)
	fs.StringVar(&c.pools, "pool", "", "comma-separated worker pools whose topics to create too (<ns>.pool.NAME.work, .results, .dlq)")
	fs.IntVar(&c.leaders, "leaders", 1, fmt.Sprintf("number of leaders (1-%d): partitions of <ns>.ticker; each leads the schedules that hash to it. Fixed once the namespace exists", kafka.MaxLeaders))
	return initUsage
}

// check ignores positional arguments, as ticker init always has.
func (c *initCommand) check([]string) error {
	if err := c.common.Finish(); err != nil {
		return err
	}
	if _, err := c.common.Kafka.Opts(nil); err != nil {
		return cli.UsageError{Err: err}
	}
	if c.leaders < 1 || c.leaders > kafka.MaxLeaders {
		return cli.Usagef("--leaders %d: want 1 to %d", c.leaders, kafka.MaxLeaders)
	}
	return c.topics.check()
}

func (c *initCommand) run(ctx context.Context, _, stderr io.Writer) error {
	logger := c.common.Logger(stderr)
	names := c.common.Kafka.Names()
	o := c.topics.options()
	o.Leaders = int32(c.leaders)
	if err := tickgroup.EnsureTopics(ctx, c.common.PublicKafka(), o); err != nil {
		return err
	}
	logger.Info("topics ready", "leaders", c.leaders, "ticker", names.Ticker, "schedules", names.Schedules, "work", names.Work, "results", names.Results, "dlq", names.DLQ, "clock", names.Clock)
	for _, pool := range strings.Split(c.pools, ",") {
		if pool = strings.TrimSpace(pool); pool == "" {
			continue
		}
		if err := tickgroup.EnsurePoolTopics(ctx, c.common.PublicKafka(), pool, c.topics.options()); err != nil {
			return err
		}
		n := names.Pool(pool)
		logger.Info("pool topics ready", "pool", pool, "work", n.Work, "results", n.Results, "dlq", n.DLQ)
	}
	return nil
}
