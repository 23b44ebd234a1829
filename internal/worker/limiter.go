package worker

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Limits. A limit (package limit) bounds the runs of the ticks that name it across the whole pool: at most
// Concurrency at once, at most Rate starts in any Window. The leader writes every tick of a limit to one work
// partition (tick.LimitPartition), so the bound is kept by one lane, the partition's owner, the way a key's
// order is: no lock, no counter shared between workers.
//
// Why the bound holds across owners. Only the partition's owner starts its ticks, and a start stands only when
// it is confirmed in the ledger with no newer claim before it (ledger.Owner.Start): a former owner, revoked,
// frozen or cut off, starts nothing once the new owner's claim is written. What a former owner had started
// before that claim counts on the new owner until the ledger proves it over, exactly as a key waits for it
// (ledger.Owner.RunningUntil: the run's outcome or release, or its last proof plus its lease plus the clock
// skew). So at any instant the runs of a limit are the new owner's own, plus former runs it counts: never more
// than Concurrency. For the rate, the new owner first reads back from the ledger the starts written before its
// claim in the limit's last window (ledger.ReadLimitStarts), and until that read is done it starts nothing of
// the limit. Each start counts from the instant its handler is released (the later of its confirmation and
// its instant) for Window plus rateMargin (the spread between this clock and the handler's first moment); a
// former owner's start counts from its entry's time plus PreStart plus MaxClockSkew, the latest its handler
// may have begun.
//
// Order: of the ticks a limit holds, the one of highest effective priority starts first, then the one waiting
// longest. A tick's effective priority is its priority plus one for every PriorityAging its key has waited for
// the limit, so a priority-1 tick outranks every fresh tick (at most 5) after 4*PriorityAging and then waits
// only for the ticks that have waited longer: a low priority is delayed, never starved.
//
// Overlap: a tick held by its limit while its key's next tick falls due is, under the default overlap policy
// and under skip, skipped (skipped_overlap) for that newer tick, as one that fell due while the run before it
// went on: a limit too small for its schedules builds no backlog, it runs the newest tick of each key in turn.
// The newer tick inherits the key's waiting time, so skipping never resets its age. Under queue every tick
// waits and runs, in order.

// rateMargin is added to a rate's window for the starts this lane counts: a handler's first moment follows its
// release by a little (a process to spawn, a request to send), by more on some starts than on others.
const rateMargin = 250 * time.Millisecond

// LimitSource gives the definitions of the pool's limits (internal/limit.View).
type LimitSource interface {
	// Loaded is closed once the source has read every limit written before it started.
	Loaded() <-chan struct{}
	// Get returns the limit named name, if it exists.
	Get(name string) (limit.Limit, bool)
}

// limitState is a lane's bookkeeping of one limit. Guarded by w.mu.
type limitState struct {
	// running counts the records of the limit this lane started and has not handled: they hold the limit.
	running int
	// starts are the start instants counted by the rate, oldest first (roughly: a start moves later once its
	// handler is released, see limitReleased), with the work offset of the tick they belong to.
	starts []limitStart
	// history: 0 the former owners' starts are not read yet, 1 being read, 2 read (or no rate).
	history int8
	// warned is set once the lane warned that the limit is unknown.
	warned bool
	// The last pick's view, for the metrics: ticks held, the oldest instant among them, starts refused.
	held   int
	oldest time.Time
}

type limitStart struct {
	at  time.Time
	off int64 // the work offset of this lane's start, -1 for a former owner's
}

// limitCandidate is a head that may start but for its limit.
type limitCandidate struct {
	it       *item
	priority int
	since    time.Time // when its key began waiting for the limit
}

// limitsLocked returns the lane's state of limit name, making it. Called with w.mu held.
func (l *lane) limitsLocked(name string) *limitState {
	if l.limits == nil {
		l.limits = map[string]*limitState{}
	}
	st := l.limits[name]
	if st == nil {
		st = &limitState{}
		l.limits[name] = st
	}
	return st
}

// definition returns the limit t names as the pool defines it; false when it is unknown (not yet read: wait is
// set), or not of this worker's pool, or the worker has no source of limits.
func (l *lane) definition(name string) (def limit.Limit, ok, wait bool) {
	src := l.w.cfg.Limits
	if src == nil {
		return limit.Limit{}, false, false
	}
	select {
	case <-src.Loaded():
	default:
		return limit.Limit{}, false, true
	}
	def, ok = src.Get(name)
	if ok && def.PoolName() != cmp.Or(l.w.names.PoolName, schedule.DefaultPool) {
		return limit.Limit{}, false, false
	}
	return def, ok, false
}

// admitLocked is pick's last pass: of cands, the heads that may start but for their limits, it starts those
// their limits admit (appended to out, at most max in all) and holds the others, lowering wait to when a held
// one may start. Called with w.mu held.
func (l *lane) admitLocked(now time.Time, cands []*item, out []*item, max int, wait time.Duration) ([]*item, time.Duration) {
	byLimit := map[string][]*item{}
	for _, c := range cands {
		byLimit[c.t.Limit] = append(byLimit[c.t.Limit], c)
	}
	for name, cs := range byLimit {
		st := l.limitsLocked(name)
		def, ok, loading := l.definition(name)
		switch {
		case loading:
			wait = sooner(wait, 100*time.Millisecond)
			l.holdLocked(st, now, cs)
			continue
		case !ok:
			if !st.warned {
				st.warned = true
				l.w.logger.Warn("ticks name a limit this pool does not have: they run without it", "limit", name, "partition", l.partition)
			}
			l.w.m.limitUnknown.WithLabelValues(name).Add(float64(len(cs)))
			for _, c := range cs {
				if len(out) < max {
					out = append(out, l.startLocked(c))
				}
			}
			continue
		}
		out, wait = l.admitLimitLocked(now, name, def, st, cs, out, max, wait)
	}
	return out, wait
}

// admitLimitLocked admits cs, the heads held for limit name (def), in order, as far as the limit allows.
func (l *lane) admitLimitLocked(now time.Time, name string, def limit.Limit, st *limitState, cs []*item, out []*item, max int, wait time.Duration) ([]*item, time.Duration) {
	w := l.w
	window := time.Duration(def.Window)
	if def.Rate > 0 && st.history != 2 {
		if st.history == 0 {
			st.history = 1
			go l.readLimitHistory(name, window)
		}
		l.holdLocked(st, now, cs)
		return out, wait
	}
	// The ticks held while the key's next tick is due give way to it (see Overlap above): they start at once,
	// to be recorded skipped_overlap, and hold nothing.
	cs = slices.DeleteFunc(cs, func(c *item) bool {
		if c.limitHeld && l.successorDue(c, now) && c.t.Overlap != tick.OverlapQueue && len(out) < max {
			c.overran = true
			out = append(out, l.startLocked(c))
			return true
		}
		return false
	})
	foreign, until := l.formerRunsLocked(now, name)
	if foreign > 0 {
		l.waitsOnLedger = true
		wait = sooner(wait, until.Sub(now))
	}
	free := -1 // no bound on runs at once
	if def.Concurrency > 0 {
		free = def.Concurrency - st.running - foreign
	}
	ordered := l.orderLocked(now, cs)
	for i, c := range ordered {
		if len(out) >= max {
			break // the pick is full: the rest wait for the next one, not for the limit
		}
		if free == 0 {
			l.holdLocked(st, now, ordered[i:])
			break
		}
		at := c.startAt
		if at.Before(now) {
			at = now
		}
		if def.Rate > 0 {
			if next, ok := st.rateAdmits(at, window, def.Rate); !ok {
				w.m.limitRateRefused.WithLabelValues(name).Inc()
				wait = sooner(wait, next.Sub(now))
				l.holdLocked(st, now, ordered[i:])
				break
			}
			st.starts = append(st.starts, limitStart{at: at, off: c.rec.Offset})
		}
		st.running++
		c.holdsLimit = true
		l.keys.keys[c.kid].limitSince = time.Time{}
		out = append(out, l.startLocked(c))
		if free > 0 {
			free--
		}
	}
	w.m.limitRunning.WithLabelValues(name).Set(float64(st.running + foreign))
	return out, wait
}

// holdLocked records that cs wait for their limit: each is marked held, and its key's wait begins.
func (l *lane) holdLocked(st *limitState, now time.Time, cs []*item) {
	for _, c := range cs {
		c.limitHeld = true
		ks := &l.keys.keys[c.kid]
		if ks.limitSince.IsZero() {
			ks.limitSince = cmp.Or(c.startAt, now)
		}
		st.held++
		if st.oldest.IsZero() || ks.limitSince.Before(st.oldest) {
			st.oldest = ks.limitSince
		}
	}
}

// successorDue reports whether the next scheduled tick of c's key is due at now.
func (l *lane) successorDue(c *item, now time.Time) bool {
	if c.jump {
		return false // a trigger or backfill tick is no slot of the schedule: nothing newer replaces it
	}
	ks := &l.keys.keys[c.kid]
	return len(ks.waiting) > 1 && ks.waiting[0] == c && !ks.waiting[1].startAt.After(now)
}

// formerRunsLocked counts the runs of limit name that the ledger shows started and not over and that are not
// this lane's own runs (counted in limitState.running): a former owner's (revoked, frozen, dead), or one of this
// worker's cut off. A former run may be at any offset of the lane's queue, not only the first of its key (the
// ticks before it may be finished without being committed past). It returns when the first may be over.
func (l *lane) formerRunsLocked(now time.Time, name string) (int, time.Time) {
	n, first := 0, time.Time{}
	for _, r := range l.ledger.RunningOfLimit(name, now) {
		if it := l.itemAtLocked(r.Offset); it != nil && it.holdsLimit {
			continue // this lane's own run
		}
		n++
		if first.IsZero() || r.Until.Before(first) {
			first = r.Until
		}
	}
	return n, first
}

// itemAtLocked returns the queued record at work offset off (nil when it is not queued: finished and dropped,
// or not fetched yet). The queue is in offset order. Called with w.mu held.
func (l *lane) itemAtLocked(off int64) *item {
	i, ok := slices.BinarySearchFunc(l.queue, off, func(it *item, off int64) int { return cmp.Compare(it.rec.Offset, off) })
	if !ok {
		return nil
	}
	return l.queue[i]
}

// orderLocked sorts cs for their limit: the highest effective priority first, then the longest waiting, then
// queue order.
func (l *lane) orderLocked(now time.Time, cs []*item) []*item {
	aging := l.w.cfg.PriorityAging
	cands := make([]limitCandidate, len(cs))
	for i, c := range cs {
		since := l.keys.keys[c.kid].limitSince
		if since.IsZero() {
			since = cmp.Or(c.startAt, now)
		}
		p := c.t.Priority
		if p == 0 {
			p = schedule.DefaultPriority
		}
		if waited := now.Sub(since); waited > 0 {
			p += int(waited / aging)
		}
		cands[i] = limitCandidate{it: c, priority: p, since: since}
	}
	slices.SortStableFunc(cands, func(a, b limitCandidate) int {
		if a.priority != b.priority {
			return cmp.Compare(b.priority, a.priority)
		}
		if c := a.since.Compare(b.since); c != 0 {
			return c
		}
		return cmp.Compare(a.it.seq, b.it.seq)
	})
	for i := range cands {
		cs[i] = cands[i].it
	}
	return cs
}

// rateAdmits reports whether a start at at keeps at most rate starts in any window (plus rateMargin); when not,
// it returns when the oldest counted start leaves the window. It forgets the starts that no longer count.
func (st *limitState) rateAdmits(at time.Time, window time.Duration, rate int) (time.Time, bool) {
	span := window + rateMargin
	i := 0
	for i < len(st.starts) && !st.starts[i].at.After(at.Add(-span)) {
		i++
	}
	st.starts = st.starts[i:]
	if len(st.starts) < rate {
		return time.Time{}, true
	}
	return st.starts[len(st.starts)-rate].at.Add(span), false
}

// releaseLimitLocked frees the limit it holds (it was handled, or given back). A start it was given that its
// handler never made is taken back from the rate when it was never released (given back before a runner took it).
func (l *lane) releaseLimitLocked(it *item, started bool) {
	if !it.holdsLimit {
		return
	}
	it.holdsLimit = false
	st := l.limitsLocked(it.t.Limit)
	st.running--
	if !started {
		for i := len(st.starts) - 1; i >= 0; i-- {
			if st.starts[i].off == it.rec.Offset {
				st.starts = slices.Delete(st.starts, i, i+1)
				break
			}
		}
	}
}

// limitReleased moves the rate's start of t (at work offset off) to now, the instant its handler is released
// (its start confirmed in the ledger), when that is later than the instant it was counted at.
func (l *lane) limitReleased(off int64, t *tick.Tick) {
	if t.Limit == "" {
		return
	}
	now := l.w.cfg.Now()
	if at := t.StartAt(); at.After(now) {
		now = at
	}
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	st := l.limits[t.Limit]
	if st == nil {
		return
	}
	for i := len(st.starts) - 1; i >= 0; i-- {
		if s := &st.starts[i]; s.off == off {
			if now.After(s.at) {
				s.at = now
			}
			return
		}
	}
}

// readLimitHistory reads back the starts of limit name that former owners wrote in its last window, before
// this lane's claim, and lets the lane start the limit's ticks. It retries until the lane stops.
func (l *lane) readLimitHistory(name string, window time.Duration) {
	w := l.w
	margin := w.cfg.PreStart + w.cfg.MaxClockSkew
	for try := 1; ; try++ {
		now := w.cfg.Now()
		since := now.Add(-window - rateMargin - margin)
		starts, err := ledger.ReadLimitStarts(l.ctx, w.opts("limits"), w.names.Results, l.partition, since, l.ledger.ClaimOffset(), name)
		if err == nil {
			w.mu.Lock()
			st := l.limitsLocked(name)
			former := make([]limitStart, 0, len(starts)+len(st.starts))
			for _, at := range starts {
				former = append(former, limitStart{at: at.Add(margin), off: -1})
			}
			slices.SortFunc(former, func(a, b limitStart) int { return a.at.Compare(b.at) })
			st.starts, st.history = append(former, st.starts...), 2
			w.mu.Unlock()
			w.logger.Debug("read the limit's starts back from the ledger", "limit", name, "partition", l.partition, "starts", len(starts))
			l.wakeUp()
			return
		}
		if l.ctx.Err() != nil {
			return
		}
		w.logger.Warn("reading a limit's starts back from the ledger; retrying", "limit", name, "partition", l.partition, "try", try, "error", err)
		if !sleep(l.ctx, w.backoff(min(try, 5))) {
			return
		}
	}
}

// waitRate waits until the rate of t's limit admits another start of t, at work offset off (a retry's attempt:
// pick admitted the first), and counts it. It reports false when ctx ended first.
func (l *lane) waitRate(ctx context.Context, off int64, t *tick.Tick) bool {
	w := l.w
	for {
		w.mu.Lock()
		def, ok, _ := l.definition(t.Limit)
		if !ok || def.Rate == 0 {
			w.mu.Unlock()
			return true
		}
		st := l.limitsLocked(t.Limit)
		now := w.cfg.Now()
		next, admits := st.rateAdmits(now, time.Duration(def.Window), def.Rate)
		if admits {
			st.starts = append(st.starts, limitStart{at: now, off: off})
			w.mu.Unlock()
			return true
		}
		w.m.limitRateRefused.WithLabelValues(t.Limit).Inc()
		w.mu.Unlock()
		if !sleep(ctx, next.Sub(now)) {
			return false
		}
	}
}

// resetHeldLocked forgets what the last pick held, before a new one. Called with w.mu held.
func (l *lane) resetHeldLocked() {
	for _, st := range l.limits {
		st.held, st.oldest = 0, time.Time{}
	}
}

// limitMetricsLocked sets the per-limit gauges from the last pick. Called with w.mu held.
func (l *lane) limitMetricsLocked(now time.Time) {
	for name, st := range l.limits {
		l.w.m.limitWaiting.WithLabelValues(name).Set(float64(st.held))
		wait := 0.0
		if !st.oldest.IsZero() && now.After(st.oldest) {
			wait = now.Sub(st.oldest).Seconds()
		}
		l.w.m.limitOldestWait.WithLabelValues(name).Set(wait)
	}
}

// forgetLimits removes the per-limit series of the limits this lane kept, once it starts nothing more: the
// partition's next owner reports them, and a series left here would go on saying what this lane saw last.
func (l *lane) forgetLimits() {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	for name := range l.limits {
		w.m.limitRunning.DeleteLabelValues(name)
		w.m.limitWaiting.DeleteLabelValues(name)
		w.m.limitOldestWait.DeleteLabelValues(name)
	}
}
