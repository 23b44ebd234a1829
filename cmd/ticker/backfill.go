package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/when"
)

const backfillUsage = `Usage: ticker schedule backfill NAME --from T --to T [--dry-run] [--reprocess none|failed|all] [--max-running N]
       ticker schedule backfill --list [--json]
       ticker schedule backfill --cancel ID

Run the past slots of schedule NAME in [--from, --to) again: every slot of the range by the schedule's
definition and zone, before the schedule was created too (not before its start or after its end). T is an
RFC 3339 instant, now, or a duration before now (90m). The schedule's leader emits one tick per slot and
shard, in slot order, at most --max-running slots without an outcome at once; each tick is marked
(TICK_BACKFILL=1, Tick.Backfill) and its ID ends with ~backfill-ID. A leader killed midway loses and doubles no
slot. The runs of a schedule's shard never overlap, backfill or not, and a backfill runs whether or not the
schedule is paused.

--reprocess decides from the slots' last outcomes (the results topic): none runs only the slots that never ran
(no outcome), failed also those whose last outcome is not ok, all every slot. --dry-run prints every slot of
the range, one per line (RFC 3339), with its last outcome and whether it would run, and writes nothing.`

// backfillCommand is ticker schedule backfill: a backfill of schedule NAME over [--from, --to), or --list, or
// --cancel ID.
type backfillCommand struct {
	name           string
	from, to       string
	fromAt, toAt   time.Time
	reprocess      string
	maxRunning     int
	list           bool
	cancel         string
	reason         string
	dryRun, asJSON bool
}

func (b *backfillCommand) flags(fs *flag.FlagSet) string {
	fs.StringVar(&b.from, "from", "", "first instant of the range (RFC 3339, now, or a duration before now such as 24h)")
	fs.StringVar(&b.to, "to", "", "end of the range, excluded (RFC 3339, now, or a duration before now; at most now)")
	fs.StringVar(&b.reprocess, "reprocess", "none", "which slots run: none (only those that never ran), failed (also those whose last outcome is not ok) or all")
	fs.IntVar(&b.maxRunning, "max-running", 1, fmt.Sprintf("slots of the backfill emitted without an outcome at once (1-%d)", tickgroup.MaxBackfillRunning))
	fs.BoolVar(&b.list, "list", false, "list the backfills and their progress")
	fs.StringVar(&b.cancel, "cancel", "", "stop backfill ID: no more of its slots are emitted")
	fs.StringVar(&b.reason, "reason", "", "why (kept in the change log and with the backfill)")
	fs.BoolVar(&b.dryRun, "dry-run", false, "print every slot of the range and whether it would run, without writing anything")
	fs.BoolVar(&b.asJSON, "json", false, "print JSON")
	return backfillUsage
}

// check takes the schedule's name as the mode (request, --list, --cancel) needs it, and checks a request's range
// and options.
func (b *backfillCommand) check(positional []string) error {
	switch {
	case b.list && b.cancel != "":
		return cli.Usagef("schedule backfill: --list and --cancel exclude each other")
	case (b.list || b.cancel != "") && len(positional) > 0:
		return cli.Usagef("schedule backfill: unexpected argument %q with --list or --cancel", positional[0])
	case b.list || b.cancel != "":
		return nil
	case len(positional) != 1:
		return cli.Usagef("schedule backfill: exactly one schedule NAME is required")
	case b.from == "" || b.to == "":
		return cli.Usagef("schedule backfill: --from and --to are required")
	}
	b.name = positional[0]
	now := time.Now()
	var err error
	if b.fromAt, err = parseInstant("from", b.from, now); err != nil {
		return err
	}
	if b.toAt, err = parseInstant("to", b.to, now); err != nil {
		return err
	}
	if b.maxRunning < 1 || b.maxRunning > tickgroup.MaxBackfillRunning {
		return cli.Usagef("schedule backfill: --max-running %d: want 1 to %d", b.maxRunning, tickgroup.MaxBackfillRunning)
	}
	switch tickgroup.Reprocess(b.reprocess) {
	case tickgroup.ReprocessNone, tickgroup.ReprocessFailed, tickgroup.ReprocessAll:
	default:
		return cli.Usagef("schedule backfill: --reprocess %q: want none, failed or all", b.reprocess)
	}
	if !b.fromAt.Before(b.toAt) {
		return cli.Usagef("schedule backfill: --from %s is not before --to %s", b.fromAt.Format(time.RFC3339), b.toAt.Format(time.RFC3339))
	}
	if b.toAt.After(now) {
		return cli.Usagef("schedule backfill: --to %s is in the future: a backfill runs past slots only", b.toAt.Format(time.RFC3339))
	}
	return nil
}

// parseInstant reads --from or --to (when.Parse: RFC 3339, now, or a duration before now).
func parseInstant(flagName, s string, now time.Time) (time.Time, error) {
	t, err := when.Parse(s, now, when.Past)
	if err != nil {
		return time.Time{}, cli.Usagef("schedule backfill: --%s %s: %v", flagName, s, err)
	}
	return t, nil
}

func (b *backfillCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	opts := []tickgroup.ChangeOption{tickgroup.Reason(b.reason)}
	switch {
	case b.list:
		return listBackfills(ctx, client, b.asJSON, stdout)
	case b.cancel != "":
		if err := client.CancelBackfill(ctx, b.cancel, opts...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "backfill %s cancelled: no more of its slots are emitted\n", b.cancel)
		return nil
	}
	o := tickgroup.BackfillOptions{Reprocess: tickgroup.Reprocess(b.reprocess), MaxRunning: b.maxRunning, DryRun: b.dryRun}
	plan, err := client.Backfill(ctx, b.name, b.fromAt, b.toAt, o, opts...)
	if errors.Is(err, tickgroup.ErrNothingToBackfill) {
		if b.asJSON {
			return printJSON(stdout, plan)
		}
		fmt.Fprintf(stdout, "nothing to backfill: none of the %d slot(s) of the range is to run with --reprocess %s\n", len(plan.Slots), b.reprocess)
		return nil
	}
	if err != nil {
		return err
	}
	if b.asJSON {
		return printJSON(stdout, plan)
	}
	printPlan(stdout, plan, b.dryRun)
	return nil
}

// printPlan prints a backfill requested, or with dryRun every slot of its range and whether it would run.
func printPlan(w io.Writer, plan tickgroup.Backfill, dryRun bool) {
	runs := len(plan.Runs())
	excluded := ""
	if plan.Excluded > 0 {
		excluded = fmt.Sprintf(", %d more excluded by its calendars", plan.Excluded)
	}
	if !dryRun {
		fmt.Fprintf(w, "backfill %s requested: %d of %d slot(s) of %s run (--reprocess %s%s); follow it with ticker schedule backfill --list\n",
			plan.ID, runs, len(plan.Slots), plan.Schedule, plan.Reprocess, excluded)
		return
	}
	for _, s := range plan.Slots {
		what := "skip"
		if s.Run {
			what = "run"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", s.Slot.Format(time.RFC3339), what, orNone(s.Status))
	}
	fmt.Fprintf(w, "dry run: %d of %d slot(s) would run (--reprocess %s%s); nothing written\n", runs, len(plan.Slots), plan.Reprocess, excluded)
}

// orNone is what a dry run prints of a slot's status: "no-outcome" when it has none.
func orNone(s tickgroup.Status) string {
	if s == "" {
		return "no-outcome"
	}
	return string(s)
}

// listBackfills prints every backfill with its progress.
func listBackfills(ctx context.Context, client *tickgroup.Schedules, asJSON bool, stdout io.Writer) error {
	all, err := client.Backfills(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if all == nil {
			all = []tickgroup.BackfillStatus{}
		}
		return printJSON(stdout, all)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSCHEDULE\tRANGE\tSLOTS\tEMITTED\tRUNNING\tSTATE\tBY\tREASON")
	for _, b := range all {
		why := "-"
		if b.Reason != "" {
			why = strconv.Quote(b.Reason)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s..%s\t%d\t%d\t%d\t%s\t%s\t%s\n", b.ID, b.Schedule, b.From.Format(time.RFC3339), b.To.Format(time.RFC3339),
			len(b.Slots), b.Emitted, b.Running, b.State, strings.TrimSpace(b.By), why)
	}
	return tw.Flush()
}
