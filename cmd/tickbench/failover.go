package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/testing/failbench"
)

func init() {
	register("failover", command{
		summary: "slot -> handler start with the real ticker and worker binaries under a fault (kill -9, SIGTERM)",
		run:     runFailover,
	})
}

func runFailover(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tickbench failover", flag.ContinueOnError)
	fs.SetOutput(stdout)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	bin := fs.String("bin", "./bin", "directory of the ticker and worker binaries (make build)")
	hosts := fs.Int("hosts", 3, "hosts, each one `ticker run` and one `worker run` with a stable --instance-id")
	handler := fs.String("handler", failbench.HandlerForward, "worker handler: forward (--forward <ns>.fwd) or exec (--exec of --exec-command)")
	execCmd := fs.String("exec-command", "/bin/true", "the exec handler's program (no shell)")
	mode := fs.String("mode", failbench.ModeNone, "fault: "+strings.Join(failbench.Modes, ", "))
	duration := fs.Duration("duration", 90*time.Second, "the measured window")
	warmup := fs.Duration("warmup", 10*time.Second, "how long the schedules run before the window (their ticks are not measured)")
	every := fs.Duration("every", 15*time.Second, "period of the faults (the first one this long into the window)")
	restart := fs.Duration("restart-after", 3*time.Second, "how long after a fault its victims are started again")
	schedules := fs.Int("schedules", 1, "schedules, each catch-up all")
	schedEvery := fs.Duration("schedule-every", time.Second, "the schedules' interval")
	partitions := fs.Int("partitions", 12, "partitions of the work and results topics")
	runs := fs.Int("runs", 1, "runs, each in a fresh namespace")
	late := fs.Duration("late", 50*time.Millisecond, "a start later than this after its slot counts as late")
	settle := fs.Duration("settle", 30*time.Second, "after the window, the longest wait for every tick's outcome")
	groupProtocol := fs.String("group-protocol", "classic", "every ticker's and worker's --group-protocol: classic, or consumer (KIP-848; the hosts are then dynamic members, without --instance-id)")
	dynamic := fs.Bool("dynamic", false, "start the hosts without --instance-id under the classic protocol too (dynamic members, as under consumer)")
	tickerArgs := fs.String("ticker-args", "", "extra `ticker run` flags, space-separated (for example '--session-timeout 3s')")
	workerArgs := fs.String("worker-args", "", "extra `worker run` flags, space-separated")
	logDir := fs.String("log-dir", "", "directory for the processes' output, made if missing (default: a new temporary directory, removed after a clean run)")
	asJSON := fs.Bool("json", false, "print the results as JSON instead of a table")
	keep := fs.Bool("keep", false, "keep each run's namespace (topics and groups)")
	verbose := fs.Bool("v", false, "log each process start")
	fs.Usage = cli.Usage(fs, "Usage: tickbench failover [flags]\n\n"+
		"Starts --hosts hosts (a `ticker run` and a `worker run` each, from --bin) on a fresh namespace, writes\n"+
		"--schedules schedules that run for --warmup and then the measured window of --duration, injects --mode\n"+
		"every --every in the window, and prints slot -> handler\n"+
		"start from the results topic (the ledger: authoritative under faults, it survives kill -9) and from the\n"+
		"workers' own tickgroup_worker_start_delay_seconds, summed over every worker process (a killed one is\n"+
		"scraped just before its kill). Modes: none; kill-leader (kill -9 the leading ticker); kill-host (kill -9\n"+
		"the leading ticker and its host's worker); graceful (SIGTERM the leading ticker); victims restart after\n"+
		"--restart-after with the same instance ID (a new member under --group-protocol consumer or --dynamic).\n"+
		"Every process started is killed when the tool exits.")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if _, err := kafka.ParseGroupProtocol(*groupProtocol); err != nil {
		return cli.UsageError{Err: fmt.Errorf("--group-protocol: %w", err)}
	}
	dir, removeLogs := *logDir, false
	if dir == "" {
		d, err := os.MkdirTemp("", "tickbench-failover-")
		if err != nil {
			return err
		}
		dir, removeLogs = d, true
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := failbench.Config{
		Brokers: strings.Split(*brokers, ","), Bin: *bin, Hosts: *hosts, Handler: *handler, ExecCommand: *execCmd,
		Mode: *mode, Duration: *duration, Warmup: *warmup, Every: *every, RestartAfter: *restart, Schedules: *schedules,
		ScheduleEvery: *schedEvery, Partitions: *partitions, Runs: *runs, LateBound: *late, Settle: *settle,
		GroupProtocol: *groupProtocol, Dynamic: *dynamic,
		TickerArgs: strings.Fields(*tickerArgs), WorkerArgs: strings.Fields(*workerArgs), LogDir: dir, Keep: *keep,
	}
	results, err := failbench.Run(ctx, cfg, logger)
	if err = cli.Stopped(ctx, err); err == nil && ctx.Err() != nil {
		fmt.Fprintln(stderr, "interrupted: the results of the completed runs follow")
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(results); jerr != nil {
			return jerr
		}
	} else if len(results) > 0 {
		printFailover(stdout, results)
	}
	clean := err == nil
	for _, r := range results {
		clean = clean && r.Settled && len(r.Crashes) == 0
	}
	if removeLogs && clean {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(stderr, "process logs: %s\n", dir)
	}
	return err
}

func printFailover(w io.Writer, results []failbench.Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\thandler\trun\tslots\tmissing\tdoubled\tre-run\tp50 ms\tp99 ms\tmax ms\tlate\temit p99 ms\thist p50 ms\thist p99 ms\thist n\t")
	for _, r := range results {
		l, h := r.Ledger, r.Histogram
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.1f\t%d\t%.1f\t%.1f\t%.1f\t%.0f\t\n",
			r.Mode, r.Handler, r.Run, l.Expected, l.Missing, l.Doubled, l.ReRun, l.P50, l.P99, l.Max, l.Late, l.EmitP99, h.P50, h.P99, h.Count)
	}
	tw.Flush()
	bound := results[0].Ledger.LateBound
	fmt.Fprintf(w, "\nslots: ticks expected (slot x shard); doubled: emitted twice, or run twice without the handler being told;\n"+
		"re-run: started again and told why (a retry, or a run again after an interruption: marked interrupted);\n"+
		"p50/p99/max: slot -> first handler start from the results topic\n"+
		"(authoritative under faults: it survives kill -9); late: starts more than %.0f ms after the slot; emit: slot ->\n"+
		"the leader's emitted_at; hist: the workers' tickgroup_worker_start_delay_seconds summed over every worker\n"+
		"process (bucket-interpolated).\n", bound)
	for _, r := range results {
		var notes []string
		if !r.Settled {
			notes = append(notes, "not settled: some ticks had no outcome when --settle ran out")
		}
		if len(r.Crashes) > 0 {
			notes = append(notes, "exited by themselves: "+strings.Join(r.Crashes, ", "))
		}
		if r.Histogram.Lost > 0 {
			notes = append(notes, fmt.Sprintf("%d worker histograms lost", r.Histogram.Lost))
		}
		if r.Ledger.Early > 0 {
			notes = append(notes, fmt.Sprintf("%d ticks started before their slot", r.Ledger.Early))
		}
		if r.Ledger.RanTwice > 0 || r.Ledger.EmittedTwice > 0 || r.Ledger.Unexpected > 0 {
			notes = append(notes, fmt.Sprintf("emitted twice %d, ran twice %d, unexpected %d", r.Ledger.EmittedTwice, r.Ledger.RanTwice, r.Ledger.Unexpected))
		}
		if len(r.Ledger.Worst) > 0 {
			worst := make([]string, 0, len(r.Ledger.Worst))
			for _, d := range r.Ledger.Worst {
				worst = append(worst, fmt.Sprintf("%s %.0f ms (emit %.0f)", d.ID, d.Start, d.Emit))
			}
			notes = append(notes, "latest: "+strings.Join(worst, ", "))
		}
		faults := make([]string, 0, len(r.Faults))
		for _, f := range r.Faults {
			faults = append(faults, fmt.Sprintf("+%.1fs %s", f.At.Sub(r.From).Seconds(), f.Action))
		}
		fmt.Fprintf(w, "run %d: %s, slots %s to %s", r.Run, r.Namespace, r.From.Format(time.TimeOnly), r.To.Format(time.TimeOnly))
		if len(faults) > 0 {
			fmt.Fprintf(w, "; faults: %s", strings.Join(faults, "; "))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "; %s", strings.Join(notes, "; "))
		}
		fmt.Fprintln(w)
	}
}
