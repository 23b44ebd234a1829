package worker

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Watched deadlines. A scheduled tick may carry its schedule's start_by and finish_by (tick.Tick.StartByMS,
// FinishByMS), counted from the instant it is due (StartAt). The worker that runs it watches them from the
// moment the tick reaches a runner: a run that starts after start_by (or has not started when start_by passes
// while it waits for its ledger or its limit), or that is still going when finish_by passes (or ends after it),
// is a breach. Each breach of a delivery is reported once: a ledger.Breach record on the tick's results
// partition (its key dedupes the same breach seen by a later owner of the partition), the
// tickgroup_deadline_breaches_total counter, a log line, and a notification to Config.BreachWebhook.
//
// What a worker cannot see: a tick that waits in its lane's queue (behind its key's running tick, or while the
// worker's runners are all busy) is watched only once it reaches a runner, so its start_by breach is reported
// when it starts; and nobody watches a tick while no worker owns its partition: the next owner reports it.

// watch is one delivery's watch of a tick's deadlines.
type watch struct {
	w   *Worker
	rec *kgo.Record
	t   tick.Tick

	mu                sync.Mutex
	startBy, finishBy time.Time // zero: not watched
	started, stopped  bool
	seen              map[string]bool
	timers            []*time.Timer
}

// watchDeadlines starts watching t's deadlines (nil when it has none the worker honours: a trigger's, a value
// out of range).
func (w *Worker) watchDeadlines(rec *kgo.Record, t tick.Tick) *watch {
	if t.Trigger || (t.StartByMS <= 0 && t.FinishByMS <= 0) {
		return nil
	}
	x := &watch{w: w, rec: rec, t: t, seen: map[string]bool{}}
	at := t.StartAt()
	now := w.cfg.Now()
	for _, d := range []struct {
		ms       int64
		instant  *time.Time
		deadline string
	}{{t.StartByMS, &x.startBy, ledger.DeadlineStartBy}, {t.FinishByMS, &x.finishBy, ledger.DeadlineFinishBy}} {
		by := time.Duration(d.ms) * time.Millisecond
		if by <= 0 || by > schedule.MaxWatchDeadline {
			continue
		}
		*d.instant = at.Add(by)
		if !d.instant.After(now) {
			continue // passed already: a late start (starts) or a late end (stop) says so, if the tick runs at all
		}
		deadline := d.deadline
		x.timers = append(x.timers, time.AfterFunc(d.instant.Sub(now), func() { x.passed(deadline) }))
	}
	return x
}

// passed is deadline's timer: the run has not started (start_by) or not finished (finish_by).
func (x *watch) passed(deadline string) {
	x.mu.Lock()
	breach := !x.stopped && (deadline == ledger.DeadlineFinishBy || !x.started)
	x.mu.Unlock()
	if breach {
		x.breach(deadline, x.w.cfg.Now())
	}
}

// starts notes that the run's first handler attempt starts at at.
func (x *watch) starts(at time.Time) {
	if x == nil {
		return
	}
	x.mu.Lock()
	x.started = true
	late := !x.startBy.IsZero() && at.After(x.startBy)
	x.mu.Unlock()
	if late {
		x.breach(ledger.DeadlineStartBy, at)
	}
}

// stop ends the watch: the delivery is over at at, having run the tick (ran) or not. A run that ended after
// its finish_by is a breach, if its timer has not said so yet.
func (x *watch) stop(at time.Time, ran bool) {
	if x == nil {
		return
	}
	x.mu.Lock()
	x.stopped = true
	for _, tm := range x.timers {
		tm.Stop()
	}
	late := ran && !x.finishBy.IsZero() && at.After(x.finishBy)
	x.mu.Unlock()
	if late {
		x.breach(ledger.DeadlineFinishBy, at)
	}
}

// breach reports deadline's breach seen at at, once per watch.
func (x *watch) breach(deadline string, at time.Time) {
	x.mu.Lock()
	if x.seen[deadline] {
		x.mu.Unlock()
		return
	}
	x.seen[deadline] = true
	due := x.startBy
	if deadline == ledger.DeadlineFinishBy {
		due = x.finishBy
	}
	x.mu.Unlock()
	w, t := x.w, x.t
	b := ledger.Breach{V: ledger.Version, Kind: ledger.KindBreach, ID: t.ID, Schedule: t.Schedule, Slot: t.Slot.UTC(), Deadline: deadline, Due: due.UTC(), At: at.UTC(),
		Worker: w.cfg.WorkerID, Partition: x.rec.Partition, Offset: x.rec.Offset}
	w.m.breaches.WithLabelValues(t.Schedule, deadline).Inc()
	w.logger.Warn("deadline breached", "tick_id", t.ID, "deadline", deadline, "due", b.Due, "late_by", at.Sub(due).Round(time.Millisecond))
	if w.prod != nil {
		r := &kgo.Record{Topic: w.names.Results, Partition: x.rec.Partition, Key: ledger.BreachKey(t.ID, deadline), Value: ledger.EncodeBreach(b)}
		w.prod.Produce(context.WithoutCancel(w.hardCtx), r, func(_ *kgo.Record, err error) {
			if err != nil {
				w.m.breachErrs.Inc()
				w.logger.Warn("writing a breach record", "tick_id", t.ID, "deadline", deadline, "error", err)
			}
		})
	}
	if w.breachHook != nil {
		body, _ := json.Marshal(b)                                                           // no value of its fields fails
		w.breachHook.Send("deadline_breach", string(ledger.BreachKey(t.ID, deadline)), body) // one delivery ID per breach, whoever sees it
	}
}
