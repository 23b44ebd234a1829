package console

import (
	"context"
	"slices"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/audit"
)

// Limits of a schedule's page.
const (
	detailRuns    = 50
	detailNext    = 10
	detailHistory = 24 * time.Hour      // the runs are read over this long
	detailChanges = 30 * 24 * time.Hour // and the change log over this long
)

// detail is what a schedule's page reads besides the snapshot: its runs, change log and backfills.
type detail struct {
	at        time.Time
	runs      []run
	changes   []tickgroup.ChangeRecord
	backfills []tickgroup.BackfillStatus
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
	Marked    bool // run again after an interruption its handler was told of
	Problems  []string
	ErrorText string
	Output    string // the last attempt's output, when the worker records it
}

// detailKeep is how long a schedule's detail is kept: longer than the page's own refresh, so that an open page
// does not read the topics at each of its refreshes.
func (c *Console) detailKeep() time.Duration { return max(2*c.cfg.Refresh, 30*time.Second) }

// maxDetailReads bounds the detail reads under way at once, whoever asks: each reads a day of the work and
// results topics.
const maxDetailReads = 2

// flight is a detail read under way; the requests for the same schedule wait for it.
type flight struct {
	done chan struct{}
	d    *detail
}

// detailOf returns name's detail, read at most detailKeep ago. Requests for one schedule share one read, at most
// maxDetailReads run at once, and a read runs on the console's context, not the request's: a client that goes
// away does not cut the read short for the others. A read that failed is not kept.
func (c *Console) detailOf(ctx context.Context, name string) *detail {
	c.detailMu.Lock()
	if d, ok := c.details[name]; ok && time.Since(d.at) < c.detailKeep() {
		c.detailMu.Unlock()
		return d
	}
	f, running := c.flights[name]
	if !running {
		f = &flight{done: make(chan struct{})}
		c.flights[name] = f
		gen := c.gen[name]
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			d := c.limitedRead(name)
			c.detailMu.Lock()
			delete(c.flights, name)
			if d.err == nil && c.gen[name] == gen { // an action since has made it stale
				if len(c.details) > 1000 {
					clear(c.details) // a bound on what browsing every schedule keeps
				}
				c.details[name] = d
			}
			c.detailMu.Unlock()
			f.d = d
			close(f.done)
		}()
	}
	c.detailMu.Unlock()
	select {
	case <-f.done:
		return f.d
	case <-ctx.Done():
		return &detail{at: time.Now(), err: ctx.Err()}
	}
}

// limitedRead reads name's detail once a read slot is free.
func (c *Console) limitedRead(name string) *detail {
	select {
	case c.reads <- struct{}{}:
		defer func() { <-c.reads }()
	case <-c.runCtx.Done():
		return &detail{at: time.Now(), err: c.runCtx.Err()}
	}
	return c.readDetail(c.runCtx, name)
}

func (c *Console) readDetail(ctx context.Context, name string) *detail {
	now := time.Now()
	d := &detail{at: now}
	ctx, cancel := context.WithTimeout(ctx, max(2*c.cfg.Refresh, time.Minute))
	defer cancel()
	from := now.Add(-detailHistory)
	// Only the records of the day (and a lead before it): the topics may retain a week.
	l, err := audit.ReadSince(ctx, c.opts, c.cfg.Names, from.Add(-10*time.Minute))
	if err != nil {
		d.err = err
		return d
	}
	rep := audit.Compare(l, audit.Options{From: from, Now: now, Grace: c.cfg.Grace, Lead: audit.DefaultLead, Schedule: name, AllTicks: true})
	h, _ := audit.HistoryOf(rep, name, from)
	for _, t := range h.Ticks {
		d.runs = append(d.runs, runOf(t, ""))
	}
	for _, t := range h.Triggers {
		d.runs = append(d.runs, runOf(t, "trigger"))
	}
	for _, t := range h.Backfills {
		d.runs = append(d.runs, runOf(t, "backfill"))
	}
	// Newest first: the ticks that were due (or ran) by now, then the latest 50.
	d.runs = slices.DeleteFunc(d.runs, func(r run) bool { return r.Slot.After(now) && r.Started == nil && r.Kind == "" })
	slices.SortFunc(d.runs, func(a, b run) int {
		if c := b.Slot.Compare(a.Slot); c != 0 {
			return c
		}
		return a.Shard - b.Shard
	})
	if len(d.runs) > detailRuns {
		d.runs = d.runs[:detailRuns]
	}
	if c.cfg.Schedules != nil {
		if d.changes, _, err = c.cfg.Schedules.ChangeLog(ctx, name, now.Add(-detailChanges)); err != nil {
			d.err = err
		}
		slices.Reverse(d.changes) // newest first
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

// runOf is the run of tick report t.
func runOf(t audit.TickReport, kind string) run {
	r := run{Slot: t.Slot, ID: t.ID, Shard: t.Shard, Kind: kind, State: t.State, Problems: t.Problems}
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
			r.ErrorText = x.Error
		}
		if x.Output != "" {
			r.Output = x.Output
		}
	}
	if r.Started != nil && kind == "" {
		// A start recorded ahead of the instant (the worker then waits for it) is on time.
		late := max(r.Started.Sub(t.Due), 0)
		r.LateBy = &late
	}
	return r
}
