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

func runHistory(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ticker history", flag.ContinueOnError)
	fs.SetOutput(stdout) // help; errors are returned and printed on stderr by main
	var (
		common     cli.Common
		since      time.Duration
		grace      time.Duration
		leadWindow time.Duration
		timeout    time.Duration
		asJSON     bool
	)
	common.Register(fs, "")
	fs.DurationVar(&since, "since", time.Hour, "show the slots of this long before now")
	fs.DurationVar(&grace, "grace", 5*time.Minute, "a tick not emitted or without an outcome this long after its due time is missing")
	fs.DurationVar(&leadWindow, "lead", audit.DefaultLead, "the tickers' --lead: slots due this long after a change may run under the version before it (0: emitted when due)")
	fs.DurationVar(&timeout, "timeout", 2*time.Minute, "give up reading the topics after this long")
	fs.BoolVar(&asJSON, "json", false, "print JSON (for scripts)")
	fs.Usage = cli.UsageCommonEnv(fs, `Usage: ticker history NAME [--since D] [--json]

Show each slot of schedule NAME in the last --since: when its ticks were emitted and, for each execution, the
worker, attempt, outcome and duration, from the execution ledger in <ns>.results. Started entries may have
been compacted away once an outcome exists; what is retained is shown. Expected slots that were never emitted
are shown too (missing, pending or passed over by catch-up).`)
	// NAME may come before, between or after the flags. Only the connection and logging flags come from
	// TICKGROUP_* variables (a worker's TICKGROUP_GRACE or TICKGROUP_TIMEOUT on the host must not reach them).
	var positional []string
	for rest := args; ; {
		if err := cli.Parse(fs, rest, cli.CommonEnv(getenv)); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional, rest = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	if len(positional) != 1 {
		return cli.Usagef("ticker history: exactly one schedule NAME is required")
	}
	name := positional[0]
	if since <= 0 {
		return cli.Usagef("ticker history: --since must be positive")
	}
	if err := common.Finish(); err != nil {
		return err
	}
	now := time.Now()
	from := now.Add(-since)
	rep, err := readReport(ctx, common, timeout, audit.Options{From: from, Now: now, Grace: grace, Lead: cmp.Or(leadWindow, -1), Schedule: name, AllTicks: true})
	if err != nil {
		return err
	}
	h, found := audit.HistoryOf(rep, name, from)
	if !found {
		return fmt.Errorf("schedule %q: no definition and no ticks in the namespace's topics", name)
	}
	if asJSON {
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
