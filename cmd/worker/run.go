package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/command"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tracing"
	"github.com/tickgroup/tickgroup/internal/webhook"
	"github.com/tickgroup/tickgroup/internal/worker"
)

const usageHead = `Usage: worker run (--exec 'PROGRAM ARGS' | --http URL | --forward TOPIC) [flags]

Consumes the work topic <ns>.work in group <ns>.workers (read_committed) and runs every tick:
  --exec     runs PROGRAM without a shell (arguments split with shell-like quoting, no expansion), with
             TICK_ID, TICK_SCHEDULE, TICK_SLOT, TICK_SLOT_UNIX_MS, TICK_SHARD, TICK_SHARDS, TICK_ATTEMPT,
             TICK_FENCE, TICK_INTERRUPTED and TICK_PAYLOAD in its environment and the payload on stdin; exit
             status 0 is success. It gets the worker's environment without any TICKGROUP_* variable (they hold
             the worker's settings and secrets), or only the variables --exec-env lists. Its process group is
             killed when it exits, when the attempt ends, and (Linux) when the worker dies or freezes
  --http     POSTs the tick JSON with an Idempotency-Key: <tick ID> header; 2xx success, 3xx (redirects are
             not followed) and 4xx permanent failure (except 408 and 429), 5xx and timeouts are retried
  --forward  republishes each tick to TOPIC in a transaction with the consumed offsets (exactly-once)

Failed ticks are retried with backoff up to --max-attempts, then written to <ns>.dlq. Outcomes go to
<ns>.results.
Start offset: a brand-new group (partitions with no committed offset) starts at --start, by default the first
tick written in the last 10 minutes. So a fleet started all at once loses no tick (the ticks committed before
the first worker joined run too), and a new group on an old work topic runs at most the last 10 minutes of
ticks, never the days the topic retains. --start latest runs only ticks written from now on; --start earliest
everything retained.
Exec and http handlers run at least once per tick: use the tick ID as an idempotency key.
Traces (OpenTelemetry): with OTEL_EXPORTER_OTLP_ENDPOINT set (or _TRACES_ENDPOINT, or OTEL_TRACES_EXPORTER=otlp),
each attempt is a span in its tick's trace, child of the leader's emission, exported over OTLP/HTTP; the
handler gets its context as TRACEPARENT (--exec) or a traceparent header (--http). Exec handlers never see
OTEL_EXPORTER_OTLP_*HEADERS (a collector's credential).
On SIGINT/SIGTERM the worker stops fetching and starting ticks, commits and leaves the group at once (its
partitions move on; their new owners wait only for the ticks still running here), and lets its handlers finish
within --grace.
Exit status: 0 clean stop, 1 error, 2 bad usage.`

// commands are worker's commands by every spelling, looked up by run.
var commands = map[string]func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error{
	"run":       typed("run", func() subcommand { return &runCommand{} }),
	"version":   runVersion,
	"--version": runVersion,
	"help":      runHelp,
	"-h":        runHelp,
	"-help":     runHelp,
	"--help":    runHelp,
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usageHead)
		return cli.Usagef("a subcommand is required: worker run (or worker version)")
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintln(stderr, usageHead)
		return cli.Usagef("unknown subcommand %q: want run or version", args[0])
	}
	return cmd(ctx, args[1:], getenv, stdout, stderr)
}

func runVersion(_ context.Context, _ []string, _ func(string) string, stdout, _ io.Writer) error {
	fmt.Fprintln(stdout, "worker", admin.Version)
	return nil
}

func runHelp(_ context.Context, _ []string, _ func(string) string, stdout, _ io.Writer) error {
	fmt.Fprintln(stdout, usageHead)
	return nil
}

// subcommand is one of worker's subcommands, a type as ticker's commands are (not named command, the package
// of --exec): it parses and checks its own flags and arguments, before any connection, then runs.
type subcommand interface {
	// flags registers the command's flags on fs, the common ones included, and returns the head of its usage.
	flags(fs *flag.FlagSet) string
	// check takes the positional arguments once the flags are parsed, and checks them with the flags' values: a
	// mistake is a cli.UsageError.
	check(positional []string) error
	// run does the work: its logs on stderr.
	run(ctx context.Context, stdout, stderr io.Writer) error
}

// typed runs the command that newCommand makes, as worker NAME: its flags first, then its arguments, every flag
// also from its TICKGROUP_* variable.
func typed(name string, newCommand func() subcommand) func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
		cmd := newCommand()
		fs := flag.NewFlagSet("worker "+name, flag.ContinueOnError)
		fs.SetOutput(stdout) // help; errors are returned and printed on stderr by main
		fs.Usage = cli.Usage(fs, cmd.flags(fs))
		if err := cli.Parse(fs, args, getenv); err != nil {
			return err
		}
		if err := cmd.check(fs.Args()); err != nil {
			return err
		}
		return cmd.run(ctx, stdout, stderr)
	}
}

// runCommand is worker run: a worker of the pool, until a signal.
type runCommand struct {
	common           cli.Common
	exec             string
	execEnv          string
	http             string
	forward          string
	pool             string
	concurrency      int
	maxAttempts      int
	backoff          time.Duration
	maxBackoff       time.Duration
	timeout          time.Duration
	killGrace        time.Duration
	grace            time.Duration
	start            string
	workerID         string
	outputLimit      int
	sessionTimeout   time.Duration
	groupProtocol    string
	onInterrupt      string
	recordOutput     int
	breachWebhook    string
	breachSecretFile string
	breachSecret     []byte
	lease            time.Duration
	priorityAging    time.Duration
	instanceID       string
	maxClockSkew     time.Duration
}

func (f *runCommand) flags(fs *flag.FlagSet) string {
	f.common.Register(fs, "127.0.0.1:9102")
	fs.StringVar(&f.exec, "exec", "", "program and arguments to run per tick, split like a shell would, without a shell")
	fs.StringVar(&f.execEnv, "exec-env", "", "comma-separated variables the --exec program may see, a trailing * matches a prefix (AWS_*); TICKGROUP_* never passes (default: all but TICKGROUP_*)")
	fs.StringVar(&f.http, "http", "", "URL to POST each tick to")
	fs.StringVar(&f.forward, "forward", "", "topic to republish each tick to, exactly once (created when missing)")
	fs.StringVar(&f.pool, "pool", "default", "the worker pool served: only the ticks of schedules with this pool run here (their own topics <ns>.pool.NAME.work, .results, .dlq and group; the default pool's are <ns>.work, ...)")
	fs.IntVar(&f.concurrency, "concurrency", worker.DefaultConcurrency, "how many handlers may run at once, over all partitions (ticks of one schedule and shard run one at a time, in order)")
	fs.IntVar(&f.maxAttempts, "max-attempts", worker.DefaultMaxAttempts, "attempts per tick before the dead-letter topic, for ticks whose schedule sets no max_attempts")
	fs.DurationVar(&f.backoff, "backoff", worker.DefaultBackoff, "delay before the first retry; doubles per retry, with jitter")
	fs.DurationVar(&f.maxBackoff, "max-backoff", worker.DefaultMaxBackoff, "cap of the delay between retries")
	fs.DurationVar(&f.timeout, "timeout", 0, "time limit of one attempt of a tick whose schedule sets no timeout (0: none); an exec handler's process group is then terminated")
	fs.DurationVar(&f.killGrace, "kill-grace", command.DefaultKillGrace, "time between SIGTERM and SIGKILL when an exec handler is terminated")
	fs.DurationVar(&f.grace, "grace", worker.DefaultGrace, "on shutdown, how long in-flight handlers may finish before they are cancelled")
	fs.StringVar(&f.start, "start", worker.DefaultStart.String(), "where a brand-new group starts: a duration such as 10m (the first tick written that long ago or later), latest or earliest")
	fs.StringVar(&f.workerID, "worker-id", "", "name of this worker in outcome records and logs (default: hostname-pid)")
	fs.IntVar(&f.outputLimit, "output-limit", command.DefaultOutputLimit, "bytes of an exec handler's output kept and logged per attempt")
	fs.StringVar(&f.groupProtocol, "group-protocol", string(kafka.GroupProtocolClassic), "group protocol of the worker group: classic, or consumer (KIP-848, Kafka 4.0+: the broker assigns partitions and decides the session timeout, group.consumer.session.timeout.ms, 45s by default, so --session-timeout does not apply; not with --instance-id)")
	fs.DurationVar(&f.sessionTimeout, "session-timeout", worker.DefaultSessionTimeout, "group session timeout: how soon a crashed worker's partitions move (classic protocol only)")
	fs.StringVar(&f.breachWebhook, "breach-webhook", "", "URL to POST every deadline breach to (a schedule's start_by or finish_by; retried up to 5 times; see --breach-secret-file)")
	fs.StringVar(&f.breachSecretFile, "breach-secret-file", "", "file holding the secret that signs --breach-webhook's requests (Tickgroup-Signature: HMAC-SHA256), read at start, trailing newline dropped (default: requests unsigned)")
	fs.IntVar(&f.recordOutput, "record-output", 0, fmt.Sprintf("keep the last N bytes (at most %d) of an exec handler's output per tick in its outcome record, for ticker history and the console (0: none; output may hold secrets, and every operator reads the results topic)", worker.MaxRecordOutput))
	fs.StringVar(&f.onInterrupt, "on-interrupted", worker.OnInterruptedRerun, "a tick whose earlier run was cut off (crash, freeze, lost partition, or a lease this worker could not renew): rerun (again, with TICK_INTERRUPTED=1 and the attempt counting on) or skip (never again: at most once; outcome interrupted)")
	fs.DurationVar(&f.lease, "lease", worker.DefaultLease, "how long a handler may run on without this worker renewing its run in the ledger (every lease/5); a run found unfinished elsewhere is waited for until its last renewal plus this (plus --max-clock-skew); at most 10m")
	fs.DurationVar(&f.priorityAging, "priority-aging", worker.DefaultPriorityAging, "how long a tick held by its schedule's limit waits before its priority counts one higher: a priority-1 tick outranks a fresh priority-5 one after 4 of these, so a low priority is delayed, never starved (this worker keeps the limits whose partitions it owns)")
	fs.DurationVar(&f.maxClockSkew, "max-clock-skew", worker.DefaultMaxClockSkew, "clock difference between hosts that the lease rule tolerates; this worker measures its clock against the broker's every 10s (on <ns>.clock) and warns while it is off by more (it keeps working)")
	fs.StringVar(&f.instanceID, "instance-id", "", "static group membership: a worker restarted with the same ID within the session timeout takes its partitions back at once (no rebalance); never give two running workers the same ID (the older one is fenced and exits 1); off by default")
	return usageHead
}

func (f *runCommand) check(positional []string) error {
	if len(positional) > 0 {
		return cli.Usagef("unexpected arguments: %s", strings.Join(positional, " "))
	}
	if err := f.common.Finish(); err != nil {
		return err
	}
	if f.workerID == "" {
		f.workerID = kafka.InstanceName("worker")
	}
	if f.common.Kafka.ClientID == "" {
		// The client ID shows in `ticker status` (which worker owns which partition) and in broker logs.
		f.common.Kafka.ClientID = "tickgroup-worker-" + f.workerID
	}
	if f.breachSecretFile != "" {
		if f.breachWebhook == "" {
			return cli.Usagef("--breach-secret-file needs --breach-webhook")
		}
		b, err := os.ReadFile(f.breachSecretFile)
		if err != nil {
			return cli.Usagef("--breach-secret-file: %v", err)
		}
		if f.breachSecret = bytes.TrimRight(b, "\r\n"); len(f.breachSecret) == 0 {
			return cli.Usagef("--breach-secret-file %s is empty", f.breachSecretFile)
		}
	}
	if f.breachWebhook != "" {
		if u, err := url.Parse(f.breachWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cli.Usagef("--breach-webhook: want an http or https URL")
		}
	}
	modes := 0
	for _, m := range []string{f.exec, f.http, f.forward} {
		if m != "" {
			modes++
		}
	}
	if modes != 1 {
		return cli.Usagef("exactly one of --exec, --http and --forward is required")
	}
	// The checks below are the flags' own: the library's config takes a zero for its default, a flag's 0 is
	// refused (or, for --timeout and --grace, means none). The rest the library checks (NewWorker).
	if _, err := worker.ParseStart(f.start); err != nil {
		return cli.UsageError{Err: fmt.Errorf("--start: %w", err)}
	}
	if f.onInterrupt != worker.OnInterruptedRerun && f.onInterrupt != worker.OnInterruptedSkip {
		return cli.Usagef("--on-interrupted %q: want %s or %s", f.onInterrupt, worker.OnInterruptedRerun, worker.OnInterruptedSkip)
	}
	if f.concurrency < 1 || f.maxAttempts < 1 || f.outputLimit < 1 {
		return cli.Usagef("--concurrency, --max-attempts and --output-limit must be at least 1")
	}
	if f.maxClockSkew <= 0 || f.sessionTimeout <= 0 || f.lease <= 0 {
		return cli.Usagef("--max-clock-skew, --session-timeout and --lease must be positive durations")
	}
	if f.backoff <= 0 || f.maxBackoff < f.backoff || f.timeout < 0 || f.grace < 0 || f.killGrace <= 0 {
		return cli.Usagef("--backoff and --kill-grace must be positive, --max-backoff at least --backoff, --timeout and --grace not negative")
	}
	p, err := kafka.ParseGroupProtocol(f.groupProtocol)
	if err != nil {
		return cli.UsageError{Err: fmt.Errorf("--group-protocol: %w", err)}
	}
	if p == kafka.GroupProtocolConsumer && f.instanceID != "" {
		// The worker's static membership (the newest holder of an ID fences the older, a graceful stop leaves
		// by ID) is the classic protocol's.
		return cli.Usagef("--instance-id needs --group-protocol classic: static membership under the consumer protocol is not supported")
	}
	return nil
}

func (f *runCommand) run(ctx context.Context, _, stderr io.Writer) error {
	logger := f.common.Logger(stderr)
	logger.Debug(cli.SignalsHandled) // main handles them since before run; this is the log's first line
	flushTraces, err := tracing.Start(ctx, "worker", logger)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	defer flushTraces()
	handler, closeHandler, err := f.handler(logger)
	if err != nil {
		return err
	}
	// After the worker has stopped: whatever program still runs (beyond --grace) is killed.
	defer closeHandler()

	// Handlers run as this process's user: close its environment (the SASL password) and memory to them.
	if !command.Harden() {
		logger.Warn("could not make the worker process non-dumpable: a handler running as its user may read its environment (/proc/<pid>/environ)")
	}
	reg := admin.NewRegistry("worker")
	w, err := tickgroup.NewWorker(f.workerConfig(logger, reg), handler)
	if err != nil {
		return cli.UsageError{Err: err}
	}

	g, gctx := errgroup.WithContext(ctx)
	if f.common.MetricsAddr != "" {
		srv, err := admin.NewServer(f.common.MetricsAddr, reg, w, logger)
		if err != nil {
			return err
		}
		g.Go(func() error { return srv.Run(gctx) })
	}
	g.Go(func() error { return w.Run(gctx) })
	return g.Wait()
}

// handler is the handler of --exec or --http (nil for --forward), and what stops it once the worker has stopped.
func (f *runCommand) handler(logger *slog.Logger) (tickgroup.Handler, func(), error) {
	switch {
	case f.exec != "":
		h, err := command.New(command.Config{
			Command:     f.exec,
			OutputLimit: f.outputLimit,
			KillGrace:   f.killGrace,
			EnvAllow:    splitList(f.execEnv),
		}, logger)
		if err != nil {
			return nil, nil, cli.UsageError{Err: fmt.Errorf("--exec: %w", err)}
		}
		stop := func() {
			if err := h.Close(); err != nil {
				logger.Warn("stopping the exec supervisor", "error", err)
			}
		}
		return h.Handle, stop, nil
	case f.http != "":
		h, err := webhook.New(f.http, nil, logger)
		if err != nil {
			return nil, nil, cli.UsageError{Err: fmt.Errorf("--http: %w", err)}
		}
		return h.Handle, func() {}, nil
	}
	return nil, func() {}, nil
}

// workerConfig is the library's config from the flags.
func (f *runCommand) workerConfig(logger *slog.Logger, reg *prometheus.Registry) tickgroup.WorkerConfig {
	return tickgroup.WorkerConfig{
		Kafka:           f.common.PublicKafka(),
		ID:              f.workerID,
		Concurrency:     f.concurrency,
		MaxAttempts:     f.maxAttempts,
		Backoff:         f.backoff,
		MaxBackoff:      f.maxBackoff,
		Timeout:         f.timeout,
		Grace:           noneIfZero(f.grace), // the flag's 0 means none; the config's, the default
		Start:           tickgroup.StartPosition(f.start),
		SessionTimeout:  f.sessionTimeout,
		GroupProtocol:   tickgroup.GroupProtocol(f.groupProtocol),
		Forward:         f.forward,
		Pool:            f.pool,
		SkipInterrupted: f.onInterrupt == worker.OnInterruptedSkip,
		RecordOutput:    f.recordOutput,
		BreachWebhook:   f.breachWebhook,
		BreachSecret:    f.breachSecret,
		Lease:           f.lease,
		InstanceID:      f.instanceID,
		MaxClockSkew:    f.maxClockSkew,
		PriorityAging:   f.priorityAging,
		Logger:          logger,
		Registerer:      reg,
	}
}

// noneIfZero maps a flag's 0, none, to the config's none (a negative duration); the config's 0 is its default.
func noneIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
