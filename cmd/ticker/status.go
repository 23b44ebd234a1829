package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/status"
)

const statusUsage = `Usage: ticker status [NAME | --fleet] [--window D] [--late D] [--grace D] [--max-records N] [--json]

Show the replica that leads each partition of <ns>.ticker (the partition's owner) and its producer epoch, each
schedule's last emitted and next slot, paused schedules, and the workers' lag on each partition of <ns>.work.

For each schedule also its last run (the newest slot due by now that was emitted or ran, from <ns>.work and the
execution ledger <ns>.results, read_committed): its outcome (or running, pending, no_outcome), its start delay
(the first attempt's start minus the tick's instant, its slot plus any jitter; "outcome only" when the started
entry was compacted away, "waiting" while it has not started), its attempts; and MISSED, the slots it missed in
the --window: slots its definitions should have made that were neither emitted nor passed over by its catch-up
policy, or emitted without an outcome, --grace after their instant (counted as ticker audit counts them).

With NAME: that schedule in detail, with its next 5 slots in UTC and in its zone (TZ for a cron schedule), its
leader, its last run and the slots it missed. An unknown NAME is an error (exit status 1). It reads that
schedule's records only, so its memory does not grow with the namespace (the schedules naming its limit are not
counted then).

With --fleet: the leaders, pools, limits, backfills and clocks, and no schedule: for a namespace of millions of
schedules, where the table of every one would take gigabytes (about 6 KB a schedule with its runs).

The runs are read as ticker audit reads them: everything <ns>.work and <ns>.results retain, so the time and
memory grow with what they retain (docs/benchmarks.md). Beyond --max-records retained records only their
records since the window's start (less 6m, the longest lead) are read, and a note says so: a last run before
that shows as -. Without Read on those topics the command stops with an error naming the ACL.`

// statusCommand is ticker status [NAME]: the fleet and the schedules, or one schedule in detail.
type statusCommand struct {
	common  cli.Common
	asJSON  bool
	window  time.Duration
	late    time.Duration
	grace   time.Duration
	timeout time.Duration
	maxRecs int64
	fleet   bool
	name    string    // NAME, or "" for every schedule
	opts    []kgo.Opt // the connection's, checked
}

func (c *statusCommand) flags(fs *flag.FlagSet) string {
	c.common.Register(fs, "")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON (for scripts)")
	fs.BoolVar(&c.fleet, "fleet", false, "show the fleet only, reading no schedule (for a namespace of millions)")
	fs.DurationVar(&c.window, "window", status.DefaultWindow, "count each schedule's missed slots over this long before now")
	fs.DurationVar(&c.late, "late", 0, "list only the schedules that started their last run more than this after its instant (or still wait to), or missed a slot in the window (0: every schedule)")
	fs.DurationVar(&c.grace, "grace", status.DefaultGrace, "a tick not emitted, or without an outcome, this long after its instant counts as missed (before: pending)")
	fs.Int64Var(&c.maxRecs, "max-records", status.DefaultMaxRecords, "read all the work and results topics retain while it is at most this many records; beyond it, only their records since the window's start less 6m (-1: always all)")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "give up reading the topics after this long (the parts read by then are shown)")
	return statusUsage
}

func (c *statusCommand) check(positional []string) error {
	if len(positional) > 1 {
		return cli.Usagef("ticker status: at most one schedule NAME, got %d arguments", len(positional))
	}
	if c.fleet && (len(positional) == 1 || c.late > 0) {
		return cli.Usagef("ticker status: --fleet reads no schedule: not with a NAME or --late")
	}
	if c.window <= 0 || c.grace <= 0 || c.timeout <= 0 {
		return cli.Usagef("ticker status: --window, --grace and --timeout must be positive")
	}
	if c.late < 0 {
		return cli.Usagef("ticker status: --late must not be negative")
	}
	if err := c.common.Finish(); err != nil {
		return err
	}
	opts, err := c.common.Kafka.Opts(nil)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	if c.maxRecs == 0 || c.maxRecs < -1 {
		return cli.Usagef("ticker status: --max-records must be positive, or -1 for no bound")
	}
	c.opts = opts
	if len(positional) == 1 {
		c.name = positional[0]
	}
	return nil
}

func (c *statusCommand) run(ctx context.Context, stdout, _ io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	o := status.Options{Window: c.window, Grace: c.grace, Late: c.late, MaxRecords: c.maxRecs, Schedule: c.name, FleetOnly: c.fleet}
	rep, err := status.Collect(ctx, c.opts, c.common.Kafka.Names(), c.common.Kafka.Namespace, o)
	if err != nil {
		return err
	}
	switch {
	case c.asJSON:
		return printJSON(stdout, rep)
	case c.name != "":
		status.PrintSchedule(stdout, rep)
	default:
		status.Print(stdout, rep)
	}
	return nil
}
