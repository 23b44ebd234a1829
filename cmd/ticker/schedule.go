package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
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
  apply -f FILE   make the schedules match a YAML file (--prune, --dry-run)
  log [NAME]      who changed which schedule, when, why, from what to what (the change log, <ns>.changes)

put, pause, resume, delete, apply, trigger and backfill take --reason TEXT, kept in the change log (and shown with a pause);
pause takes --until T (RFC 3339, or a duration from now such as 2h): the pause ends then, as a resume would.

Run 'ticker schedule SUBCOMMAND --help' for its flags.`

func runSchedule(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, scheduleUsage)
		return cli.Usagef("schedule: a subcommand is required (put, get, list, delete, pause, resume, trigger, backfill, apply, log)")
	}
	sub, args := args[0], args[1:]
	if isHelp(sub) {
		fmt.Fprintln(stdout, scheduleUsage)
		return nil
	}
	fs := flag.NewFlagSet("ticker schedule "+sub, flag.ContinueOnError)
	fs.SetOutput(stdout) // help; errors are returned and printed on stderr by main
	var common cli.Common
	common.Register(fs, "")
	var (
		spec       tickgroup.Schedule
		catchup    string
		overlap    string
		every      cli.Duration
		offset     cli.Duration
		jitter     cli.Duration
		deadline   cli.Duration
		timeout    cli.Duration
		start, end cli.Time
		file       string
		next       int
		reason     string
		until      string
		since      cli.Duration
		prune      bool
		dryRun     bool
		asJSON     bool
		bf         backfillFlags
	)
	needName := true
	head := ""
	switch sub {
	case "put":
		fs.Var(&every, "every", "interval between slots (Go duration, at least 1s); slots are aligned to the Unix epoch + --offset")
		fs.Var(&offset, "offset", "with --every: shift of the slots from epoch alignment")
		fs.StringVar(&spec.Cron, "cron", "", "cron expression: 5 fields, or 6 with leading seconds; @hourly, @daily, ... macros")
		fs.StringVar(&spec.TZ, "tz", "", "IANA time zone of --cron (default UTC), e.g. Europe/Berlin")
		fs.Var(&jitter, "jitter", "delay each slot's emission by a deterministic amount in [0, jitter)")
		fs.IntVar(&spec.Shards, "shards", 1, "ticks per slot, shard 0..N-1, spread over distinct work partitions")
		fs.StringVar(&spec.Payload, "payload", "", "opaque string carried by every tick (TICK_PAYLOAD, stdin of --exec)")
		fs.StringVar(&catchup, "catchup", string(tickgroup.DefaultCatchup), "slots that fell due while no leader ran (failover, outage): all (emit each, up to --catchup-max), latest (only the newest) or skip (none)")
		fs.IntVar(&spec.CatchupMax, "catchup-max", 0, fmt.Sprintf("with --catchup all: emit at most this many missed slots, the newest (0: %d)", schedule.DefaultCatchupMax))
		fs.Var(&deadline, "deadline", "workers skip a tick that would start later than slot + deadline (0: never)")
		fs.StringVar(&overlap, "overlap", "", "a tick whose successor is already due when it could start: queue (run it anyway) or skip (skipped_overlap; the newest due tick runs); default: skip when the run before it outlasted the period, queue otherwise")
		fs.Var(&timeout, "timeout", fmt.Sprintf("bound on one attempt of a tick, at most %s (0: the worker's --timeout, default none)", schedule.MaxTimeout))
		fs.IntVar(&spec.MaxAttempts, "max-attempts", 0, "attempts per tick before the dead-letter topic (0: the worker's --max-attempts, default 3)")
		fs.StringVar(&spec.Pool, "pool", "", "the worker pool that runs the ticks (worker run --pool NAME; default: the default pool)")
		fs.Var(&start, "start", "no slot before this instant (RFC 3339)")
		fs.Var(&end, "end", "no slot after this instant (RFC 3339)")
		fs.BoolVar(&spec.Paused, "paused", false, "create the schedule paused")
		fs.BoolVar(&spec.Metrics, "metrics", false, "export per-schedule metric series for this schedule")
		fs.StringVar(&reason, "reason", "", "why (kept in the change log; with --paused, shown with the schedule)")
		fs.BoolVar(&dryRun, "dry-run", false, "print whether the schedule would be created or replaced, and its next 5 slots, without writing it")
		head = "Usage: ticker schedule put NAME (--every D [--offset D] | --cron EXPR [--tz ZONE]) [flags]\n\nCreate or replace a schedule. It is validated first; an invalid one is refused (exit status 2) and nothing is written."
	case "get":
		fs.IntVar(&next, "next", 5, "list this many of its next slots (\"next\": UTC and the schedule's zone; none while paused)")
		head = "Usage: ticker schedule get NAME [--next N]\n\nPrint a schedule as JSON, with its next slots."
	case "list":
		needName = false
		fs.BoolVar(&asJSON, "json", false, "print JSON")
		head = "Usage: ticker schedule list [--json]\n\nList the schedules."
	case "delete", "resume":
		fs.StringVar(&reason, "reason", "", "why (kept in the change log)")
		head = "Usage: ticker schedule " + sub + " NAME [--reason TEXT]"
	case "pause":
		fs.StringVar(&reason, "reason", "", "why: shown with the schedule while it is paused, and kept in the change log")
		fs.StringVar(&until, "until", "", "end the pause then (RFC 3339, or a duration from now such as 2h), as a resume would: the first slot at or after it runs")
		head = "Usage: ticker schedule pause NAME [--reason TEXT] [--until T]\n\nStop emitting the schedule's slots: ticks emitted ahead of the pause are cancelled, and slots passed while\npaused are never caught up."
	case "trigger":
		fs.StringVar(&reason, "reason", "", "why (kept in the change log)")
		head = "Usage: ticker schedule trigger NAME [--reason TEXT]"
	case "backfill":
		needName = false
		bf.register(fs, &reason, &dryRun, &asJSON)
		head = backfillUsage
	case "log":
		needName = false
		fs.Var(&since, "since", "only the changes of the last D (0: every change the topic retains)")
		fs.BoolVar(&asJSON, "json", false, "print JSON")
		head = "Usage: ticker schedule log [NAME] [--since D] [--json]\n\nList the changes of every schedule, or of NAME, oldest first: when, the operation, who (Kafka principal where\nknown, OS user and host, a Go caller's name), why, and the definition written. Each is checked against the\nschedules topic: one it contradicts is counted and not shown; one whose schedule record compaction removed\nsince is marked unconfirmed (*)."
	case "apply":
		needName = false
		fs.StringVar(&file, "f", "", "YAML file: a list of schedules (or a mapping with key schedules)")
		fs.BoolVar(&prune, "prune", false, "delete schedules the file does not list")
		fs.StringVar(&reason, "reason", "", "why (kept in the change log for every change written)")
		fs.BoolVar(&dryRun, "dry-run", false, "print the changes, with the next 5 slots of each new or changed schedule, without writing them")
		head = "Usage: ticker schedule apply -f FILE [--prune] [--dry-run]\n\nMake the schedules match the file. Every entry is validated first; if any is invalid nothing is written."
	default:
		fmt.Fprintln(stderr, scheduleUsage)
		return cli.Usagef("schedule: unknown subcommand %q (put, get, list, delete, pause, resume, trigger, backfill, apply, log)", sub)
	}
	fs.Usage = cli.UsageCommonEnv(fs, head)
	// Only the connection, logging and admin flags come from TICKGROUP_* variables here: a schedule's own flags
	// share names with other commands' (--pool, --timeout, --max-attempts of worker run), whose variables on the
	// host must not shape a schedule.
	positional, err := cli.ParseInterspersed(fs, args, cli.CommonEnv(getenv))
	if err != nil {
		return err
	}
	var name string
	switch {
	case needName && len(positional) != 1:
		return cli.Usagef("schedule %s: exactly one schedule NAME is required", sub)
	case sub == "backfill":
		if name, err = bf.check(positional); err != nil {
			return err
		}
	case sub == "log" && len(positional) <= 1:
		if len(positional) == 1 {
			name = positional[0]
		}
	case !needName && len(positional) != 0:
		return cli.Usagef("schedule %s: unexpected argument %q", sub, positional[0])
	case needName:
		name = positional[0]
	}
	if err := common.Finish(); err != nil {
		return err
	}

	if sub == "put" {
		spec.Name = name
		spec.Catchup, spec.Overlap = tickgroup.Catchup(catchup), tickgroup.Overlap(overlap)
		spec.Every = tickgroup.Duration(every)
		spec.Offset = tickgroup.Duration(offset)
		spec.Jitter = tickgroup.Duration(jitter)
		spec.Deadline = tickgroup.Duration(deadline)
		spec.Timeout = tickgroup.Duration(timeout)
		spec.Start, spec.End = start.T, end.T
		if spec.Paused {
			spec.PauseReason = reason
		}
		if err := spec.Validate(); err != nil {
			return cli.UsageError{Err: err}
		}
	}
	var specs []tickgroup.Schedule
	if sub == "apply" {
		if file == "" {
			return cli.Usagef("schedule apply: -f FILE is required")
		}
		f, err := os.Open(file)
		if err != nil {
			return cli.Usagef("schedule apply: %v", err)
		}
		specs, err = tickgroup.ParseSchedules(f)
		f.Close()
		if err != nil {
			return cli.Usagef("schedule apply: %s: %v", file, err)
		}
	}

	var untilAt time.Time
	if until != "" {
		// Whole seconds: the end shows as RFC 3339.
		if untilAt, err = when.Parse(until, time.Now().Truncate(time.Second), when.Future); err != nil {
			return cli.Usagef("schedule pause: --until %s: %v", until, err)
		}
		if !untilAt.After(time.Now()) {
			return cli.Usagef("schedule pause: --until %s: the pause would end at once; want an instant after now", until)
		}
	}
	client, err := tickgroup.NewSchedules(common.PublicKafka())
	if err != nil {
		return cli.UsageError{Err: err}
	}
	defer client.Close()
	changeOpts := []tickgroup.ChangeOption{tickgroup.Reason(reason)}

	switch sub {
	case "put":
		if dryRun {
			return apply(ctx, client, []tickgroup.Schedule{spec}, false, true, stdout, nil)
		}
		if err := client.Put(ctx, spec, changeOpts...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "schedule %s written\n", name)
	case "get":
		if next < 0 {
			return cli.Usagef("schedule get: --next %d: want 0 or more", next)
		}
		e, err := client.Get(ctx, name)
		if err != nil {
			return err
		}
		m := entryJSON(e)
		slots := []map[string]string{}
		if !e.Schedule.Paused || e.Schedule.PausedUntil != nil { // a pause with an end runs from it
			upcoming, err := e.Schedule.Next(time.Now(), next)
			if err != nil {
				return err
			}
			for _, t := range upcoming {
				slots = append(slots, map[string]string{"slot": t.Format(time.RFC3339), "local": t.In(e.Schedule.Zone()).Format(time.RFC3339)})
			}
		}
		m["next"] = slots
		return printJSON(stdout, m)
	case "list":
		entries, err := client.List(ctx)
		if err != nil {
			return err
		}
		if asJSON {
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
	case "delete":
		if err := client.Delete(ctx, name, changeOpts...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "schedule %s deleted\n", name)
	case "pause":
		if !untilAt.IsZero() {
			changeOpts = append(changeOpts, tickgroup.Until(untilAt))
		}
		if err := client.Pause(ctx, name, changeOpts...); err != nil {
			return err
		}
		if untilAt.IsZero() {
			fmt.Fprintf(stdout, "schedule %s paused\n", name)
		} else {
			fmt.Fprintf(stdout, "schedule %s paused until %s\n", name, untilAt.UTC().Format(time.RFC3339))
		}
	case "resume":
		if err := client.Resume(ctx, name, changeOpts...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "schedule %s resumed\n", name)
	case "log":
		var from time.Time
		if since > 0 {
			from = time.Now().Add(-time.Duration(since))
		}
		return printLog(ctx, client, name, from, asJSON, stdout)
	case "trigger":
		ids, err := client.Trigger(ctx, name, changeOpts...)
		if err != nil {
			return err
		}
		for _, id := range ids {
			fmt.Fprintf(stdout, "triggered %s\n", id)
		}
	case "backfill":
		return bf.run(ctx, client, name, dryRun, asJSON, stdout, changeOpts)
	case "apply":
		return apply(ctx, client, specs, prune, dryRun, stdout, changeOpts)
	}
	return nil
}

// apply makes the schedules topic match specs, printing the changes.
func apply(ctx context.Context, client *tickgroup.Schedules, specs []tickgroup.Schedule, prune, dryRun bool, stdout io.Writer, opts []tickgroup.ChangeOption) error {
	changes, err := client.Plan(ctx, specs, prune)
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "schedules up to date")
		return nil
	}
	for _, c := range changes {
		fmt.Fprintf(stdout, "%s %s", c.Op, c.Name)
		if c.Op != tickgroup.ChangeDelete {
			fmt.Fprintf(stdout, "  %s", c.Schedule.Describe())
		}
		fmt.Fprintln(stdout)
		if dryRun && c.Op != tickgroup.ChangeDelete {
			printNext(stdout, c.Schedule, 5)
		}
	}
	if dryRun {
		fmt.Fprintf(stdout, "dry run: %d change(s) not written\n", len(changes))
		return nil
	}
	if err := client.Write(ctx, changes, opts...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d change(s) written\n", len(changes))
	return nil
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

// printLog prints the change log of name ("": every schedule) since from.
func printLog(ctx context.Context, client *tickgroup.Schedules, name string, from time.Time, asJSON bool, stdout io.Writer) error {
	log, stats, err := client.ChangeLog(ctx, name, from)
	if err != nil {
		return err
	}
	if asJSON {
		type record struct {
			Op        string              `json:"op"`
			Schedule  string              `json:"schedule"`
			At        time.Time           `json:"at"`
			LoggedAt  time.Time           `json:"logged_at"`
			By        map[string]string   `json:"by"`
			Reason    string              `json:"reason,omitempty"`
			Before    *tickgroup.Schedule `json:"before"`
			After     *tickgroup.Schedule `json:"after"`
			Version   int64               `json:"version"`
			Confirmed bool                `json:"confirmed"`
			Backfill  string              `json:"backfill,omitempty"`
			Trigger   string              `json:"trigger,omitempty"`
		}
		out := struct {
			Changes []record `json:"changes"`
			Invalid int      `json:"invalid_records"`
			Forged  int      `json:"forged_records"`
		}{Changes: []record{}, Invalid: stats.Invalid, Forged: stats.Forged}
		for _, r := range log {
			out.Changes = append(out.Changes, record{Op: r.Op, Schedule: r.Schedule, At: r.At, LoggedAt: r.LoggedAt,
				By:     map[string]string{"principal": r.By.Principal, "user": r.By.User, "host": r.By.Host, "name": r.By.Name},
				Reason: r.Reason, Before: r.Before, After: r.After, Version: r.Version, Confirmed: r.Confirmed, Backfill: r.Backfill, Trigger: r.Trigger})
		}
		return printJSON(stdout, out)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LOGGED (UTC)\tSCHEDULE\tOP\tBY\tREASON\tDEFINITION WRITTEN")
	unconfirmed := 0
	for _, r := range log {
		def := "(deleted)"
		if r.Backfill != "" {
			def = "backfill " + r.Backfill
		} else if r.Trigger != "" {
			def = "trigger " + r.Trigger
		} else if r.After != nil {
			def = r.After.Describe()
			if r.After.Paused {
				def += ", paused " + pauseText(*r.After)
			}
		}
		mark := ""
		if !r.Confirmed {
			mark, unconfirmed = "*", unconfirmed+1
		}
		why := "-"
		if r.Reason != "" {
			why = strconv.Quote(r.Reason)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\n", r.LoggedAt.Format(time.RFC3339), mark, r.Schedule, r.Op, r.By, why, def)
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

// printNext prints the next n slots of sched, in UTC and in its zone, indented under its change.
func printNext(w io.Writer, sched tickgroup.Schedule, n int) {
	if sched.Paused && sched.PausedUntil == nil {
		fmt.Fprintln(w, "    paused: no slot until it is resumed")
		return
	}
	slots, err := sched.Next(time.Now(), n)
	if err != nil || len(slots) == 0 {
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
