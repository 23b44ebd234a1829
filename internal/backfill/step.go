package backfill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// stepTxn is what one step writes in its transaction, and what the term takes as done once it commits.
type stepTxn struct {
	now      time.Time
	recs     []*kgo.Record
	progress []Progress // set in the fold once committed
	ended    []string   // the backfills that end with the transaction
	forget   []string   // ended backfills kept long enough: their records are deleted
	emitted  int        // backfill ticks
	// deadLettered counts the invalid records the transaction dead-letters.
	deadLettered int
}

// Step moves every backfill of the term's schedules forward: it starts the ones not started, ends the ones done,
// cancelled, refused or of a deleted schedule, and emits the next slots of the others, all in one transaction
// with their progress. Leader 0 also dead-letters the invalid records, once.
func (b *Runner) Step(ctx context.Context) error {
	b.more, b.waiting = false, false
	if b.fold == nil {
		return nil
	}
	txn := &stepTxn{now: b.cfg.Now()}
	for _, bf := range b.fold.Sorted() {
		if !b.term.Owns(bf.Request.Schedule) {
			continue
		}
		if bf.Ended() {
			b.deleteExpired(txn, bf)
			continue
		}
		if err := b.advance(txn, bf); err != nil {
			return err
		}
	}
	if b.cfg.DeadLetter {
		b.deadLetterInvalid(txn)
	}
	if len(txn.recs) == 0 {
		return nil
	}
	if err := b.term.Commit(ctx, txn.recs); err != nil {
		return fmt.Errorf("committing backfill progress: %w", err)
	}
	b.committed(txn)
	return nil
}

// deleteExpired adds to txn the deletion of ended backfill bf's records once it has been kept keepEnded.
func (b *Runner) deleteExpired(txn *stepTxn, bf *Backfill) {
	if txn.now.Sub(bf.Progress.At) <= keepEnded {
		return
	}
	names, id := b.cfg.Names, bf.Request.ID
	txn.forget = append(txn.forget, id)
	for _, k := range [][2]string{{names.Backfills, id}, {names.Backfills, CancelKey(id)}, {names.BackfillProgress, id}} {
		txn.recs = append(txn.recs, &kgo.Record{Topic: k[0], Partition: 0, Key: []byte(k[1])})
	}
}

// advance adds to txn backfill bf's next slots and its progress, or its end, beginning its run if it has none.
func (b *Runner) advance(txn *stepTxn, bf *Backfill) error {
	req, now := &bf.Request, txn.now
	e, known := b.term.Schedule(req.Schedule)
	run := b.runs[req.ID]
	if run == nil {
		if !known && now.Sub(req.CreatedAt) < deletedAfter {
			b.waiting = true // its schedule may not be read yet
			return nil
		}
		run = b.beginRun(bf, e, known, now)
	}
	run.b = bf
	end := endReason(bf, run, known, now)
	before, outcomes := run.next, len(run.left)
	if end == "" {
		pool, ready := b.readyPool(run)
		if !ready {
			return nil
		}
		if err := b.emitSlots(txn, run, e, pool); err != nil {
			return err
		}
		if run.next == len(req.Slots) && len(run.left) == 0 {
			end = EndDone
		}
	}
	if end == "" && run.next == before && bf.Progress != nil && len(bf.Progress.Running) == outcomes && outcomes == len(run.left) {
		return nil // nothing changed since the progress committed last
	}
	b.writeProgress(txn, run, end)
	return nil
}

// endReason says why backfill bf ends before its next slots ("": it does not). known says its schedule exists.
func endReason(bf *Backfill, run *runState, known bool, now time.Time) string {
	req := &bf.Request
	switch {
	case bf.Rewritten || bf.RequestHash != run.hash:
		return EndRefused // written again under its ID with other content: not the request it ran
	case req.Slots[len(req.Slots)-1].After(now.Add(deletedAfter)):
		return EndRefused // a slot still to come (a request that lies about its creation): not a backfill
	case !known:
		return EndDeleted
	case bf.Cancel != nil:
		return EndCancelled
	}
	return ""
}

// readyPool returns run's pool if it is ready, starting the follower of run's outcomes if none runs yet; when it
// is not, the backfill waits (logged once) and the term steps again within retryAfter.
func (b *Runner) readyPool(run *runState) (Pool, bool) {
	pool, ready := b.term.Pool(run.pool)
	if !ready {
		if !run.waitPool {
			b.cfg.Logger.Warn("backfill waits for its pool", "backfill", run.b.Request.ID, "pool", run.pool)
			run.waitPool = true
		}
		b.waiting = true
		return pool, false
	}
	run.waitPool = false
	if run.stop == nil {
		b.startOutcomeFollower(run, pool)
	}
	return pool, true
}

// emitSlots adds to txn the ticks of run's next slots, of schedule e, on pool's work topic: as many slots as keep
// at most MaxRunning without an outcome, and no more once txn holds maxStepTicks records (then b.more is set).
func (b *Runner) emitSlots(txn *stepTxn, run *runState, e store.Entry, pool Pool) error {
	req := &run.b.Request
	src := tick.Source{Schedule: req.Schedule, Shards: run.shards, Payload: e.Schedule.Payload(), Version: e.Version,
		LeaderEpoch: b.cfg.Epoch, Metrics: e.Schedule.Metrics(), Timeout: e.Schedule.Timeout(), MaxAttempts: e.Schedule.MaxAttempts(),
		Limit: run.limit, Priority: e.Schedule.Priority()}
	for len(run.left) < req.MaxRunning && run.next < len(req.Slots) {
		if len(txn.recs) >= maxStepTicks {
			b.more = true
			break
		}
		for _, tk := range src.Backfill(req.Slots[run.next], txn.now, req.ID) {
			v, err := tick.Encode(tk)
			if err != nil {
				return err
			}
			txn.recs = append(txn.recs, &kgo.Record{Topic: pool.Work, Partition: tk.Partition(pool.Partitions), Key: []byte(tk.ID), Value: v})
			run.pending[tk.ID] = run.next
			run.left[run.next]++
			txn.emitted++
		}
		run.emitted[run.next] = txn.now
		run.next++
	}
	return nil
}

// writeProgress adds to txn run's progress record, ended with end unless it is "".
func (b *Runner) writeProgress(txn *stepTxn, run *runState, end string) {
	bf := run.b
	req := &bf.Request
	p := Progress{ID: req.ID, Request: bf.RequestHash, Next: run.next, Running: run.running(), Shards: run.shards, Pool: run.pool,
		Since: run.oldest(), Ended: end, At: txn.now}
	txn.progress = append(txn.progress, p)
	txn.recs = append(txn.recs, &kgo.Record{Topic: b.cfg.Names.BackfillProgress, Partition: 0, Key: []byte(req.ID), Value: EncodeProgress(p)})
	if end != "" {
		txn.ended = append(txn.ended, req.ID)
		b.cfg.Logger.Info("backfill ended", "backfill", req.ID, "schedule", req.Schedule, "ended", end, "slots", len(req.Slots), "emitted", run.next)
	}
}

// deadLetterInvalid adds to txn the dead-lettering of every invalid record (leader 0 only).
func (b *Runner) deadLetterInvalid(txn *stepTxn) {
	names := b.cfg.Names
	for key, r := range b.bad {
		// Dead-lettered once for the fleet: the same transaction restates the valid record the key held (the
		// same bytes: the same request), or deletes the key, so no later read finds the invalid one newest.
		txn.recs = append(txn.recs, store.DeadLetter(r, names.DLQ, errors.New("invalid backfill record")),
			&kgo.Record{Topic: names.Backfills, Partition: 0, Key: []byte(key), Value: b.fold.Valid(key)})
		txn.deadLettered++
	}
}

// committed takes txn as done once its transaction committed: the fold holds its progress, forgets the deleted
// backfills, and the ended ones stop.
func (b *Runner) committed(txn *stepTxn) {
	for _, p := range txn.progress {
		b.fold.SetProgress(p)
	}
	for _, id := range txn.forget {
		b.fold.Forget(id)
	}
	if txn.deadLettered > 0 {
		b.cfg.Logger.Warn("invalid backfill records dead-lettered", "records", txn.deadLettered)
		clear(b.bad)
	}
	b.cfg.Metrics.ticks.Add(float64(txn.emitted))
	for _, id := range txn.ended {
		b.endRun(id)
	}
}
