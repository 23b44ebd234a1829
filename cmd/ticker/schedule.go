package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func runSchedule(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return cli.Usagef("schedule: a subcommand is required (put, get, list, delete, pause, resume, trigger, apply)")
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("ticker schedule "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common cli.Common
	common.Register(fs, "")
	var (
		spec       schedule.Spec
		every      durationFlag
		offset     durationFlag
		jitter     durationFlag
		deadline   durationFlag
		start, end timeFlag
		file       string
		prune      bool
		dryRun     bool
		asJSON     bool
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
		fs.StringVar(&spec.Catchup, "catchup", "latest", "slots missed while no leader ran: skip, latest (emit the newest one) or all")
		fs.IntVar(&spec.CatchupMax, "catchup-max", 0, "with --catchup all: emit at most this many missed slots (default 100)")
		fs.Var(&deadline, "deadline", "workers skip a tick that would start later than slot + deadline (0: never)")
		fs.Var(&start, "start", "no slot before this instant (RFC 3339)")
		fs.Var(&end, "end", "no slot after this instant (RFC 3339)")
		fs.BoolVar(&spec.Paused, "paused", false, "create the schedule paused")
		fs.BoolVar(&spec.Metrics, "metrics", false, "export per-schedule metric series for this schedule")
		head = "Usage: ticker schedule put NAME (--every D [--offset D] | --cron EXPR [--tz ZONE]) [flags]\n\nCreate or replace a schedule. It is validated first; an invalid one is refused (exit status 2) and nothing is written."
	case "get":
		head = "Usage: ticker schedule get NAME\n\nPrint a schedule as JSON."
	case "list":
		needName = false
		fs.BoolVar(&asJSON, "json", false, "print JSON")
		head = "Usage: ticker schedule list [--json]\n\nList the schedules."
	case "delete", "pause", "resume", "trigger":
		head = "Usage: ticker schedule " + sub + " NAME"
	case "apply":
		needName = false
		fs.StringVar(&file, "f", "", "YAML file: a list of schedules (or a mapping with key schedules)")
		fs.BoolVar(&prune, "prune", false, "delete schedules the file does not list")
		fs.BoolVar(&dryRun, "dry-run", false, "print the changes without writing them")
		head = "Usage: ticker schedule apply -f FILE [--prune] [--dry-run]\n\nMake the schedules match the file. Every entry is validated first; if any is invalid nothing is written."
	default:
		return cli.Usagef("schedule: unknown subcommand %q (put, get, list, delete, pause, resume, trigger, apply)", sub)
	}
	fs.Usage = cli.Usage(fs, head)
	positional, err := parseInterspersed(fs, args, getenv)
	if err != nil {
		return err
	}
	var name string
	switch {
	case needName && len(positional) != 1:
		return cli.Usagef("schedule %s: exactly one schedule NAME is required", sub)
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
		spec.Every = schedule.Duration(every)
		spec.Offset = schedule.Duration(offset)
		spec.Jitter = schedule.Duration(jitter)
		spec.Deadline = schedule.Duration(deadline)
		spec.Start, spec.End = start.t, end.t
		if err := spec.Validate(); err != nil {
			return cli.UsageError{Err: err}
		}
	}
	var specs []schedule.Spec
	if sub == "apply" {
		if file == "" {
			return cli.Usagef("schedule apply: -f FILE is required")
		}
		f, err := os.Open(file)
		if err != nil {
			return cli.Usagef("schedule apply: %v", err)
		}
		specs, err = schedule.ParseFile(f)
		f.Close()
		if err != nil {
			return cli.Usagef("schedule apply: %s: %v", file, err)
		}
	}

	names := common.Kafka.Names()
	cl, err := newClient(common, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if sub == "put" || sub == "apply" {
		// Only the schedules topic must exist: an operator's principal needs no permission on the others.
		if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), names, kafka.TopicOptions{Needs: []string{names.Schedules}}); err != nil {
			return err
		}
	}
	// Every command but put needs the current schedules; put writes without reading the whole topic, which can
	// hold a million records.
	var current map[string]store.Entry
	if sub != "put" {
		opts, _ := common.Kafka.Opts(nil)
		if current, _, err = store.Load(ctx, opts, names.Schedules); err != nil {
			return err
		}
	}
	lookup := func() (store.Entry, error) {
		e, ok := current[name]
		if !ok {
			return store.Entry{}, fmt.Errorf("schedule %q not found in namespace %q", name, common.Kafka.Namespace)
		}
		return e, nil
	}

	switch sub {
	case "put":
		if err := store.Put(ctx, cl, names.Schedules, spec); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "schedule %s written\n", name)
	case "get":
		e, err := lookup()
		if err != nil {
			return err
		}
		return printJSON(stdout, entryJSON(e))
	case "list":
		entries := store.Sorted(current)
		if asJSON {
			out := make([]any, 0, len(entries))
			for _, e := range entries {
				out = append(out, entryJSON(e))
			}
			return printJSON(stdout, out)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSCHEDULE\tSHARDS\tCATCHUP\tPAUSED\tVERSION\tUPDATED")
		for _, e := range entries {
			s := e.Spec()
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%d\t%s\n", s.Name, describe(s), max(s.Shards, 1), orDefault(s.Catchup, "latest"), s.Paused, e.Version, e.UpdatedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	case "delete":
		if _, err := lookup(); err != nil {
			return err
		}
		if err := store.Delete(ctx, cl, names.Schedules, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "schedule %s deleted\n", name)
	case "pause", "resume":
		e, err := lookup()
		if err != nil {
			return err
		}
		s := e.Spec()
		s.Paused = sub == "pause"
		if err := store.Put(ctx, cl, names.Schedules, s); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "schedule %s %sd\n", name, sub)
	case "trigger":
		e, err := lookup()
		if err != nil {
			return err
		}
		return trigger(ctx, cl, names, e, stdout)
	case "apply":
		return apply(ctx, cl, names.Schedules, current, specs, prune, dryRun, stdout)
	}
	return nil
}

// trigger writes one tick per shard of e, now, with IDs that no scheduled slot can have.
func trigger(ctx context.Context, cl *kgo.Client, names kafka.Names, e store.Entry, stdout io.Writer) error {
	partitions, err := kafka.WorkPartitions(ctx, kadm.NewClient(cl), names.Work)
	if err != nil {
		return err
	}
	s := e.Spec()
	shards := max(s.Shards, 1)
	nonce := make([]byte, 4)
	_, _ = rand.Read(nonce)
	now := time.Now().UTC()
	var recs []*kgo.Record
	for shard := range shards {
		t := tick.New(s.Name, now, shard, shards)
		t.ID = tick.TriggerID(s.Name, now, hex.EncodeToString(nonce), shard, shards)
		t.Trigger = true
		t.Payload = s.Payload
		t.ScheduleVersion = e.Version
		t.EmittedAt = now
		if s.Deadline > 0 {
			dl := now.Add(time.Duration(s.Deadline))
			t.Deadline = &dl
		}
		v, err := tick.Encode(t)
		if err != nil {
			return err
		}
		recs = append(recs, &kgo.Record{Topic: names.Work, Partition: tick.Partition(s.Name, shard, partitions), Key: []byte(t.ID), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("triggering %s: %w", s.Name, err)
	}
	for _, r := range recs {
		fmt.Fprintf(stdout, "triggered %s\n", r.Key)
	}
	return nil
}

// apply makes the schedules topic match specs.
func apply(ctx context.Context, cl *kgo.Client, topic string, current map[string]store.Entry, specs []schedule.Spec, prune, dryRun bool, stdout io.Writer) error {
	type change struct {
		op   string // + create, ~ replace, - delete
		spec schedule.Spec
		name string
	}
	var changes []change
	want := map[string]bool{}
	for _, s := range specs {
		want[s.Name] = true
		e, ok := current[s.Name]
		switch {
		case !ok:
			changes = append(changes, change{"+", s, s.Name})
		case !sameSpec(e.Spec(), s):
			changes = append(changes, change{"~", s, s.Name})
		}
	}
	if prune {
		for name := range current {
			if !want[name] {
				changes = append(changes, change{op: "-", name: name})
			}
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].name < changes[j].name })
	if len(changes) == 0 {
		fmt.Fprintln(stdout, "schedules up to date")
		return nil
	}
	for _, c := range changes {
		fmt.Fprintf(stdout, "%s %s", c.op, c.name)
		if c.op != "-" {
			fmt.Fprintf(stdout, "  %s", describe(c.spec))
		}
		fmt.Fprintln(stdout)
	}
	if dryRun {
		fmt.Fprintf(stdout, "dry run: %d change(s) not written\n", len(changes))
		return nil
	}
	for _, c := range changes {
		var err error
		if c.op == "-" {
			err = store.Delete(ctx, cl, topic, c.name)
		} else {
			err = store.Put(ctx, cl, topic, c.spec)
		}
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%d change(s) written\n", len(changes))
	return nil
}

func sameSpec(a, b schedule.Spec) bool {
	ea, err1 := schedule.Encode(a)
	eb, err2 := schedule.Encode(b)
	return err1 == nil && err2 == nil && bytes.Equal(ea, eb)
}

func describe(s schedule.Spec) string {
	if s.Cron != "" {
		return fmt.Sprintf("cron %q %s", s.Cron, orDefault(s.TZ, "UTC"))
	}
	d := "every " + time.Duration(s.Every).String()
	if s.Offset != 0 {
		d += " +" + time.Duration(s.Offset).String()
	}
	return d
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func entryJSON(e store.Entry) map[string]any {
	b, _ := schedule.Encode(e.Spec())
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["version"] = e.Version
	m["updated_at"] = e.UpdatedAt.Format(time.RFC3339Nano)
	return m
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// parseInterspersed parses flags that may come before or after positional arguments (ticker schedule put NAME
// --every 1s), then applies the TICKGROUP_* variables.
func parseInterspersed(fs *flag.FlagSet, args []string, getenv func(string) string) ([]string, error) {
	var positional, flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if strings.Contains(name, "=") {
				continue
			}
			if f := fs.Lookup(name); f != nil && !isBool(f) && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			positional = append(positional, a)
		}
	}
	if err := cli.Parse(fs, flags, getenv); err != nil {
		return nil, err
	}
	return append(positional, fs.Args()...), nil
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }
func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (examples: 30s, 5m, 1h30m)")
	}
	*d = durationFlag(v)
	return nil
}

type timeFlag struct{ t *time.Time }

func (f *timeFlag) String() string {
	if f.t == nil {
		return ""
	}
	return f.t.Format(time.RFC3339)
}
func (f *timeFlag) Set(s string) error {
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return fmt.Errorf("not an RFC 3339 instant (example: 2026-12-01T00:00:00Z)")
	}
	f.t = &v
	return nil
}
