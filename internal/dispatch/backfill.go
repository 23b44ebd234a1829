package dispatch

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// backfiller is a leader term's share of the backfills (package backfill): those of the schedules the term owns.
//
// Its goroutine (read) reads the committed progress and the requests once the term has fenced every earlier
// leader, so the progress is final, and then follows new requests and cancellations; one goroutine per backfill
// follows the outcomes of its ticks in its schedule's results partitions. All of them only send to the term's
// loop, which alone decides: step emits each backfill's next slots, at most MaxRunning without an outcome, and
// commits its progress in the same transaction as its ticks. A failed transaction ends the term (as any does),
// so the in-memory progress a failed step leaves is never used.
type backfiller struct {
	t *leaderTerm
	// events carries, in order, the topics' contents once read, then every record of the requests topic after
	// them; outs the outcomes of backfill ticks.
	events chan bfEvent
	outs   chan bfOutcome
	// fatal carries a refused permission (kafka.IsACLError): asking again would be refused again, so the term
	// ends with it and the ticker stops, naming the permission, as for any other ACL it lacks.
	fatal chan error
	fold  *backfill.Fold // nil until loaded
	runs  map[string]*bfRun
	bad   map[string]*kgo.Record // invalid records, newest of their key, for leader 0 to dead-letter
	// more is set when a step left slots to emit that were due (it emits at most maxStepTicks a transaction);
	// waiting when a backfill waits for its pool or its schedule (the term steps again within backfillRetry).
	more, waiting bool
	wg            sync.WaitGroup
	cancel        context.CancelFunc
	ctx           context.Context
}

// bfEvent is the load (fold set) or one later record of the requests topic.
type bfEvent struct {
	fold *backfill.Fold
	bad  map[string]*kgo.Record
	rec  *kgo.Record
}

// bfRun is one backfill the term works through.
type bfRun struct {
	b      *backfill.Backfill
	hash   string // the request the run works through (Backfill.RequestHash when it began)
	next   int
	shards int
	pool   string
	// pending maps the tick IDs emitted without an outcome to their slot index; left counts them per index, and
	// emitted says when each index was emitted.
	pending  map[string]int
	left     map[int]int
	emitted  map[int]time.Time
	stop     context.CancelFunc // ends its outcome follower (nil: none yet, its pool was not ready)
	since    time.Time          // where its outcome follower starts
	waitPool bool               // logged that its pool is not ready
}

type bfOutcome struct {
	backfill, id string
}

// backfillRetry is how long the backfiller waits before reading its topics again after a failure.
const backfillRetry = 5 * time.Second

// outcomeLookback is how far before a backfill's oldest running slot was emitted its outcome follower starts
// reading: more than any clock skew between the leader and the workers.
const outcomeLookback = 10 * time.Minute

// maxStepTicks bounds the ticks of one backfill transaction (a backfill of 100 running slots of a schedule of
// 1,024 shards would be 102,400): the rest goes in the next ones.
const maxStepTicks = 5000

// backfillKeep is how long an ended backfill stays on the topics (for --list and the change log's checks)
// before its leader deletes its records.
const backfillKeep = 30 * 24 * time.Hour

// deletedAfter is how long a backfill waits for its schedule to appear before it ends as of a deleted schedule:
// the requests topic and the schedules topic are read apart, so a request may be read before the schedule
// written just before it.
const deletedAfter = time.Minute

func newBackfiller(t *leaderTerm) *backfiller {
	return &backfiller{t: t, events: make(chan bfEvent, 64), outs: make(chan bfOutcome, 256),
		fatal: make(chan error, 1), runs: map[string]*bfRun{}}
}

// start launches the reading goroutine; stop (a closer of the term) ends every goroutine and waits for them.
func (b *backfiller) start(ctx context.Context) {
	b.ctx, b.cancel = context.WithCancel(ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.read(b.ctx)
	}()
}

func (b *backfiller) stop() {
	if b.cancel != nil {
		b.cancel()
	}
	b.wg.Wait()
	b.t.d.metrics.backfillsActive.Sub(float64(len(b.runs)))
	b.runs = map[string]*bfRun{}
}

// read loads both topics once the progress partition is stable, hands the result to the term, then follows the
// requests topic. The progress is read once a term: the term's own commits are newer than any later read of it.
// A failure is logged and tried again (the load, or the follow from where it was): it delays backfills, never the
// schedules.
func (b *backfiller) read(ctx context.Context) {
	d, logger := b.t.d, b.t.logger
	names := d.cfg.Names
	saidMissing := false
	next := int64(-1) // the requests topic's offset to follow from, once loaded
	for {
		var err error
		if next < 0 {
			fold, bad := backfill.NewFold(), map[string]*kgo.Record{}
			err = b.waitStable(ctx)
			if err == nil {
				_, err = kafka.ReadStable(ctx, d.opts, names.BackfillProgress, 0, func(r *kgo.Record) error {
					if err := fold.AddProgress(r); err != nil {
						d.metrics.backfillInvalid.Inc()
						logger.Warn("backfill progress record skipped", "offset", r.Offset, "error", err)
					}
					return nil
				})
			}
			var end int64
			if err == nil {
				end, err = kafka.ReadStable(ctx, d.opts, names.Backfills, 0, func(r *kgo.Record) error {
					b.take(fold, bad, r, false)
					return nil
				})
			}
			if err == nil {
				if !b.send(ctx, bfEvent{fold: fold, bad: bad}) {
					return
				}
				next = end
			}
		}
		if err == nil {
			next, err = b.tail(ctx, next)
		}
		if ctx.Err() != nil {
			return
		}
		if kafka.IsACLError(err) {
			b.fail(err)
			return
		}
		wait := backfillRetry
		if missing, _ := b.missing(ctx); missing {
			if !saidMissing {
				logger.Info("no backfill topics in this namespace: backfills wait for them (ticker init makes them)")
				saidMissing = true
			}
			wait = time.Minute
		} else {
			logger.Error("reading the backfills (schedules go on; backfills wait)", "retry_in", wait, "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// send hands ev to the term's loop; false when the term ended first.
func (b *backfiller) send(ctx context.Context, ev bfEvent) bool {
	select {
	case b.events <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// waitStable waits until no open transaction holds back the progress topic below its high watermark: every
// leader writes its progress there, and another leader's open transaction could otherwise hide a commit of this
// partition's earlier leader from the read (read_committed stops at the last stable offset).
func (b *backfiller) waitStable(ctx context.Context) error {
	topic := b.t.d.cfg.Names.BackfillProgress
	hwm, err := b.t.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return kafka.NeedACL(err, "Read", "topic", topic)
	}
	h, ok := hwm.Lookup(topic, 0)
	if !ok || h.Err != nil {
		return fmt.Errorf("listing the high watermark of %s: %w", topic, kafka.NeedACL(cmp.Or(h.Err, errors.New("partition not listed")), "Read", "topic", topic))
	}
	for {
		lso, err := b.t.adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return kafka.NeedACL(err, "Read", "topic", topic)
		}
		if l, ok := lso.Lookup(topic, 0); ok && l.Err == nil && l.Offset >= h.Offset {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// fail hands err to the term's loop, which ends the term with it.
func (b *backfiller) fail(err error) {
	select {
	case b.fatal <- fmt.Errorf("backfills: %w", err):
	default: // the term ends with the first
	}
}

// missing reports whether a backfill topic does not exist.
func (b *backfiller) missing(ctx context.Context) (bool, error) {
	names := b.t.d.cfg.Names
	tds, err := b.t.adm.ListTopics(ctx, names.Backfills, names.BackfillProgress)
	if err != nil {
		return false, err
	}
	for _, n := range []string{names.Backfills, names.BackfillProgress} {
		if td, ok := tds[n]; !ok || td.Err != nil {
			return true, nil
		}
	}
	return false, nil
}

// take folds request-topic record r into fold, keeping bad (the invalid records that are the newest of their key)
// up to date; live is set for records read after the load, which the term's loop folds.
func (b *backfiller) take(fold *backfill.Fold, bad map[string]*kgo.Record, r *kgo.Record, live bool) {
	if err := fold.Add(r); err != nil {
		b.t.d.metrics.backfillInvalid.Inc()
		b.t.logger.Warn("backfill record refused", "offset", r.Offset, "live", live, "error", err)
		bad[string(r.Key)] = r
		return
	}
	delete(bad, string(r.Key))
}

// tail follows the requests topic from offset from, handing each record to the term's loop, until ctx ends or a
// fetch fails; it returns the offset to go on from.
func (b *backfiller) tail(ctx context.Context, from int64) (int64, error) {
	d := b.t.d
	cl, err := kgo.NewClient(append(d.opts[:len(d.opts):len(d.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.cfg.Names.Backfills: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return from, err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return from, nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		for _, r := range fs.Records() {
			if !b.send(ctx, bfEvent{rec: r}) {
				return from, nil
			}
			from = r.Offset + 1
		}
		if ferr != nil {
			return from, kafka.NeedACL(ferr, "Read", "topic", d.cfg.Names.Backfills)
		}
	}
}

// follow sends the outcomes of backfill id's ticks, read from partitions of a results topic from instant since.
func (b *backfiller) follow(ctx context.Context, id, topic string, parts []int32, since time.Time) {
	d, logger := b.t.d, b.t.logger.With("backfill", id)
	at := kgo.NewOffset().AfterMilli(since.UnixMilli())
	offsets := map[int32]kgo.Offset{}
	for _, p := range parts {
		offsets[p] = at
	}
	marker := []byte("~backfill-" + id)
	for ctx.Err() == nil {
		cl, err := kgo.NewClient(append(d.opts[:len(d.opts):len(d.opts)],
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
		if err == nil {
			err = b.poll(ctx, cl, id, marker, offsets)
			cl.Close()
		}
		err = kafka.NeedACL(err, "Read", "topic", topic)
		if ctx.Err() != nil {
			return
		}
		if kafka.IsACLError(err) {
			b.fail(err)
			return
		}
		logger.Warn("following the outcomes of a backfill: reading again", "topic", topic, "retry_in", backfillRetry, "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(backfillRetry):
		}
	}
}

// poll reads outcomes until ctx ends or a fetch fails, keeping in offsets where to go on from.
func (b *backfiller) poll(ctx context.Context, cl *kgo.Client, id string, marker []byte, offsets map[int32]kgo.Offset) error {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		for _, r := range fs.Records() {
			offsets[r.Partition] = kgo.NewOffset().At(r.Offset + 1)
			if !bytes.Contains(r.Value, marker) {
				continue
			}
			outs, err := ledger.Outcomes(r.Value)
			if err != nil {
				continue // not an outcome the leader can use; the workers' own readers report it
			}
			for _, o := range outs {
				if bid, ok := tick.IsBackfillID(o.ID); ok && bid == id {
					select {
					case b.outs <- bfOutcome{backfill: id, id: o.ID}:
					case <-ctx.Done():
						return nil
					}
				}
			}
		}
		if ferr != nil {
			return ferr
		}
	}
}

// event takes an event of the reading goroutine: the load, or a later record of the requests topic.
func (b *backfiller) event(ev bfEvent) {
	if ev.fold != nil {
		b.fold, b.bad = ev.fold, ev.bad
		return
	}
	if b.fold != nil { // always: the load comes first on the channel
		b.take(b.fold, b.bad, ev.rec, true)
	}
}

// outcomes takes the outcome o and every other one waiting, so that a burst of outcomes makes one step.
func (b *backfiller) outcomes(o bfOutcome) {
	b.outcome(o)
	for {
		select {
		case o := <-b.outs:
			b.outcome(o)
		default:
			return
		}
	}
}

// outcome takes the outcome of tick o.id of a backfill.
func (b *backfiller) outcome(o bfOutcome) {
	run := b.runs[o.backfill]
	if run == nil {
		return
	}
	idx, ok := run.pending[o.id]
	if !ok {
		return // an outcome of a tick already counted, or forged
	}
	delete(run.pending, o.id)
	if run.left[idx]--; run.left[idx] <= 0 {
		delete(run.left, idx)
	}
}

// stepTxn is what one step writes in its transaction, and what the term takes as done once it commits.
type stepTxn struct {
	now      time.Time
	recs     []*kgo.Record
	progress []backfill.Progress // set in the fold once committed
	ended    []string            // the backfills that end with the transaction
	forget   []string            // ended backfills kept long enough: their records are deleted
	emitted  int                 // backfill ticks
	// deadLettered counts the invalid records the transaction dead-letters.
	deadLettered int
}

// step moves every backfill of the term's schedules forward: it starts the ones not started, ends the ones done,
// cancelled, refused or of a deleted schedule, and emits the next slots of the others, all in one transaction
// with their progress. Leader 0 also dead-letters the invalid records, once.
func (b *backfiller) step(ctx context.Context) error {
	b.more, b.waiting = false, false
	if b.fold == nil {
		return nil
	}
	t := b.t
	txn := &stepTxn{now: t.d.cfg.Now()}
	for _, bf := range b.fold.Sorted() {
		if !t.owned(bf.Request.Schedule) {
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
	if t.k == 0 {
		b.deadLetterInvalid(txn)
	}
	if len(txn.recs) == 0 {
		return nil
	}
	if err := t.d.commit(ctx, t.p, txn.recs); err != nil {
		return fmt.Errorf("committing backfill progress: %w", err)
	}
	b.committed(txn)
	return nil
}

// deleteExpired adds to txn the deletion of ended backfill bf's records once it has been kept backfillKeep.
func (b *backfiller) deleteExpired(txn *stepTxn, bf *backfill.Backfill) {
	if txn.now.Sub(bf.Progress.At) <= backfillKeep {
		return
	}
	names, id := b.t.d.cfg.Names, bf.Request.ID
	txn.forget = append(txn.forget, id)
	for _, k := range [][2]string{{names.Backfills, id}, {names.Backfills, backfill.CancelKey(id)}, {names.BackfillProgress, id}} {
		txn.recs = append(txn.recs, &kgo.Record{Topic: k[0], Partition: 0, Key: []byte(k[1])})
	}
}

// advance adds to txn backfill bf's next slots and its progress, or its end, beginning its run if it has none.
func (b *backfiller) advance(txn *stepTxn, bf *backfill.Backfill) error {
	req, now := &bf.Request, txn.now
	e, known := b.t.pl.entry(req.Schedule)
	run := b.runs[req.ID]
	if run == nil {
		if !known && now.Sub(req.CreatedAt) < deletedAfter {
			b.waiting = true // its schedule may not be read yet
			return nil
		}
		run = b.begin(bf, e, known, now)
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
			end = backfill.EndDone
		}
	}
	if end == "" && run.next == before && bf.Progress != nil && len(bf.Progress.Running) == outcomes && outcomes == len(run.left) {
		return nil // nothing changed since the progress committed last
	}
	b.writeProgress(txn, run, end)
	return nil
}

// endReason says why backfill bf ends before its next slots ("": it does not). known says its schedule exists.
func endReason(bf *backfill.Backfill, run *bfRun, known bool, now time.Time) string {
	req := &bf.Request
	switch {
	case bf.Rewritten || bf.RequestHash != run.hash:
		return backfill.EndRefused // written again under its ID with other content: not the request it ran
	case req.Slots[len(req.Slots)-1].After(now.Add(deletedAfter)):
		return backfill.EndRefused // a slot still to come (a request that lies about its creation): not a backfill
	case !known:
		return backfill.EndDeleted
	case bf.Cancel != nil:
		return backfill.EndCancelled
	}
	return ""
}

// readyPool returns run's pool if it is ready, starting the follower of run's outcomes if none runs yet; when it
// is not, the backfill waits (logged once) and the term steps again within backfillRetry.
func (b *backfiller) readyPool(run *bfRun) (poolTopic, bool) {
	pool, ready := b.t.pools[run.pool]
	if !ready {
		if !run.waitPool {
			b.t.logger.Warn("backfill waits for its pool", "backfill", run.b.Request.ID, "pool", run.pool)
			run.waitPool = true
		}
		b.waiting = true
		return pool, false
	}
	run.waitPool = false
	if run.stop == nil {
		b.followRun(run, pool)
	}
	return pool, true
}

// emitSlots adds to txn the ticks of run's next slots, of schedule e, on pool's work topic: as many slots as keep
// at most MaxRunning without an outcome, and no more once txn holds maxStepTicks records (then b.more is set).
func (b *backfiller) emitSlots(txn *stepTxn, run *bfRun, e store.Entry, pool poolTopic) error {
	req := &run.b.Request
	src := tick.Source{Schedule: req.Schedule, Shards: run.shards, Payload: e.Schedule.Payload(), Version: e.Version,
		LeaderEpoch: int64(b.t.t.epoch), Metrics: e.Schedule.Metrics(), Timeout: e.Schedule.Timeout(), MaxAttempts: e.Schedule.MaxAttempts()}
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
			txn.recs = append(txn.recs, &kgo.Record{Topic: pool.work, Partition: tk.Partition(pool.partitions), Key: []byte(tk.ID), Value: v})
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
func (b *backfiller) writeProgress(txn *stepTxn, run *bfRun, end string) {
	bf := run.b
	req := &bf.Request
	p := backfill.Progress{ID: req.ID, Request: bf.RequestHash, Next: run.next, Running: run.running(), Shards: run.shards, Pool: run.pool,
		Since: run.oldest(), Ended: end, At: txn.now}
	txn.progress = append(txn.progress, p)
	txn.recs = append(txn.recs, &kgo.Record{Topic: b.t.d.cfg.Names.BackfillProgress, Partition: 0, Key: []byte(req.ID), Value: backfill.EncodeProgress(p)})
	if end != "" {
		txn.ended = append(txn.ended, req.ID)
		b.t.logger.Info("backfill ended", "backfill", req.ID, "schedule", req.Schedule, "ended", end, "slots", len(req.Slots), "emitted", run.next)
	}
}

// deadLetterInvalid adds to txn the dead-lettering of every invalid record (leader 0 only).
func (b *backfiller) deadLetterInvalid(txn *stepTxn) {
	names := b.t.d.cfg.Names
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
func (b *backfiller) committed(txn *stepTxn) {
	for _, p := range txn.progress {
		b.fold.SetProgress(p)
	}
	for _, id := range txn.forget {
		b.fold.Forget(id)
	}
	if txn.deadLettered > 0 {
		b.t.logger.Warn("invalid backfill records dead-lettered", "records", txn.deadLettered)
		clear(b.bad)
	}
	b.t.d.metrics.backfillTicks.Add(float64(txn.emitted))
	for _, id := range txn.ended {
		b.end(id)
	}
}

// wake returns how soon the term's loop must step again (false: only on an event).
func (b *backfiller) wake() (time.Duration, bool) {
	switch {
	case b.more:
		return 0, true
	case b.waiting:
		return backfillRetry, true
	}
	return 0, false
}

// running lists the slot indices without an outcome, in order.
func (r *bfRun) running() []int {
	out := make([]int, 0, len(r.left))
	for i := range r.left {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// oldest is when the oldest slot without an outcome was emitted (zero: none).
func (r *bfRun) oldest() time.Time {
	var at time.Time
	for i := range r.left {
		if e := r.emitted[i]; at.IsZero() || e.Before(at) {
			at = e
		}
	}
	return at
}

// begin starts working through bf from its committed progress. e is its schedule (known: it exists).
func (b *backfiller) begin(bf *backfill.Backfill, e store.Entry, known bool, now time.Time) *bfRun {
	t := b.t
	req := &bf.Request
	run := &bfRun{b: bf, hash: bf.RequestHash, pending: map[string]int{}, left: map[int]int{}, emitted: map[int]time.Time{}, shards: 1}
	if known {
		run.shards, run.pool = e.Schedule.Shards(), e.Schedule.Pool()
	}
	since := now
	if p := bf.Progress; p != nil {
		run.next, run.pool = p.Next, p.Pool
		if p.Shards > 0 {
			run.shards = p.Shards
		}
		// The outcomes of the running slots are read from when the oldest of them was emitted.
		for _, at := range []time.Time{p.Since, p.At} {
			if !at.IsZero() && at.Before(since) {
				since = at
				break
			}
		}
		for _, i := range p.Running {
			slot := req.Slots[i]
			for shard := range run.shards {
				run.pending[tick.BackfillID(req.Schedule, slot, req.ID, shard, run.shards)] = i
				run.left[i]++
			}
			run.emitted[i] = since
		}
	}
	run.since = since.Add(-outcomeLookback)
	b.runs[req.ID] = run
	t.d.metrics.backfillsActive.Inc()
	t.logger.Info("backfill taken", "backfill", req.ID, "schedule", req.Schedule, "slots", len(req.Slots), "next", run.next, "running", len(run.left))
	return run
}

// followRun starts the goroutine that follows run's outcomes, in the results partitions of its schedule's shards
// in its pool (ready). A tick's outcome goes to the results partition of its work partition's number (a worker
// requires as many results partitions as work partitions).
func (b *backfiller) followRun(run *bfRun, pool poolTopic) {
	req := &run.b.Request
	results := b.t.d.cfg.Names.Pool(run.pool).Results
	seen := map[int32]bool{}
	var parts []int32
	for shard := range run.shards {
		if p := tick.Partition(req.Schedule, shard, pool.partitions); !seen[p] {
			seen[p] = true
			parts = append(parts, p)
		}
	}
	ctx, cancel := context.WithCancel(b.ctx)
	run.stop = cancel
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.follow(ctx, req.ID, results, parts, run.since)
	}()
}

// end forgets backfill id, ended and committed.
func (b *backfiller) end(id string) {
	if run := b.runs[id]; run != nil {
		if run.stop != nil {
			run.stop()
		}
		delete(b.runs, id)
		b.t.d.metrics.backfillsActive.Dec()
	}
}
