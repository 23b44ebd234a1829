package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// lane runs the records of one assigned partition: the ticks of one schedule and shard one at a time and in
// order, so they never overlap, and those of different schedules side by side (pick, in queue.go); each
// scheduled tick starts at its instant. Before its first record it takes the partition over in the execution
// ledger (takeover), and it consults the ledger for every record: a tick with an outcome is not run again, a tick
// whose run was cut off is an interrupted tick.
//
// A run belongs to the worker that started it, not to the partition: when the partition is revoked (another
// worker joins or leaves, or this one stops gracefully) the lane stops starting records at once, and the runs
// it started go on under their leases, renewed in the ledger, until they end with an outcome; the partition's
// next owner waits for those ticks only. The same holds when the partition is lost (the group expired this
// worker, or the broker went away): the lane stops, nothing is committed, the runs go on. A run is cut only when
// its lease cannot be renewed (a frozen or partitioned worker, a broker away for longer than the lease, or
// another worker took the tick after the lease ran out), or when the shutdown's grace period ends.
type lane struct {
	w         *Worker
	partition int32
	wake      chan struct{}   // a batch was enqueued, a run ended, or (see waitLedger) the ledger changed
	ctx       context.Context // starting records; ends on revocation, loss, fencing or drain
	cancel    context.CancelCauseFunc
	runCtx    context.Context // handlers' parent; ends at the end of the shutdown's grace period
	done      chan struct{}   // closed when run returns: nothing more starts
	adjusted  chan struct{}   // closed once the group's start offset of the partition is settled (pinStart)
	pending   pending         // outcome records in flight
	starts    pending         // this lane's attempts in the Run's starting set
	runs      sync.WaitGroup  // records being handled
	ledger    *ledger.Owner   // the lane's hold on its partition's ledger (reading from takeover on)
	reclaimMu sync.Mutex      // serialises foreignClaim

	// Guarded by w.mu.
	queue []*item // the records fetched and not yet committable, in offset order
	open  int     // every record of queue[:open] is handled
	heads heads   // the records pick looks at
	seq   int64   // the sequence number of the next record queued
	jumps int     // unhandled records of the queue that need not wait (triggers)
	keys  keyTable
	// waitsOnLedger: pick left a key waiting for another worker's run of its tick
	waitsOnLedger bool
	cancels       cancel.Set             // the cancellations read
	paused        bool                   // fetching paused: the queue is full
	active        bool                   // false once revoked or lost: finished offsets are ignored from then on
	doneOffset    kgo.EpochOffset        // the offset after the last record finished with its outcome written
	dirty         bool                   // doneOffset not committed yet
	limits        map[string]*limitState // the limits of the ticks the lane holds (limiter.go)
}

func (w *Worker) newLane(p int32) *lane {
	runCtx := w.hardCtx
	ctx, cancel := context.WithCancelCause(runCtx)
	l := &lane{
		w:         w,
		partition: p,
		wake:      make(chan struct{}, 1),
		keys:      keyTable{ids: map[string]int32{}},
		ctx:       ctx,
		cancel:    cancel,
		runCtx:    runCtx,
		done:      make(chan struct{}),
		adjusted:  make(chan struct{}),
		active:    true,
	}
	l.ledger = w.ledger.NewOwner(p, l.wakeUp)
	return l
}

func (l *lane) run() {
	defer close(l.done)
	defer l.forgetLimits() // another worker keeps them from now on
	w := l.w
	// A partition new to the group gets its first commit (with the ledger position) from pinStart; wait for it,
	// so that takeover reads the ledger from there and not from the start of the retained log.
	select {
	case <-l.adjusted:
	case <-l.ctx.Done():
		return
	case <-time.After(30 * time.Second):
	}
	for try := 1; ; try++ {
		err := l.takeover(l.ctx)
		if err == nil {
			break
		}
		if l.ctx.Err() != nil {
			return
		}
		if errors.Is(err, ledger.ErrFenced) {
			if l.foreignClaim(l.ctx) {
				break // the group still gives this worker the partition: foreignClaim claimed it again, above it
			}
			w.logger.Warn("another worker claimed the partition after this one: leaving it to that worker", "partition", l.partition, "error", err)
			l.cancel(ledger.ErrFenced)
			return
		}
		if kafka.IsACLError(err) {
			w.logger.Error("taking the partition over in the ledger", "partition", l.partition, "error", err)
			w.fatal(fmt.Errorf("partition %d: %w", l.partition, err))
			return
		}
		w.logger.Warn("taking the partition over in the ledger; retrying", "partition", l.partition, "try", try, "error", err)
		if !sleep(l.ctx, w.backoff(min(try, 5))) {
			return
		}
	}
	l.dispatch()
}

// dispatch hands each record pick allows to the worker's runners (Config.Concurrency of them, shared by every
// lane), until the lane's context ends or the worker drains. The records it handed over go on (runs).
func (l *lane) dispatch() {
	w := l.w
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var picked []*item
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-w.draining:
			return
		default:
		}
		if l.ledger.Fenced() && !l.foreignClaim(l.ctx) {
			// A claim of another worker followed this lane's, and the group does not (or no longer) give the
			// partition to this worker: a real new owner. Start nothing more.
			w.logger.Warn("partition claimed by another worker: this worker starts nothing more on it", "partition", l.partition)
			l.cancel(ledger.ErrFenced)
			return
		}
		changed := l.ledger.Changed() // taken before pick, so that no change between the two is missed
		var wait time.Duration
		if picked, wait = l.pick(w.cfg.Now(), picked[:0], maxPick); len(picked) == 0 {
			if wait <= 0 {
				wait = time.Hour // nothing due: wait for a batch or the end of a run
			}
			timer.Reset(wait)
			if !l.waitsLedger() {
				changed = nil // no key waits for a run elsewhere: ledger changes do not matter
			}
			select {
			case <-l.ctx.Done():
				return
			case <-w.draining:
				return
			case <-l.wake:
			case <-changed:
			case <-timer.C:
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			continue
		}
		if !l.handOff(picked) {
			return
		}
	}
}

// handOff hands the records pick marked running to the runners, one at a time as runners come free. When the
// lane stops starting records, or the worker drains, before one is handed over, that one and the rest are given
// back to pick (nothing started them) and it reports false.
func (l *lane) handOff(picked []*item) bool {
	w := l.w
	defer clear(picked)
	for i, it := range picked {
		if l.starting() {
			l.runs.Add(1)
			select {
			case w.runq <- run{l, it}:
				continue
			case <-l.ctx.Done():
			case <-w.draining:
			}
			l.runs.Done()
		}
		l.unpick(picked[i:])
		return false
	}
	return true
}

// starting reports whether the lane still starts records: its context has not ended and the worker does not
// drain.
func (l *lane) starting() bool {
	select {
	case <-l.ctx.Done():
		return false
	case <-l.w.draining:
		return false
	default:
		return true
	}
}

// unpick gives back to pick the records it marked running that no runner took.
func (l *lane) unpick(items []*item) {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	for _, it := range items {
		l.releaseLimitLocked(it, false) // no runner took it: nothing started
		l.giveBackLocked(it)
	}
}

// maxPick bounds the records one pick marks running before they are handed to runners: they wait for free
// runners in the dispatcher (their run's length, which decides whether it outlasted its period, is their
// handler's: item.ran).
const maxPick = 16

// run is a record handed to the worker's runners.
type run struct {
	l  *lane
	it *item
}

// runners are the Config.Concurrency goroutines that take records to their outcomes, for every lane: a record
// waits for a free runner, so Concurrency bounds the handlers running at once in the worker. They return once
// runq is closed.
func (w *Worker) runners(wg *sync.WaitGroup) {
	for range w.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range w.runq {
				r.l.runItem(r.it)
			}
		}()
	}
}

// runItem takes it to its outcome, then frees its key and wakes the dispatcher.
func (l *lane) runItem(it *item) {
	w := l.w
	defer l.runs.Done()
	o, ok := l.handle(it)
	if !ok {
		// No outcome: the ledger tells the next owner whether it had started. When the lane still starts
		// records (the run was cut by its lease, or another worker took the tick over), the key is free again:
		// pick waits for the other run's outcome, release or lease before the tick starts here again.
		w.mu.Lock()
		l.releaseLimitLocked(it, true) // it may have started: its start keeps counting for the rate
		if l.ctx.Err() == nil {
			l.giveBackLocked(it)
		}
		w.mu.Unlock()
		l.wakeUp()
		return
	}
	if o != nil {
		it.ran = o.ran // read by handledLocked, on this goroutine
	}
	w.mu.Lock()
	l.handledLocked(it)
	w.mu.Unlock()
	l.wakeUp()
	if o == nil {
		l.finish(it)
	} else {
		l.publish(it, *o)
	}
}

// handling returns how many records the lane has handed to runners and not finished (the keys running one: a
// record the dispatcher is handing over counts too).
func (l *lane) handling() int {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.keys.busy
}

// closeLedger stops reading the lane's ledger once its runs (which renew their leases through it) are over.
func (l *lane) closeLedger() {
	l.runs.Wait()
	l.waitPending(10 * time.Second)
	l.ledger.Close()
	l.w.mu.Lock()
	delete(l.w.retiring, l)
	l.w.mu.Unlock()
}

// wakeUp makes the dispatcher look at the queue again.
func (l *lane) wakeUp() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// handle takes one record to its outcome. It returns a nil outcome for a tick the ledger says is finished
// already, and false when the record was not started (the lane stopped starting records first) or its run was
// cut (the record then has no outcome and must not be committed).
func (l *lane) handle(it *item) (*result, bool) {
	w := l.w
	rec := it.rec
	if l.ctx.Err() != nil {
		return nil, false // handed over just before the lane stopped starting records
	}
	if l.ledger.Fenced() && !l.foreignClaim(l.ctx) {
		l.cancel(ledger.ErrFenced) // a real new owner: decide nothing from a fold it writes now
		return nil, false
	}
	prior, ok := l.prior(it)
	if !ok {
		return nil, false
	}
	if prior != nil && prior.Finished() {
		w.m.ledgerSkips.WithLabelValues("finished").Inc()
		w.count(summaryFinishedBefore, 1)
		w.logger.Debug("tick finished already: not run again", "tick_id", prior.ID, "partition", rec.Partition, "offset", rec.Offset, "status", prior.Outcome.Status)
		return nil, true
	}
	newer, cancelled := l.hints(it, w.cfg.Now())
	b := before{rec: rec, t: it.t, err: it.err, now: w.cfg.Now(), cancelled: cancelled, newer: newer}
	if prior != nil {
		b.attempts, b.interrupted = prior.Attempts, prior.Interrupted()
	}
	if it.err == nil {
		b.watch = w.watchDeadlines(rec, it.t)
	}
	o, dl := w.process(l.runCtx, b, l)
	b.watch.stop(w.cfg.Now(), !o.ran.from.IsZero() && !o.cut)
	if o.cut {
		return nil, false
	}
	if o.finished {
		w.m.ledgerSkips.WithLabelValues("finished").Inc()
		w.count(summaryFinishedBefore, 1)
		return nil, true
	}
	if dl != nil {
		if !w.deadLetter(l.runCtx, rec, o, dl) {
			return nil, false
		}
	}
	o.FinishedAt = w.cfg.Now().UTC()
	if o.Fence == 0 {
		o.Fence = l.ledger.Fence()
	}
	return &o, true
}

// prior returns what the ledger says about rec from before this lane's claim. A tick that a former owner
// started and did not finish is waited for until its run is surely over (ledger.Owner.InterruptedAt) or until
// the former owner's outcome or release arrives, whichever is first. When this Run wrote that start and its
// handler has not started (the Run's starting set), the wait lasts until the handler starts or the start is
// taken back (its release, marked unstarted, then arrives): only this process knows that nothing ran.
func (l *lane) prior(it *item) (*ledger.TickState, bool) {
	rec := it.rec
	id := it.t.ID
	if it.err != nil {
		id = string(resultKey(rec))
	}
	logged := false
	for {
		s, changed := l.ledger.State(rec.Offset, id)
		if s == nil || s.Finished() || !s.Running() {
			return s, true
		}
		if s.StartedBy == l.w.cfg.WorkerID {
			if busy, left := l.w.starting.has(id); busy {
				select {
				case <-changed:
				case <-left:
				case <-l.ctx.Done():
					return nil, false
				}
				continue
			}
		}
		wait := time.Until(l.ledger.InterruptedAt(s))
		if wait <= 0 {
			return s, true
		}
		if !logged {
			logged = true
			l.w.logger.Info("tick was running on a former owner: waiting until that run is surely over", "tick_id", s.ID,
				"partition", rec.Partition, "offset", rec.Offset, "former_owner", s.StartedBy, "wait", wait.Round(time.Millisecond))
		}
		timer := time.NewTimer(wait)
		select {
		case <-changed:
		case <-timer.C:
		case <-l.ctx.Done(): // nothing started yet: leave the tick to the next owner
			timer.Stop()
			return nil, false
		}
		timer.Stop()
	}
}

// begin records in the ledger that attempt a of t is about to start, under the lane's current token (set in
// a.Fence), and returns the context the handler runs under (with its lease, renewed while it runs) and the
// function to call once the handler returned (with errNeverStarted when it never started). It retries until the
// start is confirmed; it starts nothing once the lane stopped starting records (errNotStarted), and when another
// worker has claimed the partition, and the group no longer gives it to this worker, it stops the lane's
// starts. When the start took the tick from another worker's unfinished run, the handler waits until that run's
// lease has surely run out. From its first start written until the handler starts (a.handlerStarts), the
// attempt is in the Run's starting set; a start written and then given up is taken back (takeBack).
func (l *lane) begin(ctx context.Context, rec *kgo.Record, t tick.Tick, a *Attempt) (context.Context, func(error) error, error) {
	w := l.w
	slot := t.Slot
	e := ledger.Entry{Kind: ledger.KindStarted, ID: t.ID, Schedule: t.Schedule, Slot: &slot, Partition: rec.Partition,
		Offset: rec.Offset, Worker: w.cfg.WorkerID, Attempt: a.N, Interrupted: a.Interrupted, LeaseMS: w.cfg.Lease.Milliseconds(), Limit: t.Limit}
	if a.again && t.Limit != "" && !l.waitRate(ctx, rec.Offset, &t) {
		return nil, nil, errNotStarted // a retry waits for its limit's rate; the lane or the worker stops first
	}
	l.ledger.RaiseLimit(rec.Offset + 1)
	w.starting.add(t.ID)
	l.starts.Add(1)
	until, wrote, err := l.confirmStart(ctx, rec, &e)
	if err != nil {
		if wrote && !errors.Is(err, errFinishedMeanwhile) {
			l.takeBack(e) // a start was written: it may land, though it was never confirmed
		}
		w.starting.remove(t.ID)
		l.starts.Done()
		return nil, nil, err
	}
	a.Fence = e.Fence
	l.limitReleased(rec.Offset, &t)
	r := l.startRun(ctx, e, until)
	a.handlerStarts = r.leaveStarting
	if seized := l.ledger.SeizedUntil(e); !seized.IsZero() {
		if wait := time.Until(seized); wait > 0 {
			w.logger.Info("took the tick from a former owner's run: starting once its lease has surely run out", "tick_id", t.ID, "wait", wait.Round(time.Millisecond))
			if !sleep(r.ctx, wait) {
				_ = r.end(errNeverStarted)
				return nil, nil, cmp.Or(ctx.Err(), errNotStarted)
			}
		}
	}
	a.Lease = r.lease.Deadline
	return r.ctx, r.end, nil
}

// confirmStart writes e, the started entry of an attempt, and reads it back (ledger.Owner.Start), trying again
// until it is confirmed, and returns the end of the run's lease, and whether a start was written (e is then the
// last one). It gives up with errNotStarted once the lane stops starting records, with
// errFinishedMeanwhile when a former owner's outcome arrived first, and stops the lane's starts when another
// worker really claimed the partition.
func (l *lane) confirmStart(ctx context.Context, rec *kgo.Record, e *ledger.Entry) (until time.Time, wrote bool, err error) {
	w := l.w
	for try := 1; ; try++ {
		if l.ctx.Err() != nil {
			return time.Time{}, wrote, errNotStarted
		}
		e.Fence, e.At = l.ledger.Fence(), w.cfg.Now().UTC()
		wrote = true
		if until, err = l.ledger.Start(l.ctx, *e); err == nil && time.Until(until) > l.renewEvery() {
			return until, wrote, nil
		}
		if err == nil {
			// Confirmed too late to run under its lease (written before an outage of the broker, acknowledged
			// after it): taken back, and written again.
			w.logger.Info("the start of a tick was confirmed after its lease: recording it again", "tick_id", e.ID, "partition", rec.Partition, "try", try)
			l.takeBack(*e)
			continue
		}
		if errors.Is(err, ledger.ErrFenced) {
			if l.foreignClaim(l.ctx) {
				continue
			}
			w.logger.Warn("partition claimed by another worker: this worker starts nothing more on it", "partition", l.partition, "tick_id", e.ID)
			l.cancel(ledger.ErrFenced)
			return time.Time{}, wrote, errNotStarted
		}
		if l.ctx.Err() != nil || ctx.Err() != nil {
			return time.Time{}, wrote, errNotStarted
		}
		if s, _ := l.ledger.State(rec.Offset, e.ID); s != nil && s.Finished() && !l.ledger.Fenced() {
			// A former owner's run ended with its outcome after this lane decided to run the tick again: the
			// start was refused (after the outcome), and the tick is done. (Under a claim of another worker, the
			// next try finds out whether that claim, and an outcome written under it, stand: foreignClaim.)
			return time.Time{}, wrote, errFinishedMeanwhile
		}
		w.logger.Warn("recording the start of a tick; retrying", "tick_id", e.ID, "partition", rec.Partition, "try", try, "error", err)
		if !sleep(l.ctx, w.backoff(min(try, 5))) {
			return time.Time{}, wrote, errNotStarted
		}
	}
}

// takeBack writes the release, marked unstarted, of e, a start this worker wrote for an attempt whose handler
// never started: the fold forgets the attempt (ledger.Entry.Unstarted), and the tick's next owner, this worker
// or another, goes on with the same attempt rather than an interrupted re-run. The release is queued behind the
// start, whose fate is settled by now (acknowledged, failed, or never sent), so it lands after it (the ledger's
// outbox keeps a partition's entries in order). When it does not land (the worker dies first), the next owner
// finds the start and runs the tick again as an interrupted one: the safe side.
func (l *lane) takeBack(e ledger.Entry) {
	w := l.w
	rel := e
	rel.Kind, rel.Unstarted, rel.At = ledger.KindReleased, true, w.cfg.Now().UTC()
	w.ledger.Append(l.partition, []byte(e.ID), ledger.Encode(rel), rel, false, func(_ int64, err error) {
		if err != nil {
			w.logger.Warn("taking back the start of a tick that did not run; its next owner runs it again, marked interrupted",
				"tick_id", e.ID, "partition", l.partition, "attempt", e.Attempt, "error", err)
		}
	})
}

// retry records in the ledger that attempt a of t failed with cause and that another follows after delay,
// then waits out delay. It reports false when ctx ended or the lane stopped starting records first (the
// partition was revoked, or the worker drains): the caller records nothing, and the partition's next owner,
// told by the retry entry that nothing runs the tick and nothing was cut off, goes on at once with the next
// attempt. When the entry could not be written, the next owner finds the attempt started and not finished, and
// runs the tick again as an interrupted one once its lease has surely ended.
func (l *lane) retry(ctx context.Context, rec *kgo.Record, t tick.Tick, a *Attempt, cause error, delay time.Duration) bool {
	w := l.w
	// An attempt cut off by its lease has its release in the ledger already (leasedRun.end): the tick counts
	// as interrupted, as it must.
	if !errors.Is(cause, errLeaseExpired) {
		slot := t.Slot
		e := ledger.Entry{Kind: ledger.KindReleased, Retry: true, ID: t.ID, Schedule: t.Schedule, Slot: &slot, Partition: rec.Partition,
			Offset: rec.Offset, Fence: a.Fence, Worker: w.cfg.WorkerID, Attempt: a.N, Interrupted: a.Interrupted,
			Error: errString(cause), At: w.cfg.Now().UTC()}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := w.ledger.Write(wctx, l.partition, []byte(t.ID), e)
		cancel()
		if err != nil {
			w.logger.Warn("recording a retry in the ledger", "tick_id", t.ID, "partition", rec.Partition, "attempt", a.N, "error", err)
		}
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
	case <-l.ctx.Done():
	case <-w.draining:
	}
	return false
}

// commitMeta is the metadata of a commit of next: where the next owner must read the ledger from, and this
// lane's fencing token. Called with w.mu held.
func (l *lane) commitMeta(next int64) string {
	return l.ledger.CommitMeta(next)
}

// publish writes the outcome of it; once it is acknowledged, its offset may be committed.
func (l *lane) publish(it *item, o result) {
	w := l.w
	l.ledger.RaiseLimit(it.rec.Offset + 1)
	l.pending.Add(1)
	l.writeOutcome(w.ledger, it, o.ID, w.resultRecord(it.rec, o.Outcome, w.resultParts), ledger.OutcomeEntry(o.Outcome), 1, false)
}

// writeOutcome writes r, the outcome record of it (entry e), through lg (the ledger of the Run that wrote it)
// for the try-th time, and finishes it once the record is acknowledged. A write that fails is tried again after a
// backoff for as long as the lane's runs may go on: the tick's offset waits for it (committed without its
// outcome, a tick that ran would be missing for good). When they may not (the partition was lost, the grace
// period ended, the Run returned) or the worker may not write the results topic (an ACL: fatal), the offset is
// left uncommitted: the next owner finds the tick started and not finished, and runs it again as an
// interrupted tick. A refusal that retrying cannot help (the broker refuses the record for good) is given up
// as deadLetter gives up: holding the offset would block the partition; the tick is then committed without its
// outcome (logged, counted in tickgroup_worker_outcome_errors_total, and missing in ticker audit).
func (l *lane) writeOutcome(lg *ledger.Log, it *item, id string, r *kgo.Record, e ledger.Entry, try int, alone bool) {
	w := l.w
	if try > 1 && l.runCtx.Err() != nil { // the Run has ended (or cut its runs) since: nothing of it writes any more
		l.pending.Done()
		w.unrecorded.Add(1)
		w.logger.Warn("writing outcome given up as the worker stops; the tick's offset is not committed (its next owner runs it again, interrupted)",
			"tick_id", id, "partition", it.rec.Partition, "offset", it.rec.Offset, "try", try)
		return
	}
	lg.Append(r.Partition, r.Key, r.Value, e, alone, func(_ int64, err error) {
		if err == nil {
			l.pending.Done()
			l.finish(it)
			return
		}
		w.m.outcomeErrs.Inc()
		attrs := []any{"tick_id", id, "partition", it.rec.Partition, "offset", it.rec.Offset, "try", try, "error", err}
		switch {
		case kafka.IsACLError(err):
			l.pending.Done()
			w.logger.Error("writing outcome: not allowed; the tick's offset is not committed", attrs...)
			w.fatal(err)
			return
		case l.runCtx.Err() != nil || errors.Is(err, kgo.ErrClientClosed):
			l.pending.Done()
			w.unrecorded.Add(1)
			w.logger.Warn("writing outcome failed as the worker stops; the tick's offset is not committed (its next owner runs it again, interrupted)", attrs...)
			return
		case refusedForGood(err) && errors.Is(err, ledger.ErrInBatch):
			// The batch record it was in was refused as a whole (too large for the topic, perhaps): the outcome
			// alone may pass.
			w.logger.Warn("writing outcome: its batch record was refused; writing it alone", attrs...)
			go l.writeOutcome(lg, it, id, r, e, try+1, true) // not from the producer's callback
			return
		case refusedForGood(err):
			l.pending.Done()
			w.logger.Error("writing outcome failed for good (the broker refuses the record); going on without it", attrs...)
			l.finish(it)
			return
		}
		delay := w.backoff(min(try, 5))
		w.logger.Error("writing outcome; retrying", append(attrs, "retry_in", delay)...)
		time.AfterFunc(delay, func() { l.writeOutcome(lg, it, id, r, e, try+1, alone) })
	})
}

// waitPending waits up to d for the lane's outcome records to be acknowledged.
func (l *lane) waitPending(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-l.pending.idle():
	case <-timer.C:
		l.w.logger.Warn("outcome records still unacknowledged", "partition", l.partition, "waited", d)
	}
}

// pending counts records in flight, like a sync.WaitGroup whose wait can give up: idle returns a channel
// closed once none is.
type pending struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed while n is 0; nil until the first Add
}

func (p *pending) Add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		p.zero = make(chan struct{})
	}
	p.n += n
}

func (p *pending) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n--; p.n == 0 {
		close(p.zero)
	}
}

func (p *pending) idle() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return closedChan
	}
	return p.zero
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// gate is where an attempt is recorded before it starts, and a retry before its backoff (the lane's ledger);
// see lane.begin and lane.retry.
type gate interface {
	begin(ctx context.Context, rec *kgo.Record, t tick.Tick, a *Attempt) (context.Context, func(error) error, error)
	retry(ctx context.Context, rec *kgo.Record, t tick.Tick, a *Attempt, cause error, delay time.Duration) bool
}

// process runs the handler for b.rec, decoded as b.t (or not readable: b.err), from b.now, given the attempts
// earlier owners started (b.attempts, b.interrupted), a newer tick its overlap policy skips it for (b.newer: the
// tick does not start when that one is already due) and a cancellation that applies to it (b.cancelled: it does
// not run); see before. Attempts are recorded through g.
// When the record must go to the dead-letter topic it returns the cause as well. When ctx ends first the
// outcome is meaningless and the caller records nothing.
func (w *Worker) process(ctx context.Context, b before, g gate) (result, error) {
	rec, t, start := b.rec, b.t, b.now
	base, interrupted := b.attempts, b.interrupted
	o, dl, run := w.decide(b)
	if !run {
		if o.Status != StatusDeadLettered { // a dead letter is counted once it is written (deadLetter)
			w.count(o.Status, 1)
		}
		return o, dl
	}
	if interrupted {
		w.m.ledgerSkips.WithLabelValues("rerun").Inc()
		w.logger.Info("running an interrupted tick again", "tick_id", t.ID, "partition", rec.Partition, "attempt", base+1)
	}
	for attempt := 1; ; attempt++ {
		a := Attempt{N: base + attempt, Interrupted: interrupted, Worker: w.cfg.WorkerID, again: attempt > 1, watch: b.watch}
		if n := w.cfg.RecordOutput; n > 0 {
			o.Output = ""
			a.Output = func(s string) { o.Output = tailOf(s, n) }
		}
		o.Attempts = a.N
		err := w.attempt(ctx, rec, t, &a, g)
		o.Fence = a.Fence
		o.ran.add(a.ran)
		if err == nil { // a success is recorded even when ctx ended meanwhile: it must not run again
			o.Status = StatusOK
			o.Error = ""
			o.DurationMS = float64(w.cfg.Now().Sub(start).Microseconds()) / 1000
			w.count(resultOK, 1)
			return o, nil
		}
		if errors.Is(err, errFinishedMeanwhile) {
			o.finished = true
			return o, nil
		}
		if ctx.Err() != nil || errors.Is(err, errNotStarted) || errors.Is(err, ledger.ErrSeized) {
			o.cut = true // the caller records nothing: the next owner decides from the ledger
			return o, nil
		}
		o.Error = errString(err)
		o.DurationMS = float64(w.cfg.Now().Sub(start).Microseconds()) / 1000
		if errors.Is(err, errLeaseExpired) {
			// Cut off by its lease on this live worker (it could not prove the run alive in the ledger in
			// time): an interruption, as after a crash or a freeze. The run may have had effects: the next
			// attempt is marked interrupted, and under --on-interrupted skip none follows.
			interrupted, o.Interrupted = true, true
			if w.cfg.OnInterrupted == OnInterruptedSkip {
				o.Status = StatusInterrupted
				o.Error = "the run was cut off by its lease; not run again (on-interrupted skip): " + o.Error
				w.count(StatusInterrupted, 1)
				w.logger.Warn("tick's run cut off by its lease: not run again (on-interrupted skip)", "tick_id", t.ID, "partition", rec.Partition, "attempt", a.N)
				return o, nil
			}
		}
		if IsPermanent(err) {
			o.Status, o.reason = StatusFailed, reasonPermanent
			w.count(resultFailed, 1)
			w.logger.Warn("tick failed permanently: dead-lettering", "tick_id", t.ID, "partition", rec.Partition, "attempt", a.N, "error", err)
			return o, err
		}
		if attempt >= w.maxAttempts(&t) {
			o.Status, o.reason = StatusDeadLettered, reasonMaxAttempts
			w.logger.Warn("tick failed on every attempt: dead-lettering", "tick_id", t.ID, "partition", rec.Partition, "attempt", a.N, "error", err)
			return o, err
		}
		w.count(resultRetried, 1)
		delay := w.backoff(attempt)
		w.logger.Warn("tick failed: retrying", "tick_id", t.ID, "partition", rec.Partition, "attempt", a.N, "retry_in", delay, "error", err)
		if !g.retry(ctx, rec, t, &a, err, delay) {
			o.cut = true // the lane stopped starting records: the next owner goes on with the next attempt
			return o, nil
		}
	}
}

// attempt records the attempt's start through g, then runs the handler once under the attempt timeout.
func (w *Worker) attempt(ctx context.Context, rec *kgo.Record, t tick.Tick, a *Attempt, g gate) error {
	hctx, end, err := g.begin(ctx, rec, t, a)
	if err != nil {
		return err // ctx has ended, or the lane starts nothing more: nothing ran
	}
	if a.N == 1 {
		// A held tick's start was recorded up to PreStart before its instant: the handler starts on it.
		if wait := t.StartAt().Sub(w.cfg.Now()); wait > 0 && !sleep(hctx, wait) {
			_ = end(errNeverStarted) // its cause is not an attempt's
			return hctx.Err()
		}
		// Instant -> start of the first attempt, measured once the start is recorded: the ledger's cost is in it.
		delay := w.cfg.Now().Sub(t.StartAt()).Seconds()
		w.m.startDelay.Observe(delay)
		if t.Metrics && !t.Trigger {
			w.m.scheduleDelay.WithLabelValues(t.Schedule).Observe(delay)
		}
	}
	if !a.again {
		a.watch.starts(w.cfg.Now()) // this delivery's first attempt: the run starts (a re-run's too)
	}
	actx, cancel := hctx, context.CancelFunc(func() {})
	timeout := w.timeout(&t)
	if timeout > 0 {
		actx, cancel = context.WithTimeout(hctx, timeout)
	}
	defer cancel()
	if a.handlerStarts != nil {
		a.handlerStarts()
	}
	w.m.inflight.Inc()
	begin, from := time.Now(), w.cfg.Now()
	actx, sp := w.startSpan(actx, rec, &t, a)
	err = w.handle(actx, t, *a)
	w.m.duration.Observe(time.Since(begin).Seconds())
	w.m.inflight.Dec()
	a.ran = span{from, w.cfg.Now()}
	cutBy := end(err) // what cut the run (nil: nothing), as end decided it
	endSpan(sp, err, cutBy, err != nil && errors.Is(actx.Err(), context.DeadlineExceeded))
	if err != nil && cutBy == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out after %s: %w", timeout, err)
	}
	if err != nil && cutBy != nil && ctx.Err() == nil {
		// Cut off by its lease (an interruption, retried like a failure) or seized by another worker (the
		// caller records nothing).
		return fmt.Errorf("%w: %w", cutBy, err)
	}
	return err
}

// timeout bounds one attempt of t: its schedule's timeout, else the worker's (0: none). A value out of the
// schedule's range (a tick not written by a leader) is ignored.
func (w *Worker) timeout(t *tick.Tick) time.Duration {
	if d := time.Duration(t.TimeoutMS) * time.Millisecond; d > 0 && d <= schedule.MaxTimeout {
		return d
	}
	return w.cfg.Timeout
}

// maxAttempts is how many attempts of t one delivery makes: its schedule's, else the worker's.
func (w *Worker) maxAttempts(t *tick.Tick) int {
	if t.MaxAttempts >= 1 && t.MaxAttempts <= schedule.MaxMaxAttempts {
		return t.MaxAttempts
	}
	return w.cfg.MaxAttempts
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
func (w *Worker) deadLetter(ctx context.Context, rec *kgo.Record, o result, cause error) bool {
	dl := w.deadLetterRecord(rec, o.reason, cause, o.Attempts, w.dlqParts)
	for try := 1; ; try++ {
		err := w.prod.ProduceSync(ctx, dl).FirstErr()
		if err == nil {
			w.m.deadLetters.WithLabelValues(o.reason).Inc()
			if o.Status == StatusDeadLettered {
				w.count(resultDeadLettered, 1)
			}
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		if ke := (*kerr.Error)(nil); errors.As(err, &ke) && !ke.Retriable {
			// Retrying cannot help (the record is refused, or access is denied): holding the partition for it
			// would block every later tick. The outcome says what happened.
			w.m.deadLetterErrs.Inc()
			w.logger.Error("writing dead letter failed for good; going on without it", "tick_id", o.ID, "partition", rec.Partition, "offset", rec.Offset, "error", err)
			return true
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

// tailOf is the last n bytes of s, cut at a UTF-8 character's start.
func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for i := 0; i < len(s) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(s[i]) {
			return s[i:]
		}
	}
	return s
}
