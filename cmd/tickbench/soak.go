package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/testing/failbench"
)

func init() {
	register("soak", command{
		summary: "the whole system for --duration under random faults of every kind; counts every slot (exit 1 on a loss)",
		run:     runSoak,
	})
}

// soakHandler is the workers' exec handler: 4 s for the long jobs (slow* schedules), 50 ms for the others. The
// shell reads the schedule's name from the environment; no payload reaches it.
const soakHandler = `sh -c 'case "$TICK_SCHEDULE" in slow*) sleep 4;; *) sleep 0.05;; esac'`

var errSoakFailed = errors.New("soak: a slot was missing, pending, doubled or run twice unmarked, or a process crashed")

func runSoak(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tickbench soak", flag.ContinueOnError)
	fs.SetOutput(stdout)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	bin := fs.String("bin", "./bin", "directory of the ticker and worker binaries (make build)")
	duration := fs.Duration("duration", 30*time.Minute, "how long the schedules run")
	schedules := fs.Int("schedules", 300, "schedules: intervals 1s to 1m, every tenth a 4 s job, every third in a second pool")
	execCmd := fs.String("exec-command", soakHandler, "the workers' exec handler (4 s for slow* schedules)")
	faultMin := fs.Duration("fault-min", 20*time.Second, "least time between two faults")
	faultMax := fs.Duration("fault-max", 60*time.Second, "most time between two faults")
	brokerRestart := fs.String("broker-restart", "", "command that restarts the broker on its data, space-separated (for example 'scripts/kafka-dev.sh restart'); empty: no broker restart")
	restarts := fs.Int("broker-restarts", 2, "broker restarts, spread over the run")
	settle := fs.Duration("settle", 2*time.Minute, "after the run, the longest wait for every slot's outcome")
	seed := fs.Uint64("seed", 0, "the faults' random seed (0: a new one, reported)")
	logDir := fs.String("log-dir", "", "directory for the processes' output (default: a new temporary directory, kept)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	keep := fs.Bool("keep", false, "keep the namespace (topics and groups)")
	fs.Usage = cli.Usage(fs, "Usage: tickbench soak [flags]\n\n"+
		"Runs 3 hosts (a ticker and a worker each, from --bin; the third worker serves a second pool) with --schedules\n"+
		"schedules for --duration, and every --fault-min to --fault-max kill -9s, SIGSTOPs for 10-20 s, or SIGTERMs\n"+
		"a random process (restarting it 3 s later), and restarts the broker --broker-restarts times. Then it counts\n"+
		"every slot as ticker audit does (missing, doubled, run twice unmarked, marked re-runs), the start delays\n"+
		"(and the five latest schedules), and the processes' memory. Exit 1 on a slot missing or pending, doubled or\n"+
		"run twice unmarked, or a crash.")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	dir := *logDir
	if dir == "" {
		d, err := os.MkdirTemp("", "tickbench-soak-")
		if err != nil {
			return err
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	res, err := failbench.Soak(ctx, failbench.SoakConfig{Brokers: strings.Split(*brokers, ","), Bin: *bin, Duration: *duration, Schedules: *schedules,
		ExecCommand: *execCmd, FaultMin: *faultMin, FaultMax: *faultMax, BrokerRestart: strings.Fields(*brokerRestart), BrokerRestarts: *restarts,
		Settle: *settle, Seed: *seed, LogDir: dir, Keep: *keep}, logger)
	if err != nil {
		return cli.Stopped(ctx, err)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		printSoak(stdout, res, dir)
	}
	if !res.OK {
		return errSoakFailed
	}
	return nil
}

func printSoak(w io.Writer, r failbench.SoakResult, logs string) {
	fmt.Fprintf(w, "soak %s .. %s (%s), %d schedules, seed %d, namespace %s, logs %s\n", r.From.Format(time.TimeOnly), r.To.Format(time.TimeOnly),
		r.To.Sub(r.From).Round(time.Second), r.Schedules, r.Seed, r.Namespace, logs)
	fmt.Fprintf(w, "faults: %d\n", len(r.Faults))
	for _, f := range r.Faults {
		fmt.Fprintf(w, "  %s  %s\n", f.At.Format(time.TimeOnly), f.Action)
	}
	c := r.Counts
	fmt.Fprintf(w, "slots (ticks): expected %d, emitted %d, executed %d; missing %d, pending %d, doubled %d, ran twice unmarked %d, marked re-runs %d, retried %d, passed over %d\n",
		c.Expected, c.Emitted, c.Executed, c.Missing, c.Pending, c.Doubled, c.RanTwice, c.MarkedReRun, c.Retried, c.PassedOver)
	fmt.Fprintf(w, "slot -> first start: p50 %.0f ms, p99 %.0f ms, max %.0f ms\n", r.P50, r.P99, r.Max)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LATEST SCHEDULES\tTICKS\tP99 MS\tMAX MS")
	for _, s := range r.Worst {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\n", s.Schedule, s.Ticks, s.P99, s.Max)
	}
	fmt.Fprintln(tw, "MEMORY\tLARGEST MB\tSUM FIRST MB\tSUM LAST MB")
	for _, m := range r.Memory {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.0f\n", m.Role, m.MaxMB, m.FirstMB, m.LastMB)
	}
	_ = tw.Flush()
	if len(r.Crashes) > 0 {
		fmt.Fprintf(w, "crashes: %s\n", strings.Join(r.Crashes, ", "))
	}
	fmt.Fprintf(w, "ok: %v\n", r.OK)
}
