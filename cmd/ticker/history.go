package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/cli"
)

const historyUsage = `Usage: ticker history NAME [--since D] [--json]

Show each slot of schedule NAME in the last --since: when its ticks were emitted and, for each execution, the
worker, attempt, outcome and duration, from the execution ledger in <ns>.results. Started entries may have
been compacted away once an outcome exists; what is retained is shown. Expected slots that were never emitted
are shown too (missing, pending or passed over by catch-up).`

// historyCommand is ticker history NAME: each slot of one schedule and its executions.
type historyCommand struct {
	common     cli.Common
	since      time.Duration
	grace      time.Duration
	leadWindow time.Duration
	timeout    time.Duration
	asJSON     bool
	name       string
}

func (c *historyCommand) flags(fs *flag.FlagSet) string {
	c.common.Register(fs, "")
	fs.DurationVar(&c.since, "since", time.Hour, "show the slots of this long before now")
	fs.DurationVar(&c.grace, "grace", 5*time.Minute, "a tick not emitted or without an outcome this long after its due time is missing")
	fs.DurationVar(&c.leadWindow, "lead", audit.DefaultLead, "the tickers' --lead: slots due this long after a change may run under the version before it (0: emitted when due)")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "give up reading the topics after this long")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON (for scripts)")
	return historyUsage
}

// parseAround parses the flags before, between and after the arguments, the flag package's way each time: it
// takes the first argument left, and parses what follows it.
func parseAround(fs *flag.FlagSet, args []string, getenv func(string) string) ([]string, error) {
	var positional []string
	for rest := args; ; {
		if err := cli.Parse(fs, rest, getenv); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional, rest = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
}

func (c *historyCommand) check(positional []string) error {
	if len(positional) != 1 {
		return cli.Usagef("ticker history: exactly one schedule NAME is required")
	}
	c.name = positional[0]
	if c.since <= 0 {
		return cli.Usagef("ticker history: --since must be positive")
	}
	return c.common.Finish()
}

func (c *historyCommand) run(ctx context.Context, stdout, _ io.Writer) error {
	now := time.Now()
	from := now.Add(-c.since)
	rep, err := readReport(ctx, c.common, c.timeout, audit.Options{From: from, Now: now, Grace: c.grace, Lead: cmp.Or(c.leadWindow, -1), Schedule: c.name, AllTicks: true})
	if err != nil {
		return err
	}
	h, found := audit.HistoryOf(rep, c.name, from)
	if !found {
		return fmt.Errorf("schedule %q: no definition and no ticks in the namespace's topics", c.name)
	}
	if c.asJSON {
		return printJSON(stdout, h)
	}
	printHistory(stdout, h)
	return nil
}

func printHistory(w io.Writer, h audit.History) {
	fmt.Fprintf(w, "schedule   %s\n", h.Name)
	fmt.Fprintf(w, "since      %s (%d ticks)\n", h.Since.Format(time.RFC3339), len(h.Ticks))
	for _, v := range h.Versions {
		fmt.Fprintf(w, "version    %d from %s: %s\n", v.Version, v.At.Format(time.RFC3339), describeVersion(v))
	}
	for _, n := range h.Notes {
		fmt.Fprintf(w, "note       %s\n", n)
	}
	fmt.Fprintln(w)
	printTicks(w, h.Ticks)
	if len(h.Triggers) > 0 {
		fmt.Fprintln(w, "\nMANUAL TRIGGERS")
		printTicks(w, h.Triggers)
	}
	if len(h.Backfills) > 0 {
		fmt.Fprintln(w, "\nBACKFILLS (past slots run again)")
		printTicks(w, h.Backfills)
	}
}

// printTicks prints one line per execution (one per tick without any), the tick's columns on its first line.
func printTicks(w io.Writer, ticks []audit.TickReport) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tSHARD\tSTATE\tPOOL\tEMITTED\tWORKER\tATTEMPT\tOUTCOME\tDURATION\tPROBLEMS")
	for _, t := range ticks {
		emitted := "-"
		if n := len(t.Emissions); n > 0 {
			emitted = t.Emissions[0].EmittedAt.Format("15:04:05.000")
			if n > 1 {
				emitted += fmt.Sprintf(" (x%d)", n)
			}
		}
		lead := fmt.Sprintf("%s\t%d\t%s\t%s\t%s", t.Slot.Format(time.RFC3339), t.Shard, t.State, cmp.Or(t.Pool, "-"), emitted)
		problems := cmp.Or(strings.Join(t.Problems, ","), "-")
		if len(t.Executions) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\n", lead, problems)
			continue
		}
		for i, x := range t.Executions {
			if i > 0 {
				lead, problems = "\t\t\t\t", ""
			}
			dur := "-"
			if x.DurationMS > 0 {
				dur = (time.Duration(x.DurationMS * float64(time.Millisecond))).Round(time.Millisecond).String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", lead, cmp.Or(x.Worker, "-"), x.Attempt, x.Status, dur, problems)
		}
	}
	_ = tw.Flush()
}
