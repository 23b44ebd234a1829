package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/status"
)

func runStatus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ticker status", flag.ContinueOnError)
	fs.SetOutput(stdout) // help; errors are returned and printed on stderr by main
	var (
		common  cli.Common
		asJSON  bool
		window  time.Duration
		late    time.Duration
		grace   time.Duration
		timeout time.Duration
		maxRecs int64
	)
	common.Register(fs, "")
	fs.BoolVar(&asJSON, "json", false, "print JSON (for scripts)")
	fs.DurationVar(&window, "window", status.DefaultWindow, "count each schedule's missed slots over this long before now")
	fs.DurationVar(&late, "late", 0, "list only the schedules that started their last run more than this after its instant (or still wait to), or missed a slot in the window (0: every schedule)")
	fs.DurationVar(&grace, "grace", status.DefaultGrace, "a tick not emitted, or without an outcome, this long after its instant counts as missed (before: pending)")
	fs.Int64Var(&maxRecs, "max-records", status.DefaultMaxRecords, "read all the work and results topics retain while it is at most this many records; beyond it, only their records since the window's start less 6m (-1: always all)")
	fs.DurationVar(&timeout, "timeout", time.Minute, "give up reading the topics after this long (the parts read by then are shown)")
	fs.Usage = cli.UsageCommonEnv(fs, `Usage: ticker status [NAME] [--window D] [--late D] [--grace D] [--max-records N] [--json]

Show the replica that leads each partition of <ns>.ticker (the partition's owner) and its producer epoch, each
schedule's last emitted and next slot, paused schedules, and the workers' lag on each partition of <ns>.work.

For each schedule also its last run (the newest slot due by now that was emitted or ran, from <ns>.work and the
execution ledger <ns>.results, read_committed): its outcome (or running, pending, no_outcome), its start delay
(the first attempt's start minus the tick's instant, its slot plus any jitter; "outcome only" when the started
entry was compacted away, "waiting" while it has not started), its attempts; and MISSED, the slots it missed in
the --window: slots its definitions should have made that were neither emitted nor passed over by its catch-up
policy, or emitted without an outcome, --grace after their instant (counted as ticker audit counts them).

With NAME: that schedule in detail, with its next 5 slots in UTC and in its zone (TZ for a cron schedule), its
leader, its last run and the slots it missed. An unknown NAME is an error (exit status 1).

The runs are read as ticker audit reads them: everything <ns>.work and <ns>.results retain, so the time and
memory grow with what they retain (docs/benchmarks.md). Beyond --max-records retained records only their
records since the window's start (less 6m, the longest lead) are read, and a note says so: a last run before
that shows as -. Without Read on those topics the command stops with an error naming the ACL.`)
	// NAME may come before, between or after the flags. Only the connection and logging flags come from
	// TICKGROUP_* variables (a worker's TICKGROUP_GRACE or TICKGROUP_TIMEOUT on the host must not reach them).
	positional, err := cli.ParseInterspersed(fs, args, cli.CommonEnv(getenv))
	if err != nil {
		return err
	}
	if len(positional) > 1 {
		return cli.Usagef("ticker status: at most one schedule NAME, got %d arguments", len(positional))
	}
	if window <= 0 || grace <= 0 || timeout <= 0 {
		return cli.Usagef("ticker status: --window, --grace and --timeout must be positive")
	}
	if late < 0 {
		return cli.Usagef("ticker status: --late must not be negative")
	}
	if err := common.Finish(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts, err := common.Kafka.Opts(nil)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	if maxRecs == 0 || maxRecs < -1 {
		return cli.Usagef("ticker status: --max-records must be positive, or -1 for no bound")
	}
	o := status.Options{Window: window, Grace: grace, Late: late, MaxRecords: maxRecs}
	if len(positional) == 1 {
		o.Schedule = positional[0]
	}
	rep, err := status.Collect(ctx, opts, common.Kafka.Names(), common.Kafka.Namespace, o)
	if err != nil {
		return err
	}
	switch {
	case asJSON:
		return printJSON(stdout, rep)
	case o.Schedule != "":
		status.PrintSchedule(stdout, rep)
	default:
		status.Print(stdout, rep)
	}
	return nil
}
