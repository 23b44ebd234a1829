package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/when"
)

// errAuditFailed makes `ticker audit` exit 1 when a slot is missing, doubled or ran twice (with --strict: or re-ran
// at all).
var errAuditFailed = errors.New("audit failed")

const auditUsage = `Usage: ticker audit [--from T] [--to T] [--schedule NAME] [--strict] [--json]

Derive from each schedule's retained definitions (versions, pauses, start/end, catch-up policy) the slots that
should exist in the range, and compare them with the ticks emitted (<ns>.work, read_committed) and executed
(<ns>.results). Per schedule: expected, emitted, executed, missing, doubled, ran twice, marked re-run, re-run,
interrupted, passed over by catch-up, pending, unexpected, and excluded: the slots its calendars exclude
(exclude, on_excluded: skip), never missing, decided by the calendars in force when the leader planned each slot
(<ns>.calendars; before a calendar's oldest retained record, as that record defines it). Counts are ticks (slot x
shard). Manual triggers are listed apart and never expected.

A tick that ran more than once (re-run) is, by its later runs in the execution ledger:
  ran twice      a later run neither marked interrupted (its handler was not told) nor a retry, after a run
                 that may have had its effects: two ok outcomes the later of which is not marked, a start
                 after an outcome, a start after a run cut off
  marked re-run  a later run marked interrupted (TICK_INTERRUPTED=1, Tick.Interrupted) and none unmarked: run
                 again after an interruption, at least once by design; two ok outcomes included when the later
                 run was marked (a worker cut off from the broker whose handler still finished)
  retried        every later run a retry after a failed attempt (a release marked retry before it, or the
                 same worker's next attempt)

A namespace too large to hold at once is read in passes (--passes; by default one per million records of the
schedules topic): a pass holds the schedules whose names hash to it and their ticks, and reads the work and
results topics whole, so the memory is a pass's and the time grows with the passes. The rows come pass by pass,
each pass's sorted by name. A pass keeps of the other schedules' ticks only each leader term's first and last
emission, which tells a slot passed over by catch-up from a missing one: exactly with one leader, closely with
several (their terms overlap).

Exit status 1 when a tick is missing, doubled (emitted twice) or ran twice; with --strict also when any tick
re-ran (marked re-runs and retries included); 0 otherwise.`

// auditCommand is ticker audit: the slots that should exist against the ticks emitted and executed.
type auditCommand struct {
	common     cli.Common
	from, to   instantFlag
	name       string
	passes     int
	grace      time.Duration
	leadWindow time.Duration
	timeout    time.Duration
	asJSON     bool
	strict     bool
	options    audit.Options // from the flags, against the instant of the check
}

func (c *auditCommand) flags(fs *flag.FlagSet) string {
	c.common.Register(fs, "")
	fs.Var(&c.from, "from", "first slot to audit: RFC 3339, now, or a duration before now such as 24h (default: everything retained)")
	fs.Var(&c.to, "to", "last slot to audit: RFC 3339, now, or a duration before now (default: now)")
	fs.StringVar(&c.name, "schedule", "", "audit only this schedule")
	fs.DurationVar(&c.grace, "grace", 5*time.Minute, "a tick not emitted or without an outcome this long after its due time is missing (before: pending)")
	fs.DurationVar(&c.leadWindow, "lead", audit.DefaultLead, "the tickers' --lead: slots due this long after a change may run under the version before it (0: emitted when due)")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "give up reading the topics after this long (with several passes: this long times the passes)")
	fs.IntVar(&c.passes, "passes", 0, "read the namespace in this many passes, each holding the schedules whose names hash to it and their ticks (0: one per "+
		"million records of the schedules topic; 1: one read, rows sorted by name); rows come pass by pass")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON (for scripts)")
	fs.BoolVar(&c.strict, "strict", false, "also fail (exit 1) on any tick that ran more than once: marked re-runs and retries after failures too")
	return auditUsage
}

func (c *auditCommand) check(positional []string) error {
	if len(positional) > 0 {
		return cli.Usagef("ticker audit: unexpected argument %q", positional[0])
	}
	if c.passes < 0 || c.passes > maxAuditPasses {
		return cli.Usagef("ticker audit: --passes %d: want 0 (as many as the namespace needs) to %d", c.passes, maxAuditPasses)
	}
	if err := c.common.Finish(); err != nil {
		return err
	}
	now := time.Now()
	c.options = audit.Options{From: c.from.at(now), To: c.to.at(now), Now: now, Grace: c.grace, Lead: cmp.Or(c.leadWindow, -1), Schedule: c.name, Strict: c.strict}
	if !c.options.From.IsZero() && !c.options.To.IsZero() && c.options.To.Before(c.options.From) {
		return cli.Usagef("ticker audit: --to is before --from")
	}
	return nil
}

func (c *auditCommand) run(ctx context.Context, stdout, _ io.Writer) error {
	opts, err := c.common.Kafka.Opts(nil)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	names := c.common.Kafka.Names()
	passes := c.passes
	if c.name != "" {
		passes = 1
	}
	if passes == 0 {
		pctx, cancel := context.WithTimeout(ctx, c.timeout)
		passes, err = audit.Passes(pctx, opts, names)
		cancel()
		if err != nil {
			return err
		}
		passes = min(passes, maxAuditPasses)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout*time.Duration(passes))
	defer cancel()
	var out auditWriter = &auditText{w: stdout, namespace: c.common.Kafka.Namespace}
	switch {
	case c.asJSON && passes == 1:
		out = &auditWholeJSON{w: stdout}
	case c.asJSON:
		out = &auditJSON{w: stdout}
	}
	rep, err := audit.Stream(ctx, opts, names, c.options, passes, out.pass)
	if err != nil {
		return err
	}
	if err := out.end(rep); err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("%w: %s", errAuditFailed, auditSummary(rep))
	}
	return nil
}

// maxAuditPasses bounds --passes: a pass reads the work and results topics whole.
const maxAuditPasses = 1000

// auditSummary counts what decides the audit's result, triggers included: the failures first, then the re-runs
// that fail only with --strict.
func auditSummary(rep *audit.Report) string {
	t, g, b := rep.Totals, rep.TriggerTotals, rep.BackfillTotals
	s := fmt.Sprintf("%d ticks missing, %d doubled, %d ran twice", t.Missing, t.Doubled+g.Doubled+b.Doubled, t.RanTwice+g.RanTwice+b.RanTwice)
	marked, retried := t.MarkedReRun+g.MarkedReRun+b.MarkedReRun, t.Retried+g.Retried+b.Retried
	if rep.Strict {
		return fmt.Sprintf("--strict: %s, %d marked re-runs, %d retried", s, marked, retried)
	}
	return fmt.Sprintf("%s; %d marked re-runs and %d retried pass without --strict", s, marked, retried)
}

func readReport(ctx context.Context, common cli.Common, timeout time.Duration, o audit.Options) (*audit.Report, error) {
	opts, err := common.Kafka.Opts(nil)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return audit.Run(ctx, opts, common.Kafka.Names(), o)
}

// maxProblemRows bounds the problem ticks printed per schedule (--json has them all).
const maxProblemRows = 20

func printAudit(w io.Writer, namespace string, rep *audit.Report) {
	a := &auditText{w: w, namespace: namespace}
	_ = a.pass(rep)
	_ = a.end(rep)
}

// scheduleNotes are the notes of one schedule: the report's, its re-runs and its outcomes other than ok.
func scheduleNotes(s audit.ScheduleReport) []string {
	var notes []string
	for _, n := range s.Notes {
		notes = append(notes, s.Name+": "+n)
	}
	if s.RanTwice > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d ticks ran again without their handler being told (not marked interrupted, not a retry)", s.Name, s.RanTwice))
	}
	if s.MarkedReRun > 0 {
		notes = append(notes, fmt.Sprintf("%s: %d ticks ran again after an interruption, marked (TICK_INTERRUPTED=1): not a failure without --strict", s.Name, s.MarkedReRun))
	}
	var notOK []string
	for _, st := range sortedKeys(s.Outcomes) {
		if st != "ok" {
			notOK = append(notOK, fmt.Sprintf("%d %s", s.Outcomes[st], st))
		}
	}
	if len(notOK) > 0 {
		notes = append(notes, fmt.Sprintf("%s: outcomes other than ok: %s", s.Name, strings.Join(notOK, ", ")))
	}
	return notes
}

// printProblemTicks lists the ticks with problems and the slots passed over, at most maxProblemRows a schedule,
// under one heading when there is any.
func printProblemTicks(w io.Writer, schedules []audit.ScheduleReport) {
	first := true
	for _, s := range schedules {
		shown := 0
		for _, t := range s.Ticks {
			if len(t.Problems) == 0 && t.State != audit.StatePassedOver {
				continue
			}
			if first {
				fmt.Fprintln(w, "\nTICKS WITH PROBLEMS (and slots passed over by catch-up)")
				first = false
			}
			if shown == maxProblemRows {
				fmt.Fprintf(w, "  %s: ... and more (use --json or ticker history %s)\n", s.Name, s.Name)
				break
			}
			shown++
			fmt.Fprintf(w, "  %-48s %-12s %s\n", t.ID, t.State, strings.Join(t.Problems, ","))
		}
	}
}

// printTriggers lists the manual triggers, when there is any.
func printTriggers(w io.Writer, triggers []audit.TickReport) {
	if len(triggers) == 0 {
		return
	}
	fmt.Fprintln(w, "\nMANUAL TRIGGERS (never expected)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMITTED\tSTATE\tPROBLEMS")
	for _, t := range triggers {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", t.ID, len(t.Emissions), t.State, cmp.Or(strings.Join(t.Problems, ","), "-"))
	}
	_ = tw.Flush()
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func fmtAuditTime(t *time.Time) string {
	if t == nil {
		return "(everything retained)"
	}
	return t.UTC().Format(time.RFC3339)
}

// describeVersion is one version of a schedule in a line.
func describeVersion(v audit.VersionReport) string {
	if v.Deleted || v.Spec == nil {
		return "deleted"
	}
	s := *v.Spec
	d := s.Describe()
	if s.Shards > 1 {
		d += fmt.Sprintf(", %d shards", s.Shards)
	}
	d += ", catchup " + s.CatchupPolicy()
	if s.Paused {
		d += ", paused"
	}
	return d
}

// instantFlag is --from or --to of ticker audit, as when.Parse reads it (an instant in the past), kept as typed
// and read against the audit's now.
type instantFlag struct{ s string }

func (f *instantFlag) String() string { return f.s }

// Set checks s now, so that a mistake is a usage error before any connection.
func (f *instantFlag) Set(s string) error {
	if _, err := when.Parse(s, time.Now(), when.Past); err != nil {
		return err
	}
	f.s = s
	return nil
}

// at returns the instant, relative to now; the zero time when unset.
func (f *instantFlag) at(now time.Time) time.Time {
	if f.s == "" {
		return time.Time{}
	}
	t, _ := when.Parse(f.s, now, when.Past) // checked by Set
	return t
}
