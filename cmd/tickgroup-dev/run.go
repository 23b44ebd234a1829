package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/devbroker"
)

const usage = `Usage: tickgroup-dev [flags]      (what 'make run' runs)

Starts the embedded development broker (kfake, in-process, data in --data-dir), three 'ticker run' replicas and
two 'worker run' processes on it, applies a demo schedule and prints a live view: who leads, each tick as the
leader emits it and as a worker runs it. Every --handoff-every it restarts the leader to show a handoff.
The processes' logs go to <data-dir>/logs/. Ctrl-C stops everything.`

// Sizes of the demo fleet.
const (
	numTickers = 3
	numWorkers = 2
)

// config is the parsed command line.
type config struct {
	addr         string        // development broker address
	dataDir      string        // broker data, binaries, logs, demo schedule
	binDir       string        // where ticker and worker are; built into <dataDir>/bin when empty
	handoffEvery time.Duration // 0 disables the automatic leader restarts
	namespace    string
	exec         string // the workers' --exec; this program's handle subcommand when empty
	color        bool
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tickgroup-dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	fs.StringVar(&cfg.addr, "addr", devbroker.DefaultAddr, "address of the embedded development broker (port 0: a free one)")
	fs.StringVar(&cfg.dataDir, "data-dir", ".tickgroup-dev", "directory of the broker's data, the built binaries, the logs and the demo schedule")
	fs.StringVar(&cfg.binDir, "bin", "", "directory holding the ticker and worker binaries (default: build them into <data-dir>/bin)")
	fs.DurationVar(&cfg.handoffEvery, "handoff-every", 20*time.Second, "restart the leader this often to show a handoff (0: never)")
	fs.StringVar(&cfg.namespace, "namespace", "tickgroup-dev", "tickgroup namespace (topic and group prefix)")
	fs.StringVar(&cfg.exec, "exec", "", "the workers' --exec program (default: this program's no-op handler)")
	fs.Usage = cli.Usage(fs, usage)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("unexpected argument %q", fs.Arg(0))
	}
	if cfg.handoffEvery < 0 {
		return cli.Usagef("--handoff-every must not be negative")
	}
	cfg.color = isTerminal(stdout) && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
	scr := &screen{w: stdout, color: cfg.color}

	logDir := filepath.Join(cfg.dataDir, "logs")
	if err := os.MkdirAll(logDir, 0o750); err != nil {
		return fmt.Errorf("creating %s: %w", logDir, err)
	}
	// The development tool's own log: the broker's warnings and the view's fetch errors. The screen is for ticks.
	devLog, err := os.Create(filepath.Join(logDir, "tickgroup-dev.log"))
	if err != nil {
		return fmt.Errorf("creating the log file: %w", err)
	}
	defer devLog.Close()
	logger := slog.New(slog.NewTextHandler(devLog, &slog.HandlerOptions{Level: slog.LevelInfo}))

	if cfg.exec == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding this program for the demo handler: %w", err)
		}
		cfg.exec = shellQuote(self) + " " + handleCommand
	}
	if cfg.binDir == "" {
		cfg.binDir = filepath.Join(cfg.dataDir, "bin")
		scr.info("building ticker and worker into %s ...", cfg.binDir)
		if err := buildBinaries(ctx, cfg.binDir); err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C during the build
			}
			return err
		}
	}
	for _, name := range []string{"ticker", "worker"} {
		if _, err := os.Stat(filepath.Join(cfg.binDir, name)); err != nil {
			return cli.Usagef("--bin %s: %v", cfg.binDir, err)
		}
	}

	broker, err := devbroker.New(devbroker.Config{
		Addr:    cfg.addr,
		DataDir: filepath.Join(cfg.dataDir, "broker"),
		Logger:  logger.With("component", "devbroker"),
	})
	if err != nil {
		return fmt.Errorf("%w (is another 'make run' running? choose another port with --addr)", err)
	}
	brokers := strings.Join(broker.Addrs(), ",")
	printBanner(scr, cfg, brokers)

	// The broker outlives the fleet: the replicas and workers must still reach it to leave their groups and
	// abort or commit their transactions after ctx ends, so it stops only once they all have.
	brokerCtx, stopBroker := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBroker()
	f := &fleet{cfg: cfg, brokers: brokers, scr: scr, logger: logger}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return broker.Run(brokerCtx) })
	g.Go(func() error {
		defer stopBroker()
		return f.Run(gctx)
	})
	err = g.Wait()
	broker.Close()
	scr.info("stopped; logs are in %s", logDir)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// buildBinaries builds ./cmd/ticker and ./cmd/worker of the module this command is run in into dir.
func buildBinaries(ctx context.Context, dir string) error {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return cli.Usagef("building the binaries needs the go command inside the tickgroup module (or pass --bin DIR): go env GOMOD = %q, %v", gomod, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", abs+string(filepath.Separator), "./cmd/ticker", "./cmd/worker")
	cmd.Dir = filepath.Dir(gomod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building ticker and worker: %w\n%s", err, out)
	}
	return nil
}

func printBanner(scr *screen, cfg config, brokers string) {
	dataDir := strings.TrimSuffix(cfg.dataDir, "/") + "/"
	scr.banner(`
This is the embedded development broker (kfake, in-process, data in %[1]s). It is not Kafka: it speaks
Kafka's protocol well enough to show how tickgroup works, but what you see here is no evidence of how it behaves
on a real cluster (durability, replication, timing).

To run against a real cluster: bin/ticker run --brokers host:9092, bin/worker run --brokers host:9092
--exec '...' (make build), or make kafka-up for a local Apache Kafka; production: deploy/docker-compose.yml.

  broker     %[2]s   namespace %[3]s   (ticker status: %[4]s status --brokers %[2]s --namespace %[3]s)
  fleet      %[5]d ticker replicas, %[6]d workers; logs in %[7]s
  handoff    %[8]s
  view       EMIT = a tick the leader committed to %[3]s.work; RUN = a worker's outcome from %[3]s.results
`, dataDir, brokers, cfg.namespace, filepath.Join(cfg.binDir, "ticker"), numTickers, numWorkers,
		filepath.Join(dataDir, "logs")+"/", handoffText(cfg.handoffEvery))
}

func handoffText(d time.Duration) string {
	if d == 0 {
		return "off (--handoff-every 0)"
	}
	return fmt.Sprintf("every %s the leader is stopped (SIGTERM) and restarted, to show failover", d)
}

// shellQuote quotes s for worker --exec, which splits its argument like a shell would (without running one).
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
