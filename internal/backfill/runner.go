package backfill

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Term is what a Runner needs of the leader term it works in. Its methods are called on the term's loop only.
type Term interface {
	// Owns reports whether the term leads the schedule of that name.
	Owns(schedule string) bool
	// Schedule returns the definition of the schedule of that name (false: the term knows none).
	Schedule(name string) (store.Entry, bool)
	// Pool returns the work topic of the pool of that name ("": the default pool); false while it is not ready.
	Pool(name string) (Pool, bool)
	// Commit writes recs in one transaction of the term's producer. An error ends the term.
	Commit(ctx context.Context, recs []*kgo.Record) error
}

// Pool is a pool's work topic and its partition count.
type Pool struct {
	Work       string
	Partitions int
}

// Config is what a Runner works with. Every field is required.
type Config struct {
	// Names are the namespace's topics.
	Names kafka.Names
	// Now is the clock.
	Now func() time.Time
	// Opts are the connection options (kafka.Config.Opts); Admin a client of the same cluster.
	Opts  []kgo.Opt
	Admin *kadm.Client
	// Logger is the term's logger.
	Logger *slog.Logger
	// Epoch is the term's leader epoch, which its ticks carry.
	Epoch int64
	// DeadLetter is set for leader 0, which dead-letters the invalid request records once for the fleet.
	DeadLetter bool
	// Metrics are shared by every term of the replica.
	Metrics *Metrics
}

// Runner is a leader term's share of the backfills: those of the schedules the term owns. See the package doc.
//
// Its goroutine (readRequests) reads the committed progress and the requests once the term has fenced every
// earlier leader, so the progress is final, and then follows new requests and cancellations; one goroutine per
// backfill follows the outcomes of its ticks in its schedule's results partitions. All of them only send to the
// term's loop, which alone decides: Step emits each backfill's next slots, at most MaxRunning without an outcome,
// and commits its progress in the same transaction as its ticks. A failed transaction ends the term (as any
// does), so the in-memory progress a failed step leaves is never used.
type Runner struct {
	cfg  Config
	term Term
	// events carries, in order, the topics' contents once read, then every record of the requests topic after
	// them; outs the outcomes of backfill ticks.
	events chan Event
	outs   chan Outcome
	// fatal carries a refused permission (kafka.IsACLError): asking again would be refused again, so the term
	// ends with it and the ticker stops, naming the permission, as for any other ACL it lacks.
	fatal chan error
	fold  *Fold // nil until loaded
	runs  map[string]*runState
	bad   map[string]*kgo.Record // invalid records, newest of their key, for leader 0 to dead-letter
	// more is set when a step left slots to emit that were due (it emits at most maxStepTicks a transaction);
	// waiting when a backfill waits for its pool or its schedule (the term steps again within retryAfter).
	more, waiting bool
	wg            sync.WaitGroup
	cancel        context.CancelFunc
	ctx           context.Context
}

// Event is the load (the fold of both topics) or one later record of the requests topic: see Runner.Events.
type Event struct {
	fold *Fold
	bad  map[string]*kgo.Record
	rec  *kgo.Record
}

// Outcome is the outcome of one backfill tick: see Runner.Outcomes.
type Outcome struct {
	backfill, id string
}

// runState is one backfill the term works through.
type runState struct {
	b      *Backfill
	hash   string // the request the run works through (Backfill.RequestHash when it began)
	next   int
	shards int
	pool   string
	limit  string // the schedule's limit when the run began: its ticks count against it (on its partition)
	// pending maps the tick IDs emitted without an outcome to their slot index; left counts them per index, and
	// emitted says when each index was emitted.
	pending  map[string]int
	left     map[int]int
	emitted  map[int]time.Time
	stop     context.CancelFunc // ends its outcome follower (nil: none yet, its pool was not ready)
	since    time.Time          // where its outcome follower starts
	waitPool bool               // logged that its pool is not ready
}

// retryAfter is how long the runner waits before reading its topics again after a failure.
const retryAfter = 5 * time.Second

// outcomeLookback is how far before a backfill's oldest running slot was emitted its outcome follower starts
// reading: more than any clock skew between the leader and the workers.
const outcomeLookback = 10 * time.Minute

// maxStepTicks bounds the ticks of one backfill transaction (a backfill of 100 running slots of a schedule of
// 1,024 shards would be 102,400): the rest goes in the next ones.
const maxStepTicks = 5000

// keepEnded is how long an ended backfill stays on the topics (for --list and the change log's checks) before its
// leader deletes its records.
const keepEnded = 30 * 24 * time.Hour

// deletedAfter is how long a backfill waits for its schedule to appear before it ends as of a deleted schedule:
// the requests topic and the schedules topic are read apart, so a request may be read before the schedule
// written just before it.
const deletedAfter = time.Minute

// NewRunner returns the Runner of a term. Start starts it.
func NewRunner(cfg Config, term Term) *Runner {
	return &Runner{cfg: cfg, term: term, events: make(chan Event, 64), outs: make(chan Outcome, 256),
		fatal: make(chan error, 1), runs: map[string]*runState{}}
}

// Start launches the goroutine that reads the topics; Stop (a closer of the term) ends every goroutine and waits
// for them.
func (b *Runner) Start(ctx context.Context) {
	b.ctx, b.cancel = context.WithCancel(ctx)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.readRequests(b.ctx)
	}()
}

// Stop ends the runner's goroutines and waits for them.
func (b *Runner) Stop() {
	if b.cancel != nil {
		b.cancel()
	}
	b.wg.Wait()
	b.cfg.Metrics.active.Sub(float64(len(b.runs)))
	b.runs = map[string]*runState{}
}

// Events carries the load, then every later record of the requests topic: the term's loop hands each to
// TakeEvent, then steps.
func (b *Runner) Events() <-chan Event { return b.events }

// Outcomes carries the outcomes of backfill ticks: the term's loop hands each to TakeOutcomes, then steps.
func (b *Runner) Outcomes() <-chan Outcome { return b.outs }

// Fatal carries an error that ends the term (a refused permission).
func (b *Runner) Fatal() <-chan error { return b.fatal }

// TakeEvent takes an event of the reading goroutine: the load, or a later record of the requests topic.
func (b *Runner) TakeEvent(ev Event) {
	if ev.fold != nil {
		b.fold, b.bad = ev.fold, ev.bad
		return
	}
	if b.fold != nil { // always: the load comes first on the channel
		b.foldRequest(b.fold, b.bad, ev.rec, true)
	}
}

// TakeOutcomes takes the outcome o and every other one waiting, so that a burst of outcomes makes one step.
func (b *Runner) TakeOutcomes(o Outcome) {
	b.countOutcome(o)
	for {
		select {
		case o := <-b.outs:
			b.countOutcome(o)
		default:
			return
		}
	}
}

// Wake returns how soon the term's loop must step again (false: only on an event).
func (b *Runner) Wake() (time.Duration, bool) {
	switch {
	case b.more:
		return 0, true
	case b.waiting:
		return retryAfter, true
	}
	return 0, false
}

// beginRun starts working through bf from its committed progress. e is its schedule (known: it exists).
func (b *Runner) beginRun(bf *Backfill, e store.Entry, known bool, now time.Time) *runState {
	req := &bf.Request
	run := &runState{b: bf, hash: bf.RequestHash, pending: map[string]int{}, left: map[int]int{}, emitted: map[int]time.Time{}, shards: 1}
	if known {
		run.shards, run.pool, run.limit = e.Schedule.Shards(), e.Schedule.Pool(), e.Schedule.Limit()
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
	b.cfg.Metrics.active.Inc()
	b.cfg.Logger.Info("backfill taken", "backfill", req.ID, "schedule", req.Schedule, "slots", len(req.Slots), "next", run.next, "running", len(run.left))
	return run
}

// endRun forgets backfill id, ended and committed.
func (b *Runner) endRun(id string) {
	if run := b.runs[id]; run != nil {
		if run.stop != nil {
			run.stop()
		}
		delete(b.runs, id)
		b.cfg.Metrics.active.Dec()
	}
}

// running lists the slot indices without an outcome, in order.
func (r *runState) running() []int {
	out := make([]int, 0, len(r.left))
	for i := range r.left {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// oldest is when the oldest slot without an outcome was emitted (zero: none).
func (r *runState) oldest() time.Time {
	var at time.Time
	for i := range r.left {
		if e := r.emitted[i]; at.IsZero() || e.Before(at) {
			at = e
		}
	}
	return at
}
