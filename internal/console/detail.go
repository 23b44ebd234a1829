package console

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Limits of a schedule's page.
const (
	detailRuns         = 50
	detailNext         = 10
	detailHistory      = 24 * time.Hour      // the runs are read over this long
	detailChanges      = 30 * 24 * time.Hour // and the change log over this long
	detailChangesShown = 100
)

// detail is what a schedule's page reads besides the snapshot: its runs, change log and backfills.
type detail struct {
	at        time.Time
	runs      []run
	changes   []tickgroup.ChangeRecord
	backfills []tickgroup.BackfillStatus
	grid      *grid // the slots of the day
	truncated bool  // the bound on the records read cut the day short
	forged    int   // change-log records the schedules topic contradicts, not shown
	invalid   int   // change-log records that did not decode
	err       error
}

// run is one tick of a schedule as its page shows it.
type run struct {
	Slot      time.Time
	ID        string
	Shard     int
	Kind      string // "", "trigger" or "backfill"
	State     string
	Emitted   *time.Time
	Started   *time.Time
	Finished  *time.Time
	LateBy    *time.Duration // first start minus the tick's due instant
	Attempts  int
	Worker    string
	Outcome   string
	Marked    bool     // run again after an interruption its handler was told of
	Breaches  []string // the deadlines (start_by, finish_by) its run breached
	Problems  []string
	ErrorText string
	Output    string // the last attempt's output, when the worker records it
	// Selected: of the slot a grid cell's link asked for (the first one is the link's Anchor); Short: only what
	// the grid keeps of it is known.
	Selected, Anchor, Short bool
}

// detailKeep is how long a schedule's detail is kept: longer than the page's own refresh, so that an open page
// does not read the topics at each of its refreshes.
func (c *Console) detailKeep() time.Duration { return max(2*c.cfg.Refresh, 30*time.Second) }

// Bounds of the schedule pages' reads. A read costs what one schedule's page shows (its partitions' newest
// records, at most Config.DetailRecords each, and its own change log), not what the namespace holds. Reads for
// one schedule are shared; at most maxDetailReads run at once and maxDetailFlights are under way or waiting, at
// most maxClientFlights of them started by one client (its user, or its address when it is anonymous): past
// either bound a page answers 503 with Retry-After, so that no client can queue reads in front of the others.
// A read whose clients have all gone is dropped, waiting or not. At most maxDetailsKept details are kept, the
// oldest going first.
const (
	maxDetailReads   = 2
	maxDetailFlights = 16
	maxClientFlights = 2
	maxDetailsKept   = 256
)

// errDetailBusy is detailOf's refusal past its bounds.
var errDetailBusy = errors.New("too many schedule pages are being read: try again in a moment")

// flight is a detail read under way; the requests for the same schedule wait for it.
type flight struct {
	done    chan struct{}
	d       *detail
	waiters int                // requests waiting for it; at 0 it is cancelled
	cancel  context.CancelFunc // ends the read
}

// detailOf returns the detail of the schedule of e, read at most detailKeep ago, for client. Requests for one
// schedule share one read, which runs on the console's context: a client that goes away does not cut it short
// for the others, but when every client waiting for it has gone it is dropped.
func (c *Console) detailOf(ctx context.Context, client string, e store.Entry, name string) (*detail, error) {
	c.detailMu.Lock()
	if d, ok := c.details[name]; ok && time.Since(d.at) < c.detailKeep() {
		c.detailMu.Unlock()
		return d, nil
	}
	f, running := c.flights[name]
	switch {
	case running:
		f.waiters++
	case len(c.flights) >= maxDetailFlights || c.perClient[client] >= maxClientFlights:
		c.detailMu.Unlock()
		c.metrics.details.WithLabelValues("refused").Inc()
		return nil, errDetailBusy
	default:
		f = c.startFlight(client, e, name)
	}
	c.detailMu.Unlock()
	select {
	case <-f.done:
		return f.d, nil
	case <-ctx.Done():
		c.detailMu.Lock()
		if f.waiters--; f.waiters == 0 {
			f.cancel()
		}
		c.detailMu.Unlock()
		return nil, ctx.Err()
	}
}

// startFlight starts the read of name's detail for client; c.detailMu is held.
func (c *Console) startFlight(client string, e store.Entry, name string) *flight {
	fctx, cancel := context.WithCancel(*c.runCtx.Load())
	f := &flight{done: make(chan struct{}), waiters: 1, cancel: cancel}
	c.flights[name] = f
	c.perClient[client]++
	c.metrics.detailWait.Set(float64(len(c.flights)))
	gen := c.gen[name]
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		d := c.limitedRead(fctx, e, name)
		c.detailMu.Lock()
		delete(c.flights, name)
		if c.perClient[client]--; c.perClient[client] <= 0 {
			delete(c.perClient, client)
		}
		c.metrics.detailWait.Set(float64(len(c.flights)))
		if d.err == nil && c.gen[name] == gen { // an action since has made it stale
			c.keep(name, d)
		}
		c.detailMu.Unlock()
		f.d = d
		close(f.done)
	}()
	return f
}

// keep keeps d, making room by dropping the oldest detail kept; c.detailMu is held.
func (c *Console) keep(name string, d *detail) {
	if _, ok := c.details[name]; !ok && len(c.details) >= maxDetailsKept {
		oldest := ""
		for n, x := range c.details {
			if oldest == "" || x.at.Before(c.details[oldest].at) {
				oldest = n
			}
		}
		delete(c.details, oldest)
	}
	c.details[name] = d
}

// limitedRead reads name's detail once a read slot is free; a read cancelled meanwhile is dropped.
func (c *Console) limitedRead(ctx context.Context, e store.Entry, name string) *detail {
	if err := c.reads.Acquire(ctx, 1); err != nil {
		c.metrics.details.WithLabelValues("dropped").Inc()
		return &detail{at: time.Now(), err: err}
	}
	defer c.reads.Release(1)
	start := time.Now()
	d := c.readOne(ctx, e, name)
	c.metrics.detailTook.Observe(time.Since(start).Seconds())
	switch {
	case ctx.Err() != nil:
		c.metrics.details.WithLabelValues("dropped").Inc()
	case d.err != nil:
		c.metrics.details.WithLabelValues("failed").Inc()
	default:
		c.metrics.details.WithLabelValues("ok").Inc()
	}
	return d
}

// readDetail reads the runs of the schedule of e over the last day, from its own partitions only (at most
// Config.DetailRecords records of each), its change log and its backfills.
func (c *Console) readDetail(ctx context.Context, e store.Entry, name string) *detail {
	now := time.Now()
	d := &detail{at: now}
	ctx, cancel := context.WithTimeout(ctx, max(2*c.cfg.Refresh, time.Minute))
	defer cancel()
	from := now.Add(-detailHistory)
	scope := audit.Scope{Schedule: name, Pool: e.Schedule.Pool(), Shards: e.Schedule.Shards(), Since: from.Add(-10 * time.Minute),
		MaxPerPartition: c.cfg.DetailRecords}
	if s := c.snap.Load(); s != nil && s.large {
		// The schedule's newest record, read by its offset from the catalog, rather than the schedules topic's
		// ten million records: its slots before that record's time are not derived, as after a compaction.
		scope.Latest = &audit.Version{Offset: e.Version, At: e.UpdatedAt, Schedule: e.Schedule}
	}
	l, err := audit.ReadSchedule(ctx, c.opts, c.cfg.Names, scope)
	if err != nil {
		d.err = err
		return d
	}
	d.truncated = l.Truncated
	rep := audit.Compare(l, audit.Options{From: from, Now: now, Grace: c.cfg.Grace, Lead: audit.DefaultLead, Schedule: name, AllTicks: true})
	h, _ := audit.HistoryOf(rep, name, from)
	for _, t := range h.Ticks {
		d.runs = append(d.runs, c.runOf(t, ""))
	}
	for _, t := range h.Triggers {
		d.runs = append(d.runs, c.runOf(t, "trigger"))
	}
	for _, t := range h.Backfills {
		d.runs = append(d.runs, c.runOf(t, "backfill"))
	}
	// Newest first: the ticks that were due (or ran) by now.
	d.runs = slices.DeleteFunc(d.runs, func(r run) bool { return r.Slot.After(now) && r.Started == nil && r.Kind == "" })
	slices.SortFunc(d.runs, func(a, b run) int {
		if c := b.Slot.Compare(a.Slot); c != 0 {
			return c
		}
		return a.Shard - b.Shard
	})
	d.grid = gridOf(d.runs, from, now, e.Schedule)
	if len(d.runs) > detailRuns {
		d.runs = slices.Clone(d.runs[:detailRuns]) // not the day's array: the detail is kept
	}
	if c.cfg.Schedules != nil {
		var st tickgroup.ChangeLogStats
		if d.changes, st, err = c.cfg.Schedules.ChangeLog(ctx, name, now.Add(-detailChanges)); err != nil {
			d.err = err
		}
		d.forged, d.invalid = st.Forged, st.Invalid
		slices.Reverse(d.changes) // newest first
		if len(d.changes) > detailChangesShown {
			d.changes = d.changes[:detailChangesShown]
		}
		all, err := c.cfg.Schedules.Backfills(ctx)
		if err != nil && d.err == nil {
			d.err = err
		}
		for _, b := range all {
			if b.Schedule == name {
				d.backfills = append(d.backfills, b)
			}
		}
		slices.Reverse(d.backfills)
	}
	return d
}

// Bounds of what a run keeps of its texts (a worker principal may write large outcome records).
const (
	maxOutput    = 8 << 10
	maxErrorText = 1 << 10
)

// runOf is the run of tick report t.
func (c *Console) runOf(t audit.TickReport, kind string) run {
	r := run{Slot: t.Slot, ID: t.ID, Shard: t.Shard, Kind: kind, State: t.State, Problems: t.Problems, Breaches: t.Breaches}
	if len(t.Emissions) > 0 {
		e := t.Emissions[0].EmittedAt
		r.Emitted = &e
	}
	for _, x := range t.Executions {
		if x.StartedAt != nil && (r.Started == nil || x.StartedAt.Before(*r.Started)) {
			s := *x.StartedAt
			r.Started = &s
		}
		if x.FinishedAt != nil {
			f := *x.FinishedAt
			r.Finished = &f
		}
		r.Attempts = max(r.Attempts, x.Attempt)
		r.Worker, r.Outcome = x.Worker, x.Status
		if x.Interrupted {
			r.Marked = true
		}
		if x.Error != "" {
			r.ErrorText = truncate(x.Error, maxErrorText)
		}
		if x.Output != "" && c.cfg.ShowOutput {
			r.Output = truncate(x.Output, maxOutput)
		}
	}
	if r.Started != nil && kind == "" {
		// A start recorded ahead of the instant (the worker then waits for it) is on time.
		late := max(r.Started.Sub(t.Due), 0)
		r.LateBy = &late
	}
	return r
}
