package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/when"
)

const scheduleUsage = `Usage: ticker schedule SUBCOMMAND [NAME] [flags]

Manage the schedules of a namespace (the compacted topic <ns>.schedules, followed live by every replica).

Subcommands:
  put NAME        create or replace a schedule (--every D | --cron EXPR [--tz ZONE], ...)
  get NAME        print a schedule as JSON
  list            list the schedules (--json)
  delete NAME     delete a schedule; ticks already emitted ahead for later slots are cancelled
  pause NAME      stop a schedule: no slot due after the pause runs (emitted ticks are cancelled; the slots are
                  not caught up on resume)
  resume NAME     emit again, from the next slot after the resume (and after the ones emitted before the pause)
  trigger NAME    emit one tick now, with an ID that can never collide with a scheduled slot
  backfill NAME   run the past slots of a range again (--from T --to T [--dry-run] [--reprocess none|failed|all]
                  [--max-running N]); backfill --list lists the backfills, backfill --cancel ID stops one
  apply -f FILE   make the schedules (and the calendars and limits it defines) match a YAML file (--prune,
                  --dry-run)
  log [NAME]      who changed which schedule, when, why, from what to what (the change log, <ns>.changes)

put, pause, resume, delete, apply, trigger and backfill take --reason TEXT, kept in the change log (and shown with a pause);
pause takes --until T (RFC 3339, or a duration from now such as 2h): the pause ends then, as a resume would.
put --limit NAME counts the schedule's runs against a limit of its pool (ticker limit). put --exclude NAME lists
calendars whose days the schedule does not run on (ticker calendar); this build refuses it, as its leader does
not honour calendars yet.

Run 'ticker schedule SUBCOMMAND --help' for its flags.`

// clientCommand is one subcommand of ticker schedule or ticker limit. Each parses and checks its own flags and
// arguments, before any connection, then runs on a Schedules client that runGroup opens.
type clientCommand interface {
	// flags registers the subcommand's own flags on fs and returns the head of its usage.
	flags(fs *flag.FlagSet) string
	// check takes the positional arguments once the flags are parsed, and checks them with the flags' values: a
	// mistake is a cli.UsageError.
	check(positional []string) error
	// run does the work, printing on stdout.
	run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error
}

// subcommand is a subcommand's name and its constructor.
type subcommand struct {
	name string
	new  func() clientCommand
}

// scheduleCommands are the subcommands of ticker schedule, in the order the usage lists them.
var scheduleCommands = []subcommand{
	{"put", func() clientCommand { return &putCommand{target: target{sub: "put"}} }},
	{"get", func() clientCommand { return &getCommand{target: target{sub: "get"}} }},
	{"list", func() clientCommand { return &listCommand{} }},
	{"delete", func() clientCommand { return &deleteCommand{target: target{sub: "delete"}} }},
	{"pause", func() clientCommand { return &pauseCommand{target: target{sub: "pause"}} }},
	{"resume", func() clientCommand { return &resumeCommand{target: target{sub: "resume"}} }},
	{"trigger", func() clientCommand { return &triggerCommand{target: target{sub: "trigger"}} }},
	{"backfill", func() clientCommand { return &backfillCommand{} }},
	{"apply", func() clientCommand { return &applyCommand{} }},
	{"log", func() clientCommand { return &logCommand{} }},
}

func runSchedule(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "schedule", scheduleUsage, scheduleCommands, args, getenv, stdout, stderr)
}

// runGroup runs ticker GROUP SUBCOMMAND: the subcommand of cmds that args name, with its flags, on a Schedules
// client. A change the client refuses before writing anything (tickgroup.ErrInvalidChange: an invalid
// definition, a limit a schedule cannot name) is bad input, exit status 2, as an invalid flag is.
func runGroup(ctx context.Context, group, usage string, cmds []subcommand, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return cli.Usagef("%s: a subcommand is required (%s)", group, strings.Join(names, ", "))
	}
	sub, args := args[0], args[1:]
	if isHelp(sub) {
		fmt.Fprintln(stdout, usage)
		return nil
	}
	i := slices.Index(names, sub)
	if i < 0 {
		fmt.Fprintln(stderr, usage)
		return cli.Usagef("%s: unknown subcommand %q (%s)", group, sub, strings.Join(names, ", "))
	}
	cmd := cmds[i].new()
	fs := flag.NewFlagSet("ticker "+group+" "+sub, flag.ContinueOnError)
	fs.SetOutput(stdout) // help; errors are returned and printed on stderr by main
	var common cli.Common
	common.Register(fs, "")
	fs.Usage = cli.UsageCommonEnv(fs, cmd.flags(fs))
	// Only the connection, logging and admin flags come from TICKGROUP_* variables here: a schedule's own flags
	// share names with other commands' (--pool, --timeout, --max-attempts, --concurrency of worker run), whose
	// variables on the host must not shape a schedule or a limit.
	positional, err := cli.ParseInterspersed(fs, args, cli.CommonEnv(getenv))
	if err != nil {
		return err
	}
	if err := cmd.check(positional); err != nil {
		return err
	}
	if err := common.Finish(); err != nil {
		return err
	}
	client, err := tickgroup.NewSchedules(common.PublicKafka())
	if err != nil {
		return cli.UsageError{Err: err}
	}
	defer client.Close()
	err = cmd.run(ctx, client, stdout)
	if errors.Is(err, tickgroup.ErrInvalidChange) {
		return cli.UsageError{Err: err}
	}
	return err
}

// target is the schedule a subcommand acts on, by its NAME argument, and --reason, why.
type target struct {
	sub    string // the subcommand, for its errors
	name   string
	reason string
}

// reasonFlag registers --reason, described by usage.
func (t *target) reasonFlag(fs *flag.FlagSet, usage string) {
	fs.StringVar(&t.reason, "reason", "", usage)
}

// check takes exactly one NAME.
func (t *target) check(positional []string) error {
	if len(positional) != 1 {
		return cli.Usagef("schedule %s: exactly one schedule NAME is required", t.sub)
	}
	t.name = positional[0]
	return nil
}

// changeOpts are the options of the change the subcommand makes.
func (t *target) changeOpts() []tickgroup.ChangeOption {
	return []tickgroup.ChangeOption{tickgroup.Reason(t.reason)}
}

// noArguments refuses positional arguments to the subcommand sub.
func noArguments(sub string, positional []string) error {
	if len(positional) > 0 {
		return cli.Usagef("schedule %s: unexpected argument %q", sub, positional[0])
	}
	return nil
}

type deleteCommand struct{ target }

func (c *deleteCommand) flags(fs *flag.FlagSet) string {
	c.reasonFlag(fs, "why (kept in the change log)")
	return "Usage: ticker schedule delete NAME [--reason TEXT]"
}

func (c *deleteCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	if err := client.Delete(ctx, c.name, c.changeOpts()...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schedule %s deleted\n", c.name)
	return nil
}

type resumeCommand struct{ target }

func (c *resumeCommand) flags(fs *flag.FlagSet) string {
	c.reasonFlag(fs, "why (kept in the change log)")
	return "Usage: ticker schedule resume NAME [--reason TEXT]"
}

func (c *resumeCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	if err := client.Resume(ctx, c.name, c.changeOpts()...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schedule %s resumed\n", c.name)
	return nil
}

type triggerCommand struct{ target }

func (c *triggerCommand) flags(fs *flag.FlagSet) string {
	c.reasonFlag(fs, "why (kept in the change log)")
	return "Usage: ticker schedule trigger NAME [--reason TEXT]"
}

func (c *triggerCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	ids, err := client.Trigger(ctx, c.name, c.changeOpts()...)
	if err != nil {
		return err
	}
	for _, id := range ids {
		fmt.Fprintf(stdout, "triggered %s\n", id)
	}
	return nil
}

type pauseCommand struct {
	target
	until   string
	untilAt time.Time // zero: until resumed
}

func (c *pauseCommand) flags(fs *flag.FlagSet) string {
	c.reasonFlag(fs, "why: shown with the schedule while it is paused, and kept in the change log")
	fs.StringVar(&c.until, "until", "", "end the pause then (RFC 3339, or a duration from now such as 2h), as a resume would: the first slot at or after it runs")
	return "Usage: ticker schedule pause NAME [--reason TEXT] [--until T]\n\nStop emitting the schedule's slots: ticks emitted ahead of the pause are cancelled, and slots passed while\npaused are never caught up."
}

func (c *pauseCommand) check(positional []string) error {
	if err := c.target.check(positional); err != nil || c.until == "" {
		return err
	}
	// Whole seconds: the end shows as RFC 3339.
	at, err := when.Parse(c.until, time.Now().Truncate(time.Second), when.Future)
	if err != nil {
		return cli.Usagef("schedule pause: --until %s: %v", c.until, err)
	}
	if !at.After(time.Now()) {
		return cli.Usagef("schedule pause: --until %s: the pause would end at once; want an instant after now", c.until)
	}
	c.untilAt = at
	return nil
}

func (c *pauseCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	if err := client.Pause(ctx, c.name, c.untilAt, c.changeOpts()...); err != nil {
		return err
	}
	if c.untilAt.IsZero() {
		fmt.Fprintf(stdout, "schedule %s paused\n", c.name)
	} else {
		fmt.Fprintf(stdout, "schedule %s paused until %s\n", c.name, c.untilAt.UTC().Format(time.RFC3339))
	}
	return nil
}

type getCommand struct {
	target
	next int
}

func (c *getCommand) flags(fs *flag.FlagSet) string {
	fs.IntVar(&c.next, "next", 5, "list this many of its next slots (\"next\": UTC and the schedule's zone; none while paused)")
	return "Usage: ticker schedule get NAME [--next N]\n\nPrint a schedule as JSON, with its next slots."
}

func (c *getCommand) check(positional []string) error {
	if err := c.target.check(positional); err != nil {
		return err
	}
	if c.next < 0 {
		return cli.Usagef("schedule get: --next %d: want 0 or more", c.next)
	}
	return nil
}

func (c *getCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	e, err := client.Get(ctx, c.name)
	if err != nil {
		return err
	}
	m := entryJSON(e)
	slots := []map[string]string{}
	if !e.Schedule.Paused || e.Schedule.PausedUntil != nil { // a pause with an end runs from it
		var cals []tickgroup.Calendar
		if len(e.Schedule.Exclude) > 0 {
			if cals, err = client.Calendars(ctx); err != nil {
				return err
			}
		}
		// On the days its calendars leave, as the leader emits them; a calendar the namespace lacks: none.
		upcoming, err := e.Schedule.NextExcluding(time.Now(), c.next, cals)
		if err != nil {
			m["next_error"] = err.Error()
		}
		for _, t := range upcoming {
			slots = append(slots, map[string]string{"slot": t.Format(time.RFC3339), "local": t.In(e.Schedule.Zone()).Format(time.RFC3339)})
		}
	}
	m["next"] = slots
	return printJSON(stdout, m)
}

type listCommand struct{ asJSON bool }

func (c *listCommand) flags(fs *flag.FlagSet) string {
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return "Usage: ticker schedule list [--json]\n\nList the schedules."
}

func (c *listCommand) check(positional []string) error { return noArguments("list", positional) }

func (c *listCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	entries, err := client.List(ctx)
	if err != nil {
		return err
	}
	if c.asJSON {
		out := make([]any, 0, len(entries))
		for _, e := range entries {
			out = append(out, entryJSON(e))
		}
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSCHEDULE\tSHARDS\tCATCHUP\tPAUSED\tVERSION\tUPDATED\tPAUSE")
	for _, e := range entries {
		s := e.Schedule
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%d\t%s\t%s\n", s.Name, s.Describe(), max(s.Shards, 1), e.Catchup, s.Paused, e.Version, e.UpdatedAt.Format(time.RFC3339), pauseText(s))
	}
	return tw.Flush()
}

type logCommand struct {
	name   string // "": every schedule
	since  cli.Duration
	asJSON bool
}

func (c *logCommand) flags(fs *flag.FlagSet) string {
	fs.Var(&c.since, "since", "only the changes of the last D (0: every change the topic retains)")
	fs.BoolVar(&c.asJSON, "json", false, "print JSON")
	return "Usage: ticker schedule log [NAME] [--since D] [--json]\n\nList the changes of every schedule, or of NAME, oldest first: when, the operation, who (Kafka principal where\nknown, OS user and host, a Go caller's name), why, and the definition written. Each is checked against the\nschedules topic: one it contradicts is counted and not shown; one whose schedule record compaction removed\nsince is marked unconfirmed (*)."
}

func (c *logCommand) check(positional []string) error {
	if len(positional) == 1 {
		c.name = positional[0]
		return nil
	}
	return noArguments("log", positional)
}

func (c *logCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	var from time.Time
	if c.since > 0 {
		from = time.Now().Add(-time.Duration(c.since))
	}
	return printLog(ctx, client, c.name, from, c.asJSON, stdout)
}

type applyCommand struct {
	file          string
	prune, dryRun bool
	reason        string
	defs          tickgroup.ApplyFile
}

func (c *applyCommand) flags(fs *flag.FlagSet) string {
	fs.StringVar(&c.file, "f", "", "YAML file: a list of schedules, or a mapping with keys schedules, limits and calendars")
	fs.BoolVar(&c.prune, "prune", false, "delete schedules the file does not list (never a limit or a calendar: ticker limit delete and ticker calendar delete do)")
	fs.StringVar(&c.reason, "reason", "", "why (kept in the change log for every change written)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "print the changes, with the next 5 slots of each new or changed schedule, without writing them")
	return "Usage: ticker schedule apply -f FILE [--prune] [--dry-run]\n\nMake the schedules, and the calendars and limits the file defines, match the file: the calendars and limits\nare written first. Every entry is validated first, and every schedule's limit and calendars checked (they exist\nonce the file is written, the limit in the schedule's pool); if any is wrong nothing is written."
}

// check reads and validates the file: an invalid entry is bad usage, and nothing is written.
func (c *applyCommand) check(positional []string) error {
	if err := noArguments("apply", positional); err != nil {
		return err
	}
	if c.file == "" {
		return cli.Usagef("schedule apply: -f FILE is required")
	}
	f, err := os.Open(c.file)
	if err != nil {
		return cli.Usagef("schedule apply: %v", err)
	}
	defer f.Close()
	if c.defs, err = tickgroup.ParseApplyFile(f); err != nil {
		return cli.Usagef("schedule apply: %s: %v", c.file, err)
	}
	return nil
}

func (c *applyCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	return apply(ctx, client, c.defs, c.prune, c.dryRun, stdout, []tickgroup.ChangeOption{tickgroup.Reason(c.reason)})
}

type putCommand struct {
	target
	spec                                     tickgroup.Schedule
	catchup, overlap, onExcluded, when       string
	exclude                                  listFlag
	every, offset, jitter, deadline, timeout cli.Duration
	startBy, finishBy, requiresWithin        cli.Duration
	start, end                               cli.Time
	dryRun                                   bool
}

func (c *putCommand) flags(fs *flag.FlagSet) string {
	fs.Var(&c.every, "every", "interval between slots (Go duration, at least 1s); slots are aligned to the Unix epoch + --offset")
	fs.Var(&c.offset, "offset", "with --every: shift of the slots from epoch alignment")
	fs.StringVar(&c.spec.Cron, "cron", "", "cron expression: 5 fields, or 6 with leading seconds; @hourly, @daily, ... macros")
	fs.StringVar(&c.spec.TZ, "tz", "", "IANA time zone of --cron (default UTC), e.g. Europe/Berlin")
	fs.StringVar(&c.spec.After, "after", "", "a chain: no slots of its own; run once for each slot of this schedule that ends as --when says (instead of --every or --cron)")
	fs.StringVar(&c.spec.Requires, "requires", "", "a gate: each slot runs only if this schedule's latest slot within --requires-within before it succeeded (else it is recorded skipped_gate, with the reason)")
	fs.Var(&c.requiresWithin, "requires-within", fmt.Sprintf("with --requires: how far before a slot the required schedule's slot may be (1s to %s)", schedule.MaxRequiresWithin))
	fs.StringVar(&c.when, "when", "", "with --after: the upstream slot's outcome to run on: success (the default), failure or any")
	fs.Var(&c.jitter, "jitter", "delay each slot's emission by a deterministic amount in [0, jitter)")
	fs.IntVar(&c.spec.Shards, "shards", 1, "ticks per slot, shard 0..N-1, spread over distinct work partitions")
	fs.StringVar(&c.spec.Payload, "payload", "", "opaque string carried by every tick (TICK_PAYLOAD, stdin of --exec)")
	fs.StringVar(&c.catchup, "catchup", string(tickgroup.DefaultCatchup), "slots that fell due while no leader ran (failover, outage): all (emit each, up to --catchup-max), latest (only the newest) or skip (none)")
	fs.IntVar(&c.spec.CatchupMax, "catchup-max", 0, fmt.Sprintf("with --catchup all: emit at most this many missed slots, the newest (0: %d)", schedule.DefaultCatchupMax))
	fs.Var(&c.deadline, "deadline", "workers skip a tick that would start later than slot + deadline (0: never)")
	fs.Var(&c.startBy, "start-by", fmt.Sprintf("a run not started by its due instant + start-by is a breach: recorded, counted and notified; it still runs (0: none; 1s to %s)", schedule.MaxWatchDeadline))
	fs.Var(&c.finishBy, "finish-by", fmt.Sprintf("a run not finished by its due instant + finish-by is a breach (0: none; 1s to %s, after --start-by)", schedule.MaxWatchDeadline))
	fs.StringVar(&c.overlap, "overlap", "", "a tick whose successor is already due when it could start: queue (run it anyway) or skip (skipped_overlap; the newest due tick runs); default: skip when the run before it outlasted the period, queue otherwise")
	fs.Var(&c.timeout, "timeout", fmt.Sprintf("bound on one attempt of a tick, at most %s (0: the worker's --timeout, default none)", schedule.MaxTimeout))
	fs.IntVar(&c.spec.MaxAttempts, "max-attempts", 0, "attempts per tick before the dead-letter topic (0: the worker's --max-attempts, default 3)")
	fs.StringVar(&c.spec.Pool, "pool", "", "the worker pool that runs the ticks (worker run --pool NAME; default: the default pool)")
	fs.StringVar(&c.spec.Limit, "limit", "", "count the runs against this limit, which must exist in the schedule's pool (ticker limit put)")
	fs.IntVar(&c.spec.Priority, "priority", 0, fmt.Sprintf("order of the ticks held by their limit, %d to %d, the higher first (0: %d)", schedule.MinPriority, schedule.MaxPriority, schedule.DefaultPriority))
	fs.Var(&c.exclude, "exclude", fmt.Sprintf("do not run on the days of these calendars (ticker calendar put), comma-separated, at most %d", schedule.MaxExclude))
	fs.StringVar(&c.onExcluded, "on-excluded", "", "with --exclude: an excluded slot is skipped (skip, the default), or runs at the same time on the next_business_day or previous_business_day (cron schedules only)")
	fs.Var(&c.start, "start", "no slot before this instant (RFC 3339)")
	fs.Var(&c.end, "end", "no slot after this instant (RFC 3339)")
	fs.BoolVar(&c.spec.Paused, "paused", false, "create the schedule paused")
	fs.BoolVar(&c.spec.Metrics, "metrics", false, "export per-schedule metric series for this schedule")
	c.reasonFlag(fs, "why (kept in the change log; with --paused, shown with the schedule)")
	fs.BoolVar(&c.dryRun, "dry-run", false, "print whether the schedule would be created or replaced, and its next 5 slots, without writing it")
	return "Usage: ticker schedule put NAME (--every D [--offset D] | --cron EXPR [--tz ZONE] | --after NAME [--when OUTCOME]) [flags]\n\nCreate or replace a schedule. It is validated first; an invalid one is refused (exit status 2) and nothing is written."
}

// check builds the schedule from the flags and validates it: an invalid one is bad usage, and nothing is written.
func (c *putCommand) check(positional []string) error {
	if err := c.target.check(positional); err != nil {
		return err
	}
	s := &c.spec
	s.Name = c.name
	s.Catchup, s.Overlap = tickgroup.Catchup(c.catchup), tickgroup.Overlap(c.overlap)
	s.Exclude, s.OnExcluded = c.exclude, tickgroup.OnExcluded(c.onExcluded)
	s.When = tickgroup.When(c.when)
	if s.After != "" && c.catchup == string(tickgroup.DefaultCatchup) {
		s.Catchup = "" // the flag's default: a chain has no slots to catch up
	}
	s.Every, s.Offset, s.Jitter = tickgroup.Duration(c.every), tickgroup.Duration(c.offset), tickgroup.Duration(c.jitter)
	s.Deadline, s.Timeout = tickgroup.Duration(c.deadline), tickgroup.Duration(c.timeout)
	s.StartBy, s.FinishBy = tickgroup.Duration(c.startBy), tickgroup.Duration(c.finishBy)
	s.RequiresWithin = tickgroup.Duration(c.requiresWithin)
	s.Start, s.End = c.start.T, c.end.T
	if s.Paused {
		s.PauseReason = c.reason
	}
	if err := s.Validate(); err != nil {
		return cli.UsageError{Err: err}
	}
	return nil
}

func (c *putCommand) run(ctx context.Context, client *tickgroup.Schedules, stdout io.Writer) error {
	if c.dryRun {
		return apply(ctx, client, tickgroup.ApplyFile{Schedules: []tickgroup.Schedule{c.spec}}, false, true, stdout, nil)
	}
	if err := client.Put(ctx, c.spec, c.changeOpts()...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "schedule %s written\n", c.name)
	return nil
}

// apply makes the calendars, limits and schedules of the namespace match defs, printing the changes: the
// calendars and limits first, as they are written.
func apply(ctx context.Context, client *tickgroup.Schedules, defs tickgroup.ApplyFile, prune, dryRun bool, stdout io.Writer, opts []tickgroup.ChangeOption) error {
	plan, err := client.PlanFile(ctx, defs, prune)
	if err != nil {
		return err
	}
	n := len(plan.Calendars) + len(plan.Limits) + len(plan.Schedules)
	if n == 0 {
		fmt.Fprintln(stdout, upToDate(defs))
		return nil
	}
	for _, c := range plan.Calendars {
		fmt.Fprintf(stdout, "%s calendar %s  %s\n", c.Op.Symbol(), c.Name, c.Calendar.Describe())
	}
	for _, c := range plan.Limits {
		fmt.Fprintf(stdout, "%s limit %s  %s\n", c.Op.Symbol(), c.Name, c.Limit.Describe())
	}
	var cals []tickgroup.Calendar
	if dryRun {
		if cals, err = plannedCalendars(ctx, client, plan); err != nil {
			return err
		}
	}
	for _, c := range plan.Schedules {
		fmt.Fprintf(stdout, "%s %s", c.Op.Symbol(), c.Name)
		if c.Op != tickgroup.ChangeDelete {
			fmt.Fprintf(stdout, "  %s", c.Schedule.Describe())
		}
		fmt.Fprintln(stdout)
		if dryRun && c.Op != tickgroup.ChangeDelete {
			printNext(stdout, c.Schedule, 5, cals)
		}
	}
	if dryRun {
		fmt.Fprintf(stdout, "dry run: %d change(s) not written\n", n)
		return nil
	}
	if err := client.WriteFile(ctx, plan, opts...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d change(s) written\n", n)
	return nil
}

// upToDate says that what defs defines is as the namespace has it: "schedules up to date", "limits and schedules
// up to date", "calendars, limits and schedules up to date".
func upToDate(defs tickgroup.ApplyFile) string {
	var kinds []string
	if len(defs.Calendars) > 0 {
		kinds = append(kinds, "calendars")
	}
	if len(defs.Limits) > 0 {
		kinds = append(kinds, "limits")
	}
	if len(kinds) == 0 {
		return "schedules up to date"
	}
	return strings.Join(kinds, ", ") + " and schedules up to date"
}

// pauseText is what list shows of a pause: its end and its reason ("-" when not paused).
func pauseText(s tickgroup.Schedule) string {
	if !s.Paused {
		return "-"
	}
	t := "until resumed"
	switch {
	case s.PausedUntil != nil && !s.PausedUntil.After(time.Now()):
		t = "ended " + s.PausedUntil.UTC().Format(time.RFC3339) + " (running again)"
	case s.PausedUntil != nil:
		t = "until " + s.PausedUntil.UTC().Format(time.RFC3339)
	}
	if s.PauseReason != "" {
		t += ": " + strconv.Quote(s.PauseReason)
	}
	return t
}

// printLog prints the change log of name ("": every schedule, limit and calendar) since from.
func printLog(ctx context.Context, client *tickgroup.Schedules, name string, from time.Time, asJSON bool, stdout io.Writer) error {
	log, stats, err := client.ChangeLog(ctx, name, from)
	if err != nil {
		return err
	}
	if asJSON {
		return printLogJSON(stdout, log, stats)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOGGED (UTC)\tSCHEDULE\tOP\tBY\tREASON\tDEFINITION WRITTEN")
	unconfirmed := 0
	for _, r := range log {
		mark := ""
		if !r.Confirmed {
			mark, unconfirmed = "*", unconfirmed+1
		}
		why := "-"
		if r.Reason != "" {
			why = strconv.Quote(r.Reason)
		}
		what := r.Schedule
		switch {
		case r.Limit != "":
			what = "limit " + r.Limit
		case r.Calendar != "":
			what = "calendar " + r.Calendar
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\n", r.LoggedAt.Format(time.RFC3339), mark, what, r.Op, r.By, why, logWritten(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if unconfirmed > 0 {
		fmt.Fprintf(stdout, "* %d change(s) unconfirmed: compaction has removed their record since, or it is a trigger's (its tick is not checked)\n", unconfirmed)
	}
	if stats.Forged > 0 || stats.Invalid > 0 {
		fmt.Fprintf(stdout, "not shown: %d record(s) the schedules topic contradicts (forged), %d that are no valid change\n", stats.Forged, stats.Invalid)
	}
	return nil
}

// logWritten is what the log shows a change wrote: the definition, the backfill, the trigger, the limit, the
// calendar.
func logWritten(r tickgroup.ChangeRecord) string {
	switch {
	case r.Backfill != "":
		return "backfill " + r.Backfill
	case r.Trigger != "":
		return "trigger " + r.Trigger
	case r.LimitAfter != nil:
		return r.LimitAfter.Describe()
	case r.CalendarAfter != nil:
		return r.CalendarAfter.Describe()
	case r.After != nil:
		def := r.After.Describe()
		if r.After.Paused {
			def += ", paused " + pauseText(*r.After)
		}
		return def + bulkText(r)
	case !r.Deleted && r.Bulk > 0:
		return "(its definition is no longer kept: compaction removed it)" + bulkText(r)
	}
	return "(deleted)" + bulkText(r)
}

// bulkText says that a change was logged with others of a bulk apply, its definition before not recorded.
func bulkText(r tickgroup.ChangeRecord) string {
	if r.Bulk == 0 {
		return ""
	}
	return fmt.Sprintf(" [bulk apply of %d; before not recorded]", r.Bulk)
}

// printLogJSON prints the change log as JSON.
func printLogJSON(stdout io.Writer, log []tickgroup.ChangeRecord, stats tickgroup.ChangeLogStats) error {
	type record struct {
		Op             string              `json:"op"`
		Schedule       string              `json:"schedule,omitempty"`
		Limit          string              `json:"limit,omitempty"`
		Calendar       string              `json:"calendar,omitempty"`
		At             time.Time           `json:"at"`
		LoggedAt       time.Time           `json:"logged_at"`
		By             map[string]string   `json:"by"`
		Reason         string              `json:"reason,omitempty"`
		Before         *tickgroup.Schedule `json:"before"`
		After          *tickgroup.Schedule `json:"after"`
		LimitBefore    map[string]any      `json:"limit_before,omitempty"`
		LimitAfter     map[string]any      `json:"limit_after,omitempty"`
		CalendarBefore map[string]any      `json:"calendar_before,omitempty"`
		CalendarAfter  map[string]any      `json:"calendar_after,omitempty"`
		Version        int64               `json:"version"`
		Confirmed      bool                `json:"confirmed"`
		Backfill       string              `json:"backfill,omitempty"`
		Trigger        string              `json:"trigger,omitempty"`
		Bulk           int                 `json:"bulk,omitempty"`
		Deleted        bool                `json:"deleted,omitempty"`
	}
	out := struct {
		Changes []record `json:"changes"`
		Invalid int      `json:"invalid_records"`
		Forged  int      `json:"forged_records"`
	}{Changes: []record{}, Invalid: stats.Invalid, Forged: stats.Forged}
	for _, r := range log {
		out.Changes = append(out.Changes, record{Op: string(r.Op), Schedule: r.Schedule, Limit: r.Limit, Calendar: r.Calendar, At: r.At, LoggedAt: r.LoggedAt,
			By:     map[string]string{"principal": r.By.Principal, "user": r.By.User, "host": r.By.Host, "name": r.By.Name},
			Reason: r.Reason, Before: r.Before, After: r.After, LimitBefore: limitJSON(r.LimitBefore), LimitAfter: limitJSON(r.LimitAfter),
			CalendarBefore: calendarJSON(r.CalendarBefore), CalendarAfter: calendarJSON(r.CalendarAfter),
			Version: r.Version, Confirmed: r.Confirmed, Backfill: r.Backfill, Trigger: r.Trigger, Bulk: r.Bulk, Deleted: r.Deleted})
	}
	return printJSON(stdout, out)
}

// plannedCalendars returns the calendars as they will be once plan is written (the namespace's, with the
// plan's puts), when a schedule of the plan excludes one; none otherwise (nothing is read).
func plannedCalendars(ctx context.Context, client *tickgroup.Schedules, plan tickgroup.FilePlan) ([]tickgroup.Calendar, error) {
	if !slices.ContainsFunc(plan.Schedules, func(c tickgroup.Change) bool { return len(c.Schedule.Exclude) > 0 }) {
		return nil, nil
	}
	cals, err := client.Calendars(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range plan.Calendars {
		cals = append(slices.DeleteFunc(cals, func(x tickgroup.Calendar) bool { return x.Name == c.Name }), c.Calendar)
	}
	return cals, nil
}

// printNext prints the next n slots of sched under the calendars cals (those it excludes), in UTC and in its
// zone, indented under its change.
func printNext(w io.Writer, sched tickgroup.Schedule, n int, cals []tickgroup.Calendar) {
	if sched.Paused && sched.PausedUntil == nil {
		fmt.Fprintln(w, "    paused: no slot until it is resumed")
		return
	}
	slots, err := sched.NextExcluding(time.Now(), n, cals)
	if err != nil {
		fmt.Fprintf(w, "    no slot: %v\n", err)
		return
	}
	if len(slots) == 0 {
		fmt.Fprintln(w, "    no slot after now")
		return
	}
	zone := sched.Zone()
	for _, t := range slots {
		if zone == time.UTC {
			fmt.Fprintf(w, "    next %s\n", t.Format(time.RFC3339))
		} else {
			fmt.Fprintf(w, "    next %s  (%s)\n", t.Format(time.RFC3339), t.In(zone).Format("2006-01-02 15:04:05 MST"))
		}
	}
}

// entryJSON is the schedule's record as stored (its fields and the record format's version, "v"), with the
// record's version (offset) and time.
func entryJSON(e tickgroup.Stored) map[string]any {
	b, _ := json.Marshal(e.Schedule)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	m["v"] = schedule.Version
	m["version"] = e.Version
	m["updated_at"] = e.UpdatedAt.Format(time.RFC3339Nano)
	return m
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
