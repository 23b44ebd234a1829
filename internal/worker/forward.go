package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/forward"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// runForward is forward mode (Config.Forward): internal/forward's engine, in this worker's group, writing this
// worker's outcome records and dead letters (forwardHost).
func (w *Worker) runForward(ctx context.Context) error {
	w.logger.Info("starting worker in forward mode", "worker_id", w.cfg.WorkerID, "group", w.names.WorkerGroup,
		"topic", w.names.Work, "forward", w.cfg.Forward, "start", w.cfg.Start.String())
	w.startAt = w.cfg.Now()
	w.start = w.cfg.Start.Offset(w.startAt)
	stopSummary := background(ctx, func(ctx context.Context) { w.summarize(ctx, time.Minute) })
	e := forward.NewEngine(forward.Config{
		Work: w.names.Work, Forward: w.cfg.Forward, TxnPrefix: w.names.WorkerGroup + ".forward.", Now: w.cfg.Now, Logger: w.logger,
	}, forwardHost{w})
	err := e.Run(ctx)
	stopSummary()
	w.logger.Info("worker stopped")
	return err
}

// forwardHost is the worker as forward mode's forward.Host.
type forwardHost struct{ w *Worker }

func (h forwardHost) SessionOpts(txnID string, assigned, released func(context.Context, *kgo.Client, map[string][]int32)) []kgo.Opt {
	w := h.w
	return w.opts("forward",
		kafka.WorkerGroupOpts(w.names, w.start, w.cfg.SessionTimeout, w.cfg.InstanceID, w.cfg.GroupProtocol),
		kafka.ForwardOpts(txnID),
		[]kgo.Opt{
			kgo.OnPartitionsAssigned(assigned),
			kgo.OnPartitionsRevoked(released),
			kgo.OnPartitionsLost(released),
			kgo.AdjustFetchOffsetsFn(w.pinStart),
		})
}

func (h forwardHost) Open(ctx context.Context, cl *kgo.Client) error {
	w := h.w
	w.setClient(cl)
	var err error
	w.resultParts, w.dlqParts, err = w.partitionCounts(ctx, cl)
	return err
}

func (h forwardHost) Leave(ctx context.Context, memberID string, err error) {
	w := h.w
	if w.cfg.InstanceID != "" && !errors.Is(err, ErrFencedInstance) {
		w.leaveStatic(ctx, memberID)
	}
}

func (h forwardHost) FetchErrors(fetches kgo.Fetches) error {
	w := h.w
	var fenced, denied error
	fetches.EachError(func(topic string, p int32, err error) {
		if errors.Is(err, kerr.FencedInstanceID) {
			fenced = fmt.Errorf("worker %s: instance ID %q: %w", w.cfg.WorkerID, w.cfg.InstanceID, ErrFencedInstance)
			return
		}
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			w.logger.Warn("fetch error", "topic", topic, "partition", p, "error", err)
		}
		denied = cmp.Or(denied, w.denied(topic, err))
	})
	if fenced != nil {
		w.logger.Error("fenced: another worker joined the group with this instance ID; stopping", "instance_id", w.cfg.InstanceID)
		return fenced
	}
	if denied != nil {
		return fmt.Errorf("consuming: %w", denied)
	}
	return nil
}

func (h forwardHost) Decide(rec *kgo.Record, t tick.Tick, err error, now time.Time, cancelled *tick.Cancel) (bool, []*kgo.Record, string, string) {
	w := h.w
	o, dl, run := w.decide(before{rec: rec, t: t, err: err, now: now, cancelled: cancelled})
	if run {
		return true, nil, "", ""
	}
	h.finish(&o, now)
	if dl != nil {
		return false, []*kgo.Record{w.deadLetterRecord(rec, o.reason, dl, 0, w.dlqParts), w.resultRecord(rec, o.Outcome, w.resultParts)}, resultDeadLettered, o.reason
	}
	return false, []*kgo.Record{w.resultRecord(rec, o.Outcome, w.resultParts)}, o.Status, "" // the status is its result's name
}

func (h forwardHost) Forwarded(rec *kgo.Record, t tick.Tick, start time.Time) (*kgo.Record, string) {
	w := h.w
	o := h.outcome(rec, t)
	o.Status = StatusOK
	h.finish(&o, start)
	w.m.startDelay.Observe(start.Sub(t.StartAt()).Seconds())
	return w.resultRecord(rec, o.Outcome, w.resultParts), resultOK
}

func (h forwardHost) Refused(rec *kgo.Record, t tick.Tick, start time.Time, cause error) ([]*kgo.Record, string, string) {
	w := h.w
	o := h.outcome(rec, t)
	o.Status, o.Error, o.reason = StatusDeadLettered, cause.Error(), reasonTooLarge
	h.finish(&o, start)
	return []*kgo.Record{w.deadLetterRecord(rec, o.reason, cause, 1, w.dlqParts), w.resultRecord(rec, o.Outcome, w.resultParts)}, resultDeadLettered, o.reason
}

// outcome is the outcome of t's one attempt, its forwarding.
func (h forwardHost) outcome(rec *kgo.Record, t tick.Tick) result {
	slot := t.Slot
	return result{Outcome: ledger.Outcome{ID: t.ID, Schedule: t.Schedule, Slot: &slot, Worker: h.w.cfg.WorkerID, Partition: rec.Partition, Offset: rec.Offset, Attempts: 1}}
}

// finish stamps o with the time it took from start.
func (h forwardHost) finish(o *result, start time.Time) {
	o.FinishedAt = h.w.cfg.Now().UTC()
	o.DurationMS = float64(o.FinishedAt.Sub(start).Microseconds()) / 1000
}

func (h forwardHost) Committed(results, deadLetters map[string]int) {
	w := h.w
	for r, n := range results {
		w.count(r, n)
	}
	for r, n := range deadLetters {
		w.m.deadLetters.WithLabelValues(r).Add(float64(n))
	}
}

func (h forwardHost) Assigned(n int) {
	w := h.w
	w.m.partitions.Set(float64(n))
	if w.ready != nil && !w.assignedYet.Swap(true) {
		w.ready.Set(ReadinessCondition, true)
	}
}

func (h forwardHost) Released(n int) { h.w.m.partitions.Set(float64(n)) }

func (h forwardHost) ForgedCancel(p int32) { h.w.refusedCancels(p, 1) }
