package worker

import (
	"cmp"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// before is what a worker knows of a record when it could start it, for decide.
type before struct {
	rec *kgo.Record
	t   tick.Tick
	err error // the record could not be read as a tick (t is then empty)
	now time.Time
	// cancelled, when not nil, is a cancellation of the tick's schedule that applies to it.
	cancelled *tick.Cancel
	// attempts is how many attempts earlier owners started; interrupted is set when the last of them was cut off.
	attempts    int
	interrupted bool
	// newer, when not zero, is the start instant of a later tick of the same key that the overlap policy skips
	// this one for.
	newer time.Time
	// watch watches the tick's start_by and finish_by (deadlines.go); nil: none.
	watch *watch
}

// decide is the one place where both engines, the lanes and forward mode, decide what becomes of a record before
// any attempt, in this order: an unreadable record is dead-lettered; a cancelled tick, an interrupted one under
// --on-interrupted skip, one whose overlap policy yields to a newer tick already due, and one past its deadline
// are recorded without running. It returns the outcome started for the record and, when it decided (run false),
// its status set; dl is the dead-letter cause for an unreadable record. Counting is the caller's (forward mode
// counts only once its transaction commits).
func (w *Worker) decide(b before) (o result, dl error, run bool) {
	rec, t := b.rec, b.t
	o = result{Outcome: ledger.Outcome{ID: string(resultKey(rec)), Worker: w.cfg.WorkerID, Partition: rec.Partition, Offset: rec.Offset}}
	if b.err != nil {
		o.Status, o.Error, o.reason = StatusDeadLettered, errString(b.err), decodeReason(b.err)
		w.logger.Warn("unreadable record: dead-lettering", "partition", rec.Partition, "offset", rec.Offset, "reason", o.reason, "error", b.err)
		return o, b.err, false
	}
	slot := t.Slot
	o.ID, o.Schedule, o.Slot, o.Interrupted, o.Attempts = t.ID, t.Schedule, &slot, b.interrupted, b.attempts
	switch {
	case t.Gate != "":
		o.Status = StatusSkippedGate
		o.Error = t.Gate
		w.logger.Info("tick skipped by its schedule's gate", "tick_id", t.ID, "partition", rec.Partition, "reason", t.Gate)
	case b.cancelled != nil:
		o.Status = StatusCancelled
		o.Error = fmt.Sprintf("schedule %s (version %d) after the tick was emitted", b.cancelled.Reason, b.cancelled.Before)
		w.logger.Debug("tick cancelled", "tick_id", t.ID, "partition", rec.Partition, "reason", b.cancelled.Reason)
	case b.interrupted && w.cfg.OnInterrupted == OnInterruptedSkip:
		o.Status = StatusInterrupted
		o.Error = "an earlier run was interrupted; not run again (on-interrupted skip)"
		w.m.ledgerSkips.WithLabelValues("interrupted").Inc()
		w.logger.Info("interrupted tick not run again", "tick_id", t.ID, "partition", rec.Partition, "attempts", b.attempts)
	case !b.newer.IsZero() && !b.newer.After(b.now):
		o.Status = StatusSkippedOverlap
		o.Error = fmt.Sprintf("a newer tick of the schedule (slot %s) was already due", b.newer.UTC().Format(time.RFC3339Nano))
		w.logger.Debug("tick skipped: a newer one is due (overlap)", "tick_id", t.ID, "partition", rec.Partition, "newer_slot", b.newer, "policy", cmp.Or(t.Overlap, "default"))
	case t.Deadline != nil && b.now.After(*t.Deadline):
		o.Status = StatusSkippedLate
		o.Error = fmt.Sprintf("start at %s is after the deadline %s", b.now.UTC().Format(time.RFC3339Nano), t.Deadline.UTC().Format(time.RFC3339Nano))
		w.logger.Warn("tick skipped: past its deadline", "tick_id", t.ID, "partition", rec.Partition, "deadline", *t.Deadline)
	default:
		return o, nil, true
	}
	return o, nil, false
}
