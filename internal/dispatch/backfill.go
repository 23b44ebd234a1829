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

// step moves every backfill of the term's schedules forward: it starts the ones not started, ends the ones done,
// cancelled, refused or of a deleted schedule, and emits the next slots of the others, all in one transaction
// with their progress. Leader 0 also dead-letters the invalid records, once.
func (b *backfiller) step(ctx context.Context) error {
	b.more, b.waiting = false, false
	if b.fold == nil {
		return nil
	}
	t, d := b.t, b.t.d
	now := d.cfg.Now()
	var (
		recs     []*kgo.Record
		ended    []string
		progress []backfill.Progress
		emitted  int
	)
	var forget []string
	for _, bf := range b.fold.Sorted() {
		req := &bf.Request
		if !t.owned(req.Schedule) {
			continue
		}
		if bf.Ended() {
			if now.Sub(bf.Progress.At) > backfillKeep {
				forget = append(forget, req.ID)
				for _, k := range [][2]string{{d.cfg.Names.Backfills, req.ID}, {d.cfg.Names.Backfills, backfill.CancelKey(req.ID)}, {d.cfg.Names.BackfillProgress, req.ID}} {
					recs = append(recs, &kgo.Record{Topic: k[0], Partition: 0, Key: []byte(k[1])})
				}
			}
			continue
		}
		e, known := t.pl.entry(req.Schedule)
		run := b.runs[req.ID]
		if run == nil {
			if !known && now.Sub(req.CreatedAt) < deletedAfter {
				b.waiting = true // its schedule may not be read yet
				continue
			}
			run = b.begin(bf, e, known, now)
		}
		run.b = bf
		end := ""
		switch {
		case bf.Rewritten || bf.RequestHash != run.hash:
			end = backfill.EndRefused // written again under its ID with other content: not the request it ran
		case req.Slots[len(req.Slots)-1].After(now.Add(deletedAfter)):
			end = backfill.EndRefused // a slot still to come (a request that lies about its creation): not a backfill
		case !known:
			end = backfill.EndDeleted
		case bf.Cancel != nil:
			end = backfill.EndCancelled
		}
		before, outcomes := run.next, len(run.left)
		if end == "" {
			pool, ready := t.pools[run.pool]
			if !ready {
				if !run.waitPool {
					t.logger.Warn("backfill waits for its pool", "backfill", req.ID, "pool", run.pool)
					run.waitPool = true
				}
				b.waiting = true
				continue
			}
			run.waitPool = false
			if run.stop == nil {
				b.followRun(run, pool)
			}
			src := tick.Source{Schedule: req.Schedule, Shards: run.shards, Payload: e.Schedule.Payload(), Version: e.Version,
				LeaderEpoch: int64(t.t.epoch), Metrics: e.Schedule.Metrics(), Timeout: e.Schedule.Timeout(), MaxAttempts: e.Schedule.MaxAttempts()}
			for len(run.left) < req.MaxRunning && run.next < len(req.Slots) {
				if len(recs) >= maxStepTicks {
					b.more = true
					break
				}
				for _, tk := range src.Backfill(req.Slots[run.next], now, req.ID) {
					v, err := tick.Encode(tk)
					if err != nil {
						return err
					}
					recs = append(recs, &kgo.Record{Topic: pool.work, Partition: tk.Partition(pool.partitions), Key: []byte(tk.ID), Value: v})
					run.pending[tk.ID] = run.next
					run.left[run.next]++
					emitted++
				}
				run.emitted[run.next] = now
				run.next++
			}
			if run.next == len(req.Slots) && len(run.left) == 0 {
				end = backfill.EndDone
			}
		}
		if end == "" && run.next == before && bf.Progress != nil && len(bf.Progress.Running) == outcomes && outcomes == len(run.left) {
			continue // nothing changed since the progress committed last
		}
		p := backfill.Progress{ID: req.ID, Request: bf.RequestHash, Next: run.next, Running: run.running(), Shards: run.shards, Pool: run.pool,
			Since: run.oldest(), Ended: end, At: now}
		progress = append(progress, p)
		recs = append(recs, &kgo.Record{Topic: d.cfg.Names.BackfillProgress, Partition: 0, Key: []byte(req.ID), Value: backfill.EncodeProgress(p)})
		if end != "" {
			ended = append(ended, req.ID)
			t.logger.Info("backfill ended", "backfill", req.ID, "schedule", req.Schedule, "ended", end, "slots", len(req.Slots), "emitted", run.next)
		}
	}
	var deadLettered int
	if t.k == 0 {
		for key, r := range b.bad {
			// Dead-lettered once for the fleet: the same transaction restates the valid record the key held (the
			// same bytes: the same request), or deletes the key, so no later read finds the invalid one newest.
			recs = append(recs, store.DeadLetter(r, d.cfg.Names.DLQ, errors.New("invalid backfill record")),
				&kgo.Record{Topic: d.cfg.Names.Backfills, Partition: 0, Key: []byte(key), Value: b.fold.Valid(key)})
			deadLettered++
		}
	}
	if len(recs) == 0 {
		return nil
	}
	if err := d.commit(ctx, t.p, recs); err != nil {
		return fmt.Errorf("committing backfill progress: %w", err)
	}
	for _, p := range progress {
		b.fold.SetProgress(p)
	}
	for _, id := range forget {
		b.fold.Forget(id)
	}
	if deadLettered > 0 {
		t.logger.Warn("invalid backfill records dead-lettered", "records", deadLettered)
		clear(b.bad)
	}
	d.metrics.backfillTicks.Add(float64(emitted))
	for _, id := range ended {
		b.end(id)
	}
	return nil
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
