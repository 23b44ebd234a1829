package status

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Limit is one named limit of the namespace (ticker limit list), the schedules that name it and, from the runs
// Collect reads anyway, how many of its ticks run and wait.
//
// Running and Waiting are what the work topic and the ledger show, not the count the limit's owner keeps: a run
// counts from its started entry until its outcome, or until a release that ends it (a retry's pause holds the
// limit and counts); a run cut off counts until its partition's new owner writes its next entry. A tick waits
// when it was emitted and is due but has no start: whether it waits for its limit, for a free runner or for a
// worker at all, the ledger does not say. Ticks written before Report.RunsSince are not seen. The owner's own
// figures are the metrics tickgroup_worker_limit_running, _waiting and _oldest_wait_seconds.
type Limit struct {
	Name string `json:"name"`
	// Pool is the pool whose workers keep the limit.
	Pool string `json:"pool"`
	// Concurrency is the most runs at once, across the pool (0: no such bound).
	Concurrency int `json:"concurrency"`
	// Rate is "R/WINDOW" ("" when the limit has no rate); RateStarts and RateWindowSeconds are its two parts.
	Rate              string  `json:"rate,omitempty"`
	RateStarts        int     `json:"rate_starts,omitempty"`
	RateWindowSeconds float64 `json:"rate_window_seconds,omitempty"`
	// Defined is false for a name that schedules give but the limits topic does not hold (deleted, or named by
	// two writers at once): the workers run those ticks without a limit (tickgroup_worker_limit_unknown_total).
	Defined bool `json:"defined"`
	// Schedules is how many schedules name the limit (nil: not counted, when the report did not read every
	// schedule: Options.FleetOnly, or a report on one schedule); OtherPools how many of them are of another pool
	// than the limit's (their pool's workers do not know it and run their ticks without it).
	Schedules  *int `json:"schedules,omitempty"`
	OtherPools int  `json:"schedules_of_other_pools,omitempty"`
	// Running and Waiting are the limit's ticks started and not ended, and emitted, due and not started (nil: the
	// runs could not be read); OldestWaitSeconds is how long the oldest waiting one has waited since its instant.
	Running           *int     `json:"running"`
	Waiting           *int     `json:"waiting"`
	OldestWaitSeconds *float64 `json:"oldest_wait_seconds,omitempty"`
}

// uses is what the schedules topic says of the limits: by schedule, the limit it names and its definition (only
// the schedules naming one), and by limit, the schedules naming it and the pools they are of.
type uses struct {
	all     bool // of every schedule of the namespace
	limitOf map[string]string
	sched   map[string]*schedule.Schedule
	by      map[string]*use
}

type use struct {
	schedules int
	pools     map[string]int // by pool, as limit.PoolOf spells it
}

// limitUses reads the uses of the limits from every schedule of entries. It is taken before a report on one
// schedule keeps that schedule alone: a limit's count is of the whole namespace.
func limitUses(entries map[string]store.Entry) uses {
	u := uses{limitOf: map[string]string{}, sched: map[string]*schedule.Schedule{}, by: map[string]*use{}}
	for name, e := range entries {
		l := e.Schedule.Limit()
		if l == "" {
			continue
		}
		u.limitOf[name], u.sched[name] = l, e.Schedule
		x := u.by[l]
		if x == nil {
			x = &use{pools: map[string]int{}}
			u.by[l] = x
		}
		x.schedules++
		x.pools[limit.PoolOf(e.Schedule.Pool())]++
	}
	return u
}

// readLimits reads the limits topic (limit.Load: its whole single partition, one live record per limit) and
// adds each limit to rep, with the schedules that name it; with o.Schedule, only that schedule's limit. A
// failed read (a principal without Read on <ns>.limits, made before limits) leaves rep.Limits nil and is named
// in rep.Errors: the rest of the report does not depend on it, and the schedules still name their limits.
func readLimits(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, names kafka.Names, u uses, rep *Report, o Options) {
	defs, err := limit.Load(ctx, opts, adm, names.Limits)
	if err != nil {
		rep.Errors = append(rep.Errors, fmt.Sprintf("reading the limits (%s): %v", names.Limits, err))
		return
	}
	rep.Limits = []Limit{}
	want := func(name string) bool { return o.Schedule == "" || u.limitOf[o.Schedule] == name }
	for _, d := range limit.Sorted(defs) {
		if !want(d.Name) {
			continue
		}
		x := Limit{Name: d.Name, Pool: d.PoolName(), Concurrency: d.Concurrency, Rate: d.FormatRate(), Defined: true}
		if d.Rate > 0 {
			x.RateStarts, x.RateWindowSeconds = d.Rate, time.Duration(d.Window).Seconds()
		}
		rep.Limits = append(rep.Limits, x)
	}
	for name := range u.by {
		if _, ok := defs[name]; !ok && want(name) {
			rep.Limits = append(rep.Limits, Limit{Name: name})
		}
	}
	slices.SortFunc(rep.Limits, func(a, b Limit) int { return cmp.Compare(a.Name, b.Name) })
	for i := range rep.Limits {
		l := &rep.Limits[i]
		if !u.all {
			continue
		}
		n := 0
		l.Schedules = &n
		if x := u.by[l.Name]; x != nil {
			n = x.schedules
			if l.Defined {
				l.OtherPools = x.schedules - x.pools[l.Pool]
			}
		}
	}
}

// limitRuns fills each limit of rep with its ticks running and waiting at o.Now, from the log of the runs: one
// pass over its ticks, the cost of lastRuns. A started entry names its limit (ledger.Entry.Limit); a tick not
// started yet is its schedule's, by the schedule's definition now.
func limitRuns(l *audit.Log, u uses, rep *Report, o Options) {
	if len(rep.Limits) == 0 {
		return
	}
	type count struct {
		running, waiting int
		oldest           time.Time
	}
	counts := make(map[string]*count, len(rep.Limits))
	for _, x := range rep.Limits {
		counts[x.Name] = &count{}
	}
	for _, t := range l.Ticks {
		name, state, since := limitState(t, u, o.Now)
		c := counts[name]
		if c == nil {
			continue
		}
		switch state {
		case limitRunning:
			c.running++
		case limitWaiting:
			c.waiting++
			if c.oldest.IsZero() || since.Before(c.oldest) {
				c.oldest = since
			}
		}
	}
	for i := range rep.Limits {
		x, c := &rep.Limits[i], counts[rep.Limits[i].Name]
		x.Running, x.Waiting = &c.running, &c.waiting
		if !c.oldest.IsZero() {
			x.OldestWaitSeconds = seconds(max(o.Now.Sub(c.oldest), 0))
		}
	}
}

// What the ledger says of a limited tick.
const (
	limitIdle    = iota // ended, not due yet, or not emitted
	limitRunning        // started and not ended
	limitWaiting        // emitted, due, not started
)

// limitState returns the limit t counts against, what it is doing at now, and, when it waits, since when: its
// instant (slot plus jitter), or for a trigger's or backfill's tick its emission.
func limitState(t *audit.Tick, u uses, now time.Time) (string, int, time.Time) {
	name := cmp.Or(t.Limit, u.limitOf[t.Schedule]) // the tick's own record names it, since limits
	state := limitIdle
	for _, e := range t.Ledger {
		switch {
		case e.Kind == ledger.KindStarted:
			state = limitRunning
			name = cmp.Or(e.Limit, name)
		case e.Kind == ledger.KindReleased && !e.Retry:
			state = limitIdle // cut off: the partition's next owner starts it again
		case e.Kind == ledger.KindOutcome:
			return name, limitIdle, time.Time{}
		}
	}
	if state == limitRunning || len(t.Emissions) == 0 || name == "" {
		return name, state, time.Time{}
	}
	due := t.Emissions[0].EmittedAt
	if !t.Trigger && !t.Backfill && !t.Slot.IsZero() {
		due = t.Due(u.sched[t.Schedule])
	}
	if due.After(now) {
		return name, limitIdle, time.Time{}
	}
	return name, limitWaiting, due
}

// printLimits lists the limits and the schedules that name them.
func printLimits(w io.Writer, rep *Report) {
	if len(rep.Limits) == 0 {
		return
	}
	fmt.Fprintln(w, "\nLIMITS (ticker limit list; RUNNING and WAITING as the ledger shows them, the limit's owner counts in tickgroup_worker_limit_*)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LIMIT\tPOOL\tCONCURRENCY\tRATE\tSCHEDULES\tRUNNING\tWAITING\tOLDEST WAIT")
	var notes []string
	for _, l := range rep.Limits {
		if !l.Defined {
			fmt.Fprintf(tw, "%s\t-\tNOT DEFINED\t-\t%s\t%s\t%s\t%s\n", l.Name, count(l.Schedules), count(l.Running), count(l.Waiting), oldestWait(l))
			by := "schedules"
			if l.Schedules != nil {
				by = fmt.Sprintf("%d schedule(s)", *l.Schedules)
			}
			notes = append(notes, fmt.Sprintf("limit %s: named by %s but not defined: their ticks run without it (ticker limit put %s ...)", l.Name, by, l.Name))
			continue
		}
		conc := "-"
		if l.Concurrency > 0 {
			conc = fmt.Sprint(l.Concurrency)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", l.Name, l.Pool, conc, cmp.Or(l.Rate, "-"), count(l.Schedules), count(l.Running), count(l.Waiting), oldestWait(l))
		if l.OtherPools > 0 {
			notes = append(notes, fmt.Sprintf("limit %s: named by %d schedule(s) of another pool than %s: their workers run them without it", l.Name, l.OtherPools, l.Pool))
		}
	}
	_ = tw.Flush()
	for _, n := range notes {
		fmt.Fprintf(w, "  %s\n", n)
	}
}

func count(n *int) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

func oldestWait(l Limit) string {
	if l.OldestWaitSeconds == nil {
		return "-"
	}
	return fmtDuration(durationOf(*l.OldestWaitSeconds))
}

// priorityText is a schedule's priority for a column: "-" for the default.
func priorityText(p int) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprint(p)
}

// describeLimit is limit name, of limits, in a line: its bounds and its ticks running and waiting.
func describeLimit(name string, limits []Limit) string {
	i := slices.IndexFunc(limits, func(l Limit) bool { return l.Name == name })
	if i < 0 {
		return name + " (the limits could not be read)"
	}
	l := limits[i]
	if !l.Defined {
		return fmt.Sprintf("%s: NOT DEFINED, its ticks run without it (ticker limit put %s ...)", name, name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s of pool %s: ", name, l.Pool)
	switch {
	case l.Concurrency > 0 && l.Rate != "":
		fmt.Fprintf(&b, "at most %d at once and %s", l.Concurrency, l.Rate)
	case l.Concurrency > 0:
		fmt.Fprintf(&b, "at most %d at once", l.Concurrency)
	default:
		fmt.Fprintf(&b, "at most %s", l.Rate)
	}
	if l.Schedules != nil {
		fmt.Fprintf(&b, ", named by %d schedule(s)", *l.Schedules)
	}
	if l.Running != nil {
		fmt.Fprintf(&b, "; %d running, %d waiting", *l.Running, *l.Waiting)
		if l.OldestWaitSeconds != nil {
			fmt.Fprintf(&b, " (the oldest for %s)", fmtDuration(durationOf(*l.OldestWaitSeconds)))
		}
	}
	if l.OtherPools > 0 {
		fmt.Fprintf(&b, "; %d of another pool run without it", l.OtherPools)
	}
	return b.String()
}
