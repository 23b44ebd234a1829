package worker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// lane runs the records of one assigned partition, one at a time and in order, so one schedule's ticks (which
// share a partition) never overlap.
type lane struct {
	w         *Worker
	partition int32
	in        chan []*kgo.Record
	ctx       context.Context // handlers' parent; ends on revocation, loss or the end of the grace period
	cancel    context.CancelCauseFunc
	done      chan struct{} // closed when run returns
	pending   sync.WaitGroup

	// Guarded by w.mu.
	active     bool            // false once revoked or lost: finished offsets are ignored from then on
	doneOffset kgo.EpochOffset // the offset after the last record finished with its outcome written
	dirty      bool            // doneOffset not committed yet
}

func (w *Worker) newLane(p int32) *lane {
	ctx, cancel := context.WithCancelCause(w.hardCtx)
	return &lane{
		w:         w,
		partition: p,
		in:        make(chan []*kgo.Record, 1),
		ctx:       ctx,
		cancel:    cancel,
		done:      make(chan struct{}),
		active:    true,
	}
}

func (l *lane) run() {
	defer close(l.done)
	w := l.w
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-w.draining:
			return
		case batch := <-l.in:
			for _, rec := range batch {
				select {
				case <-l.ctx.Done():
					return
				case <-w.draining:
					return
				default:
				}
				o, ok := w.run(l.ctx, rec)
				if !ok {
					return // cancelled: nothing recorded, nothing committed; the next owner runs it again
				}
				l.publish(rec, o)
			}
			if cl := w.cl.Load(); cl != nil {
				cl.ResumeFetchPartitions(map[string][]int32{w.names.Work: {l.partition}})
			}
		}
	}
}

// publish writes rec's outcome; once it is acknowledged, rec's offset may be committed.
func (l *lane) publish(rec *kgo.Record, o Outcome) {
	w := l.w
	l.pending.Add(1)
	w.prod.Produce(context.WithoutCancel(l.ctx), w.resultRecord(rec, o, w.resultParts), func(_ *kgo.Record, err error) {
		defer l.pending.Done()
		if err != nil {
			// The tick has run (or been dead-lettered); holding its offset back would only run it again.
			w.m.outcomeErrs.Inc()
			w.logger.Error("writing outcome", "tick_id", o.ID, "partition", rec.Partition, "offset", rec.Offset, "error", err)
		}
		w.mu.Lock()
		if l.active {
			l.doneOffset = kgo.EpochOffset{Epoch: rec.LeaderEpoch, Offset: rec.Offset + 1}
			l.dirty = true
		}
		w.mu.Unlock()
		w.wakeCommitter()
	})
}

// waitPending waits up to d for the lane's outcome records to be acknowledged.
func (l *lane) waitPending(d time.Duration) {
	ch := make(chan struct{})
	go func() {
		l.pending.Wait()
		close(ch)
	}()
	select {
	case <-ch:
	case <-time.After(d):
		l.w.logger.Warn("outcome records still unacknowledged", "partition", l.partition, "waited", d)
	}
}

// run takes one record to its outcome: decode, deadline, attempts with backoff, dead letter. It reports false
// when ctx ended first: the record then has no outcome and must not be committed.
func (w *Worker) run(ctx context.Context, rec *kgo.Record) (Outcome, bool) {
	select {
	case w.sem <- struct{}{}:
	case <-ctx.Done():
		return Outcome{}, false
	}
	defer func() { <-w.sem }()
	o, dl := w.process(ctx, rec)
	if ctx.Err() != nil {
		return Outcome{}, false
	}
	if dl != nil {
		if !w.deadLetter(ctx, rec, o, dl) {
			return Outcome{}, false
		}
	}
	o.FinishedAt = w.cfg.Now().UTC()
	return o, true
}

// process runs the handler for rec, without any Kafka I/O. When the record must go to the dead-letter topic it
// returns the cause as well.
func (w *Worker) process(ctx context.Context, rec *kgo.Record) (Outcome, error) {
	start := w.cfg.Now()
	o := Outcome{ID: string(resultKey(rec)), Worker: w.cfg.WorkerID, Partition: rec.Partition, Offset: rec.Offset}
	t, err := tick.Decode(rec.Value)
	if err != nil {
		o.Status, o.Error, o.reason = StatusDeadLettered, errString(err), decodeReason(err)
		w.logger.Warn("unreadable record: dead-lettering", "partition", rec.Partition, "offset", rec.Offset, "reason", o.reason, "error", err)
		return o, err
	}
	slot := t.Slot
	o.ID, o.Schedule, o.Slot = t.ID, t.Schedule, &slot
	if t.Deadline != nil && start.After(*t.Deadline) {
		o.Status = StatusSkippedLate
		o.Error = fmt.Sprintf("start at %s is after the deadline %s", start.UTC().Format(time.RFC3339Nano), t.Deadline.UTC().Format(time.RFC3339Nano))
		w.m.ticks.WithLabelValues(resultSkippedLate).Inc()
		w.logger.Warn("tick skipped: past its deadline", "tick_id", t.ID, "partition", rec.Partition, "deadline", *t.Deadline)
		return o, nil
	}
	w.m.startDelay.Observe(start.Sub(t.Slot).Seconds())
	for attempt := 1; ; attempt++ {
		o.Attempts = attempt
		err = w.attempt(ctx, t, attempt)
		if ctx.Err() != nil {
			return o, nil // the caller sees ctx and records nothing
		}
		if err == nil {
			o.Status = StatusOK
			o.DurationMS = float64(w.cfg.Now().Sub(start).Microseconds()) / 1000
			w.m.ticks.WithLabelValues(resultOK).Inc()
			return o, nil
		}
		o.Error = errString(err)
		o.DurationMS = float64(w.cfg.Now().Sub(start).Microseconds()) / 1000
		if IsPermanent(err) {
			o.Status, o.reason = StatusFailed, reasonPermanent
			w.m.ticks.WithLabelValues(resultFailed).Inc()
			w.logger.Warn("tick failed permanently: dead-lettering", "tick_id", t.ID, "partition", rec.Partition, "attempt", attempt, "error", err)
			return o, err
		}
		if attempt >= w.cfg.MaxAttempts {
			o.Status, o.reason = StatusDeadLettered, reasonMaxAttempts
			w.logger.Warn("tick failed on every attempt: dead-lettering", "tick_id", t.ID, "partition", rec.Partition, "attempt", attempt, "error", err)
			return o, err
		}
		w.m.ticks.WithLabelValues(resultRetried).Inc()
		delay := w.backoff(attempt)
		w.logger.Warn("tick failed: retrying", "tick_id", t.ID, "partition", rec.Partition, "attempt", attempt, "retry_in", delay, "error", err)
		if !sleep(ctx, delay) {
			return o, nil
		}
	}
}

// attempt runs the handler once under the attempt timeout.
func (w *Worker) attempt(ctx context.Context, t tick.Tick, attempt int) error {
	actx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	w.m.inflight.Inc()
	begin := time.Now()
	err := w.handler.Handle(actx, t, Attempt{N: attempt})
	w.m.duration.Observe(time.Since(begin).Seconds())
	w.m.inflight.Dec()
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s: %w", w.cfg.Timeout, err)
	}
	return err
}

// backoff is the delay after the given failed attempt: Backoff doubled per attempt, capped at MaxBackoff, with
// jitter drawn uniformly from [d/2, d].
func (w *Worker) backoff(attempt int) time.Duration {
	d := w.cfg.Backoff
	for i := 1; i < attempt && d < w.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, w.cfg.MaxBackoff)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// deadLetter writes rec to the dead-letter topic, retrying until it succeeds or ctx ends (then it reports
// false: the record stays uncommitted and is delivered again).
func (w *Worker) deadLetter(ctx context.Context, rec *kgo.Record, o Outcome, cause error) bool {
	dl := w.deadLetterRecord(rec, o.reason, cause, o.Attempts, w.dlqParts)
	for try := 1; ; try++ {
		err := w.prod.ProduceSync(ctx, dl).FirstErr()
		if err == nil {
			w.m.deadLetters.WithLabelValues(o.reason).Inc()
			if o.Status == StatusDeadLettered {
				w.m.ticks.WithLabelValues(resultDeadLettered).Inc()
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		w.logger.Error("writing dead letter; retrying", "tick_id", o.ID, "partition", rec.Partition, "offset", rec.Offset, "try", try, "error", err)
		if !sleep(ctx, w.backoff(min(try, 5))) {
			return false
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
