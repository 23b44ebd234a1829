package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
	// loaded carries the topics' contents once read; recs the records of the requests topic after them; outs the
	// outcomes of backfill ticks.
	loaded chan loadedBackfills
	recs   chan *kgo.Record
	outs   chan bfOutcome
	// fatal carries a refused permission (kafka.IsACLError): asking again would be refused again, so the term
	// ends with it and the ticker stops, naming the permission, as for any other ACL it lacks.
	fatal  chan error
	fold   *backfill.Fold // nil until loaded
	runs   map[string]*bfRun
	bad    map[string]*kgo.Record // invalid records, newest of their key, for leader 0 to dead-letter
	wg     sync.WaitGroup
	cancel context.CancelFunc
	ctx    context.Context
}

type loadedBackfills struct {
	fold *backfill.Fold
	bad  map[string]*kgo.Record
}

// bfRun is one backfill the term works through.
type bfRun struct {
	b        *backfill.Backfill
	next     int
	shards   int
	pending  map[string]int     // tick ID -> slot index, for the ticks emitted without an outcome
	left     map[int]int        // slot index -> its ticks without an outcome
	stop     context.CancelFunc // ends its outcome follower (nil: none yet, its pool was not ready)
	since    time.Time          // where its outcome follower starts
	waitPool bool               // logged that its pool is not ready
}

type bfOutcome struct {
	backfill, id string
}

// backfillRetry is how long the backfiller waits before reading its topics again after a failure.
const backfillRetry = 5 * time.Second

// outcomeLookback is how far before a backfill's last committed progress its outcome follower starts reading:
// more than any clock skew between the leader and the workers.
const outcomeLookback = 10 * time.Minute

func newBackfiller(t *leaderTerm) *backfiller {
	return &backfiller{t: t, loaded: make(chan loadedBackfills, 1), recs: make(chan *kgo.Record, 64), outs: make(chan bfOutcome, 256),
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

// read loads both topics to their last stable offsets, hands the result to the term, then follows the requests
// topic. A failure is logged and the whole read tried again: it delays backfills, never the schedules.
func (b *backfiller) read(ctx context.Context) {
	d, logger := b.t.d, b.t.logger
	names := d.cfg.Names
	saidMissing := false
	for {
		fold, bad := backfill.NewFold(), map[string]*kgo.Record{}
		_, err := kafka.ReadStable(ctx, d.opts, names.BackfillProgress, 0, func(r *kgo.Record) error {
			if err := fold.AddProgress(r); err != nil {
				d.metrics.backfillInvalid.Inc()
				logger.Warn("backfill progress record skipped", "offset", r.Offset, "error", err)
			}
			return nil
		})
		var end int64
		if err == nil {
			end, err = kafka.ReadStable(ctx, d.opts, names.Backfills, 0, func(r *kgo.Record) error {
				b.take(fold, bad, r, false)
				return nil
			})
		}
		if err == nil {
			select {
			case b.loaded <- loadedBackfills{fold: fold, bad: bad}:
			case <-ctx.Done():
				return
			}
			err = b.tail(ctx, end)
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

// tail follows the requests topic from offset from, handing each record to the term's loop.
func (b *backfiller) tail(ctx context.Context, from int64) error {
	d := b.t.d
	cl, err := kgo.NewClient(append(d.opts[:len(d.opts):len(d.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{d.cfg.Names.Backfills: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return kafka.NeedACL(ferr, "Read", "topic", d.cfg.Names.Backfills)
		}
		for _, r := range fs.Records() {
			select {
			case b.recs <- r:
			case <-ctx.Done():
				return nil
			}
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
		if err != nil {
			logger.Error("following the outcomes of a backfill", "error", err)
			return
		}
		err = kafka.NeedACL(b.poll(ctx, cl, id, marker, offsets), "Read", "topic", topic)
		cl.Close()
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

// load takes the topics' contents read by the goroutine.
func (b *backfiller) load(l loadedBackfills) {
	b.fold, b.bad = l.fold, l.bad
}

// add folds a record read after the load.
func (b *backfiller) add(r *kgo.Record) {
	if b.fold == nil {
		return
	}
	b.take(b.fold, b.bad, r, true)
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
	if b.fold == nil {
		return nil
	}
	t, d := b.t, b.t.d
	now := d.cfg.Now()
	var recs []*kgo.Record
	var ended []string
	emitted := 0
	for _, bf := range b.fold.Sorted() {
		req := &bf.Request
		if bf.Ended() || !t.owned(req.Schedule) {
			continue
		}
		run := b.runs[req.ID]
		if run == nil {
			run = b.begin(bf, now)
		}
		run.b = bf // the same request, from a later read of the topics
		e, ok := t.pl.entry(req.Schedule)
		end := ""
		switch {
		case bf.Rewritten:
			end = backfill.EndRefused
		case !ok:
			end = backfill.EndDeleted
		case bf.Cancel != nil:
			end = backfill.EndCancelled
		}
		before := run.next
		if end == "" {
			pool, ready := t.pools[e.Schedule.Pool()]
			switch {
			case !ready:
				if !run.waitPool {
					t.logger.Warn("backfill waits for its pool", "backfill", req.ID, "pool", e.Schedule.Pool())
					run.waitPool = true
				}
				continue
			default:
				run.waitPool = false
			}
			if run.stop == nil {
				b.followRun(run)
			}
			src := tick.Source{Schedule: req.Schedule, Shards: run.shards, Payload: e.Schedule.Payload(), Version: e.Version,
				LeaderEpoch: int64(t.t.epoch), Metrics: e.Schedule.Metrics(), Timeout: e.Schedule.Timeout(), MaxAttempts: e.Schedule.MaxAttempts()}
			for len(run.left) < req.MaxRunning && run.next < len(req.Slots) {
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
				run.next++
			}
			if run.next == len(req.Slots) && len(run.left) == 0 {
				end = backfill.EndDone
			}
		}
		if end == "" && run.next == before && !b.outcomesChanged(bf, run) {
			continue
		}
		p := backfill.Progress{ID: req.ID, RequestOffset: bf.RequestOffset, Next: run.next, Running: run.running(), Shards: run.shards, Ended: end, At: now}
		bf.Progress = &p
		recs = append(recs, &kgo.Record{Topic: d.cfg.Names.BackfillProgress, Partition: 0, Key: []byte(req.ID), Value: backfill.EncodeProgress(p)})
		if end != "" {
			ended = append(ended, req.ID)
			t.logger.Info("backfill ended", "backfill", req.ID, "schedule", req.Schedule, "ended", end, "slots", len(req.Slots), "emitted", run.next)
		}
	}
	if t.k == 0 {
		for key, r := range b.bad {
			recs = append(recs, store.DeadLetter(r, d.cfg.Names.DLQ, errors.New("invalid backfill record")),
				&kgo.Record{Topic: d.cfg.Names.Backfills, Partition: 0, Key: []byte(key)})
		}
	}
	if len(recs) == 0 {
		return nil
	}
	if err := d.commit(ctx, t.p, recs); err != nil {
		return fmt.Errorf("committing backfill progress: %w", err)
	}
	if t.k == 0 {
		clear(b.bad)
	}
	d.metrics.backfillTicks.Add(float64(emitted))
	for _, id := range ended {
		b.end(id)
	}
	return nil
}

// outcomesChanged reports whether run's set of slots without an outcome differs from bf's committed progress.
func (b *backfiller) outcomesChanged(bf *backfill.Backfill, run *bfRun) bool {
	return bf.Progress == nil || len(bf.Progress.Running) != len(run.left)
}

// running lists the slot indices without an outcome, in order.
func (r *bfRun) running() []int {
	out := make([]int, 0, len(r.left))
	for i := range r.next {
		if r.left[i] > 0 {
			out = append(out, i)
		}
	}
	return out
}

// begin starts working through bf from its committed progress, and follows its outcomes.
func (b *backfiller) begin(bf *backfill.Backfill, now time.Time) *bfRun {
	t := b.t
	req := &bf.Request
	run := &bfRun{b: bf, pending: map[string]int{}, left: map[int]int{}, shards: 1}
	since := now
	if e, ok := t.pl.entry(req.Schedule); ok {
		run.shards = e.Schedule.Shards()
	}
	if p := bf.Progress; p != nil {
		run.next = p.Next
		if p.At.Before(now) {
			since = p.At
		}
		if p.Shards > 0 {
			run.shards = p.Shards
		}
		for _, i := range p.Running {
			slot := req.Slots[i]
			for shard := range run.shards {
				run.pending[tick.BackfillID(req.Schedule, slot, req.ID, shard, run.shards)] = i
				run.left[i]++
			}
		}
	}
	run.since = since.Add(-outcomeLookback)
	b.runs[req.ID] = run
	t.d.metrics.backfillsActive.Inc()
	t.logger.Info("backfill taken", "backfill", req.ID, "schedule", req.Schedule, "slots", len(req.Slots), "next", run.next, "running", len(run.left))
	return run
}

// followRun starts the goroutine that follows run's outcomes, in the results partitions of its schedule's shards.
// It is called once the pool is ready.
func (b *backfiller) followRun(run *bfRun) {
	t := b.t
	req := &run.b.Request
	e, _ := t.pl.entry(req.Schedule)
	names := t.d.cfg.Names.Pool(e.Schedule.Pool())
	pool := t.pools[e.Schedule.Pool()]
	since := run.since
	parts := b.resultPartitions(req.Schedule, run.shards, pool.partitions, names.Results)
	ctx, cancel := context.WithCancel(b.ctx)
	run.stop = cancel
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.follow(ctx, req.ID, names.Results, parts, since)
	}()
}

// resultPartitions are the results partitions of schedule's shards: a tick's outcome goes to the results
// partition of its work partition's number, modulo the results topic's partitions.
func (b *backfiller) resultPartitions(schedule string, shards, workParts int, results string) []int32 {
	resParts := workParts
	if n, err := kafka.WorkPartitions(b.ctx, kadm.NewClient(b.t.p.cl), results); err == nil && n > 0 {
		resParts = n
	}
	seen := map[int32]bool{}
	var out []int32
	for shard := range shards {
		p := tick.Partition(schedule, shard, workParts) % int32(resParts)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
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
