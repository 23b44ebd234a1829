package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
)

// What the ledger reports to a lane and its runs.
var (
	// errFenced: a claim of another worker followed the lane's (the lane starts nothing more).
	errFenced = errors.New("partition claimed by another worker (fenced)")
	// errNotStarted: the lane stopped starting records before this attempt started (nothing ran).
	errNotStarted = errors.New("not started: the lane no longer starts records")
	// errLeaseExpired: the run's lease could not be renewed in time.
	errLeaseExpired = errors.New("handler lease expired: the run could not be proven alive in the ledger")
	// errSeized: another worker started the tick after this run's lease had run out.
	errSeized = errors.New("another worker took the tick over after this run's lease ran out")
)

// tail reads the ledger partitions of the lanes this worker owns (results partition p is work partition p's
// ledger) and applies each entry to its lane's fold. It is one direct-assigned consumer for the whole worker:
// a lane adds its partition when it takes the partition over and removes it once its runs are over. A partition
// can have two lanes at once: one whose runs outlive a revocation, and a new one after it came back.
type tail struct {
	cl    *kgo.Client
	topic string
	w     *Worker

	mu    sync.Mutex
	lanes map[int32][]*laneLedger
	// own holds this worker's own entries (a record's: one, or a batch's), by partition and ledger offset, from
	// their acknowledgement until the tail reads them, so that it need not decode what it wrote; read is the
	// next offset to read.
	own  map[int32]map[int64][]ledger.Entry
	read map[int32]int64
	// batches holds this worker's batch records, by partition and record key, from before they are produced
	// until the tail reads them (their offset is not known before the acknowledgement, which may come after the
	// tail read the record).
	batches map[int32]map[string][]ledger.Entry
}

// maxOwn bounds the entries a tail remembers per partition.
const maxOwn = 100_000

// laneLedger is one lane's view of its partition's ledger.
type laneLedger struct {
	partition int32
	self      string

	mu      sync.Mutex
	fold    *ledger.Fold
	readTo  int64         // the ledger offset after the last entry read
	fence   int64         // this lane's fencing token once its claim stands; 0 before
	claimAt time.Time     // when this lane's claim was acknowledged
	fenced  bool          // a claim of another worker followed this lane's claim
	changed chan struct{} // closed and replaced whenever the fold or readTo changes
	warned  map[ledger.Refusal]time.Time
	lease   time.Duration // this worker's lease (Config.Lease)
	// wrongTick remembers the work offsets whose entries named another tick (counted once each).
	wrongTick map[int64]bool
	// retired is set once the lane no longer owns the partition and only waits for its runs.
	retired bool
	// onFenced, when set, is called (with mu held; it must not block) when a claim of another worker follows
	// the lane's.
	onFenced func()
	// own is this lane's reader when another lane of this worker still reads the partition (see tail.add).
	own *kgo.Client
}

// refusalWarnEvery is how often a lane warns about refused ledger entries of one reason (each is counted).
const refusalWarnEvery = 10 * time.Second

func newTail(cl *kgo.Client, w *Worker) *tail {
	return &tail{cl: cl, topic: w.names.Results, w: w, lanes: map[int32][]*laneLedger{}, own: map[int32]map[int64][]ledger.Entry{},
		read: map[int32]int64{}, batches: map[int32]map[string][]ledger.Entry{}}
}

// run applies ledger entries until ctx ends or the client is closed.
func (t *tail) run(ctx context.Context) {
	for {
		fetches := t.cl.PollFetches(ctx)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return
		}
		t.feed(fetches, func(ftp kgo.FetchTopicPartition) {
			t.mu.Lock()
			lls := slices.Clone(t.lanes[ftp.Partition])
			known := t.takeOwn(ftp.Partition, ftp.Records)
			t.mu.Unlock()
			for _, ll := range lls {
				ll.apply(ftp.Records, known, t.w)
			}
		})
	}
}

// feed logs the fetch errors of fetches and hands each partition's records, when there are any, to apply.
func (t *tail) feed(fetches kgo.Fetches, apply func(kgo.FetchTopicPartition)) {
	fetches.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.Canceled) {
			t.w.logger.Warn("ledger fetch error", "topic", topic, "partition", p, "error", err)
		}
	})
	fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if len(ftp.Records) > 0 {
			apply(ftp)
		}
	})
}

// takeOwn returns, for each of recs, the entry this worker wrote at its offset (nil: decode it), and moves the
// partition's read position past them. Called with t.mu held.
func (t *tail) takeOwn(p int32, recs []*kgo.Record) [][]ledger.Entry {
	t.read[p] = max(t.read[p], recs[len(recs)-1].Offset+1)
	own, batches := t.own[p], t.batches[p]
	if len(own) == 0 && len(batches) == 0 {
		return nil
	}
	known := make([][]ledger.Entry, len(recs))
	for i, r := range recs {
		if es, ok := own[r.Offset]; ok {
			known[i] = es
			delete(own, r.Offset)
		} else if es, ok := batches[string(r.Key)]; ok && ledger.IsBatchKey(r.Key) {
			known[i] = es
			delete(batches, string(r.Key))
		}
	}
	return known
}

// expectBatch keeps es, the entries of the batch record with key that this worker is about to write to
// partition p, for the tail to apply without decoding them; forgetBatch drops them when the write failed.
func (t *tail) expectBatch(p int32, key string, es []ledger.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	keepOwn(t, t.batches, p, key, es)
}

func (t *tail) forgetBatch(p int32, key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.batches[p], key)
}

// remember keeps es, the entries of the record acknowledged at ledger offset o of partition p, for the tail to
// apply without decoding them, unless the tail has read that offset already.
func (t *tail) remember(p int32, o int64, es []ledger.Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o >= t.read[p] {
		keepOwn(t, t.own, p, o, es)
	}
}

// keepOwn stores es under k in partition p's map of own entries in m, while the tail reads p and the map has
// room. Called with t.mu held.
func keepOwn[K comparable](t *tail, m map[int32]map[K][]ledger.Entry, p int32, k K, es []ledger.Entry) {
	if _, reading := t.lanes[p]; !reading {
		return
	}
	own := m[p]
	if own == nil {
		own = map[K][]ledger.Entry{}
		m[p] = own
	}
	if len(own) < maxOwn {
		for i := range es {
			es[i].V = ledger.Version
		}
		own[k] = es
	}
}

// add starts reading partition p's ledger at offset from for a new lane. The fold takes entries about work
// offsets in [floor, limit) (limit: the work partition's end when the lane's claim stood), and before the first
// claim it reads, entries with a token up to base (the committed offset's token; ledger.MaxFence when unknown).
func (t *tail) add(p int32, from int64, self string, base, floor, limit int64) *laneLedger {
	f := ledger.NewFold(p)
	f.BaseFence, f.Floor, f.Limit = base, floor, limit
	ll := &laneLedger{partition: p, self: self, fold: f, readTo: from, changed: make(chan struct{}), warned: map[ledger.Refusal]time.Time{},
		lease: t.w.cfg.Lease}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lanes[p]) > 0 {
		// Another lane of this worker still reads p (its runs outlived a revocation, and the partition came back).
		// The shared reader is past from, and a rewound one could still hand this lane a batch fetched before the
		// rewind, skipping what lies between: this lane reads p with a reader of its own until it is removed.
		cl, err := kgo.NewClient(append(t.w.conn[:len(t.w.conn):len(t.w.conn)],
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{t.topic: {p: kgo.NewOffset().At(from)}}),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchMaxPartitionBytes(1<<20))...)
		if err == nil {
			ll.own = cl
			go t.runOwn(ll)
			return ll
		}
		t.w.logger.Warn("a ledger reader of its own for a partition another lane still reads; waiting for that lane's runs", "partition", p, "error", err)
		for len(t.lanes[p]) > 0 { // rare: a client that cannot be made; the other lane ends with its runs
			t.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			t.mu.Lock()
		}
	}
	t.lanes[p] = append(t.lanes[p], ll)
	t.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{t.topic: {p: kgo.NewOffset().At(from)}})
	return ll
}

// runOwn feeds ll from its own reader until the reader is closed (remove).
func (t *tail) runOwn(ll *laneLedger) {
	for {
		fetches := ll.own.PollFetches(context.Background())
		if fetches.IsClientClosed() {
			return
		}
		t.feed(fetches, func(ftp kgo.FetchTopicPartition) { ll.apply(ftp.Records, nil, t.w) })
	}
}

// remove stops feeding ll, and reading its partition when no other lane needs it.
func (t *tail) remove(ll *laneLedger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ll.own != nil {
		ll.own.Close()
		return
	}
	lls := t.lanes[ll.partition]
	i := slices.Index(lls, ll)
	if i < 0 {
		return
	}
	lls = slices.Delete(lls, i, i+1)
	if len(lls) > 0 {
		t.lanes[ll.partition] = lls
		return
	}
	delete(t.lanes, ll.partition)
	delete(t.own, ll.partition)
	delete(t.batches, ll.partition)
	delete(t.read, ll.partition)
	t.cl.RemoveConsumePartitions(map[string][]int32{t.topic: {ll.partition}})
}

// apply applies recs to the fold; known, when not nil, holds the entries this worker wrote itself (nil for
// the others, which are decoded).
func (ll *laneLedger) apply(recs []*kgo.Record, known [][]ledger.Entry, w *Worker) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	for i, r := range recs {
		if r.Offset < ll.readTo {
			continue // a refetch after remove and add
		}
		ll.readTo = r.Offset + 1
		if r.Value == nil {
			continue // a tombstone (an operator's deletion); the ledger keeps what it has
		}
		var es []ledger.Entry
		if known != nil && known[i] != nil {
			es = known[i]
		} else {
			var err error
			if es, err = ledger.Entries(r.Value); err != nil {
				w.m.ledgerBad.Inc()
				w.logger.Warn("unreadable ledger entry: ignored", "partition", r.Partition, "offset", r.Offset, "error", err)
				continue
			}
		}
		// A record was written before it was read: a timestamp later than now is its writer's clock running
		// ahead (or a forged one), and must not stretch a run's lease.
		ts := r.Timestamp
		if now := time.Now(); ts.After(now) {
			ts = now
		}
		for _, e := range es { // a batch's entries count as if written one after the other at its offset
			if why := ll.fold.Apply(e, r.Offset, ts); why != "" {
				ll.refusedLocked(w, why, "ledger_offset", r.Offset, "kind", e.Kind, "writer", e.Worker, "fence", e.Fence, "work_offset", e.Offset)
			}
		}
	}
	if ll.fence > 0 && (ll.fold.Owner != ll.self || ll.fold.Fence != ll.fence) && !ll.fenced {
		ll.fenced = true
		if ll.onFenced != nil {
			ll.onFenced() // the lane looks into it before it decides anything more from the fold
		}
	}
	close(ll.changed)
	ll.changed = make(chan struct{})
}

// refusedLocked counts a refused entry and warns about it, at most once per refusalWarnEvery and reason for the
// refusals no worker causes by itself. Called with ll.mu held.
func (ll *laneLedger) refusedLocked(w *Worker, why ledger.Refusal, attrs ...any) {
	if ll.retired {
		return // a lane that only waits for its runs: the entries of the partition's next owners are no concern
	}
	w.m.ledgerRefused.WithLabelValues(string(why)).Inc()
	if !why.Hostile() && why != refusedWrongTick && why != refusedForeignClaim {
		return
	}
	now := time.Now()
	if now.Sub(ll.warned[why]) < refusalWarnEvery {
		return
	}
	ll.warned[why] = now
	w.logger.Warn("ledger entry refused: it does not match what the log proves (counted in tickgroup_worker_ledger_refused_total)",
		append([]any{"partition", ll.partition, "reason", string(why)}, attrs...)...)
}

// Refusals the lane decides, beside the fold's.
const (
	refusedWrongTick    ledger.Refusal = "wrong_tick"
	refusedForeignClaim ledger.Refusal = "foreign_claim"
)

// retire marks the lane as one that only waits for its runs.
func (ll *laneLedger) retire() {
	ll.mu.Lock()
	ll.retired = true
	ll.mu.Unlock()
}

// raiseLimit lets the fold take entries about work offsets below limit (records the lane has fetched).
func (ll *laneLedger) raiseLimit(limit int64) {
	ll.mu.Lock()
	ll.fold.Limit = max(ll.fold.Limit, limit)
	ll.mu.Unlock()
}

// changedCh returns a channel closed at the next change of the fold.
func (ll *laneLedger) changedCh() <-chan struct{} {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	return ll.changed
}

// seizedUntil returns, when this lane's start e took its tick from another worker's unfinished run, when that
// run's lease surely ran out: its last proof + its lease + skew (this worker's lease when its own is unknown);
// zero otherwise.
func (ll *laneLedger) seizedUntil(e ledger.Entry, skew time.Duration) time.Time {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	s := ll.fold.Tick(e.Offset, e.ID)
	if s == nil || s.SeizedAt.IsZero() || s.StartedBy != ll.self || s.StartedFence != e.Fence {
		return time.Time{}
	}
	lease := s.SeizedLease
	if lease <= 0 {
		lease = ll.lease
	}
	return s.SeizedAt.Add(time.Millisecond + lease + skew)
}

// waitRead waits until the entry at ledger offset o has been read. It reports false when ctx ended or d passed.
func (ll *laneLedger) waitRead(ctx context.Context, o int64, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		ll.mu.Lock()
		done, ch := ll.readTo > o, ll.changed
		ll.mu.Unlock()
		if done {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-timer.C:
			return false
		}
	}
}

// state returns a copy of what the ledger says about tick id at work offset o (nil: nothing), and a channel
// closed at the next change. Entries that name another tick for o are refused here (counted once per offset).
func (ll *laneLedger) state(w *Worker, o int64, id string) (*ledger.TickState, <-chan struct{}) {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	s := ll.fold.Tick(o, id)
	if ll.fold.OtherIDs(o, id) && !ll.wrongTickSeen(o) {
		ll.refusedLocked(w, refusedWrongTick, "work_offset", o, "tick_id", id)
	}
	if s == nil {
		return nil, ll.changed
	}
	c := *s
	return &c, ll.changed
}

// wrongTickSeen reports whether offset o's wrong-tick entries were counted already, and remembers that they
// were. Called with ll.mu held.
func (ll *laneLedger) wrongTickSeen(o int64) bool {
	if ll.wrongTick == nil {
		ll.wrongTick = map[int64]bool{}
	}
	if ll.wrongTick[o] {
		return true
	}
	if len(ll.wrongTick) > 10_000 {
		clear(ll.wrongTick)
	}
	ll.wrongTick[o] = true
	return false
}

func (ll *laneLedger) isFenced() bool {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	return ll.fenced
}

// commitMeta is the commit metadata for next ("" before the lane's claim stands).
func (ll *laneLedger) commitMeta(next int64) string {
	ll.mu.Lock()
	fence := ll.fence
	ll.mu.Unlock()
	if fence == 0 {
		return ""
	}
	return encodeMeta(ll.resumeFrom(next), fence)
}

// resumeFrom is the ledger offset a next owner must read from to learn everything about work offsets >= next:
// the first entry of any tick at or above next that the fold knows, or else the first entry not read yet.
func (ll *laneLedger) resumeFrom(next int64) int64 {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	from := ll.readTo
	for o, s := range ll.fold.Ticks {
		if o >= next {
			from = min(from, s.FirstAt)
		}
	}
	return from
}

// forget drops the states of committed work offsets.
func (ll *laneLedger) forget(next int64) {
	ll.mu.Lock()
	ll.fold.Forget(next)
	ll.mu.Unlock()
}

// Commit metadata. Each commit of a work partition carries, in the offset's metadata, where its ledger must be
// read from and the committing lane's fencing token: "tickgroup-ledger/1 from=<offset> fence=<token>".
const metaPrefix = "tickgroup-ledger/1"

func encodeMeta(from, fence int64) string {
	return metaPrefix + " from=" + strconv.FormatInt(from, 10) + " fence=" + strconv.FormatInt(fence, 10)
}

// parseMeta reads commit metadata; ok is false for metadata of another kind (a commit by an older build, by
// forward mode, or by a tool).
func parseMeta(s string) (from, fence int64, ok bool) {
	fields := strings.Fields(s)
	if len(fields) != 3 || fields[0] != metaPrefix {
		return 0, 0, false
	}
	f, err1 := strconv.ParseInt(strings.TrimPrefix(fields[1], "from="), 10, 64)
	g, err2 := strconv.ParseInt(strings.TrimPrefix(fields[2], "fence="), 10, 64)
	if err1 != nil || err2 != nil || f < 0 || g < 0 {
		return 0, 0, false
	}
	return f, g, true
}

// withCommitMeta returns ctx with a pre-commit hook that sets each partition's metadata from meta.
func withCommitMeta(ctx context.Context, topic string, meta map[int32]string) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return kgo.PreCommitFnContext(ctx, func(req *kmsg.OffsetCommitRequest) error {
		for i := range req.Topics {
			if req.Topics[i].Topic != topic {
				continue
			}
			for j := range req.Topics[i].Partitions {
				if m, ok := meta[req.Topics[i].Partitions[j].Partition]; ok && m != "" {
					req.Topics[i].Partitions[j].Metadata = &m
				}
			}
		}
		return nil
	})
}

// takeover makes this lane the owner of its partition in the ledger:
//
//  1. read the partition's committed metadata: where its ledger starts mattering and the last fencing token;
//  2. start reading the ledger there;
//  3. write a claim with the next token and read the ledger up to the claim. Every entry before the claim is
//     now known; a claim of another worker in between with a higher token means ours did not stand, so claim
//     again above it.
//
// From then on, log order fences: a former owner that wakes up reads our claim before it could confirm any new
// start, and the ticks it had started are over at most its lease after our claim (see interruptedWait).
func (l *lane) takeover(ctx context.Context) error {
	w := l.w
	st, err := w.ledgerStart(ctx, l.partition)
	if err != nil {
		return err
	}
	// A retried takeover goes on with the ledger reader of the first try: the tail consumer is already past
	// the entries that try read, so a fresh reader would start with a fold that lacks them (re-adding a
	// partition that is being consumed does not rewind it).
	ll := l.ledger
	begin := time.Now()
	next := st.fence + 1
	if ll != nil {
		ll.mu.Lock()
		next = max(next, ll.fold.Fence+1)
		ll.mu.Unlock()
	}
	for try := 0; ; try++ {
		if try == 5 {
			return fmt.Errorf("claiming partition %d: other claims kept winning", l.partition)
		}
		o, err := w.writeLedger(ctx, l.partition, ledger.ClaimKey(l.partition), l.claim(next))
		if err != nil {
			return fmt.Errorf("claiming partition %d: %w", l.partition, err)
		}
		ackAt := time.Now()
		// Listed once the claim stands: every entry before the claim is about a work record below this end.
		end, err := w.workEnd(ctx, l.partition)
		if err != nil {
			return err
		}
		if ll == nil {
			ll = w.tail.add(l.partition, st.from, w.cfg.WorkerID, st.base, st.floor, end)
			ll.mu.Lock()
			ll.onFenced = l.wakeUp
			ll.mu.Unlock()
			w.mu.Lock() // the committer reads it (commitMeta)
			l.ledger = ll
			w.mu.Unlock()
		} else {
			ll.raiseLimit(end)
		}
		if !ll.waitRead(ctx, o, 30*time.Second) {
			return fmt.Errorf("claiming partition %d: reading the ledger up to the claim at offset %d: %w", l.partition, o, cmp.Or(ctx.Err(), errors.New("timed out")))
		}
		ll.mu.Lock()
		won := ll.fold.Owner == w.cfg.WorkerID && ll.fold.Fence == next && ll.fold.ClaimOffset == o
		if won {
			ll.fence, ll.claimAt, ll.fenced = next, ackAt, false
		}
		highest, latest := ll.fold.Fence, ll.fold.ClaimOffset
		pending := len(ll.fold.Ticks)
		ll.mu.Unlock()
		if !won && latest > o {
			// A claim landed after ours: a newer owner (we may be a worker that froze during its takeover).
			// Claiming above it would stop the real owner's lane; give way instead.
			return fmt.Errorf("claiming partition %d: a newer claim follows ours: %w", l.partition, errFenced)
		}
		if won {
			w.m.takeover.Observe(time.Since(begin).Seconds())
			w.logger.Debug("partition claimed", "partition", l.partition, "fence", next, "ledger_from", st.from, "ledger_claim", o, "known_ticks", pending)
			return nil
		}
		next = highest + 1
	}
}

// ledgerPos is where a new owner of a work partition starts reading its ledger, from the committed offset.
type ledgerPos struct {
	from  int64 // the ledger offset to read from
	fence int64 // the committing owner's token (0: unknown)
	base  int64 // the highest token the entries before the first claim read may carry (ledger.MaxFence: any)
	floor int64 // the committed work offset: entries about offsets below it do not matter
}

// ledgerStart returns where partition p's ledger must be read from, from its committed metadata. Without such
// metadata (a group that an older build committed, or a new one), the whole retained ledger partition is read.
func (w *Worker) ledgerStart(ctx context.Context, p int32) (ledgerPos, error) {
	adm := kadm.NewClient(w.client())
	resp, err := adm.FetchOffsets(ctx, w.names.WorkerGroup)
	if err != nil {
		return ledgerPos{}, fmt.Errorf("fetching the committed offset of partition %d: %w", p, err)
	}
	pos := ledgerPos{base: ledger.MaxFence}
	if o, ok := resp.Lookup(w.names.Work, p); ok && o.Err == nil {
		pos.floor = max(o.At, 0)
		if from, fence, ok := parseMeta(o.Metadata); ok {
			pos.from, pos.fence, pos.base = from, fence, fence
			return pos, nil
		}
	}
	starts, err := adm.ListStartOffsets(ctx, w.names.Results)
	if err != nil {
		return ledgerPos{}, fmt.Errorf("listing the start of ledger partition %d: %w", p, err)
	}
	lo, ok := starts.Lookup(w.names.Results, p)
	if !ok || lo.Err != nil {
		return ledgerPos{}, fmt.Errorf("listing the start of ledger partition %d: %w", p, cmp.Or(lo.Err, errors.New("partition not listed")))
	}
	// A new group (or one whose offsets were lost, or committed by an older build) learns its ledger from the
	// whole retained partition: slow only when the results topic is old and busy.
	w.logger.Debug("no ledger position in the committed offset: reading the whole ledger partition", "partition", p, "from", lo.Offset)
	pos.from = lo.Offset
	return pos, nil
}

// workEnd returns the end offset of work partition p.
func (w *Worker) workEnd(ctx context.Context, p int32) (int64, error) {
	ends, err := kadm.NewClient(w.client()).ListEndOffsets(ctx, w.names.Work)
	if err != nil {
		return 0, fmt.Errorf("listing the end of work partition %d: %w", p, err)
	}
	lo, ok := ends.Lookup(w.names.Work, p)
	if !ok || lo.Err != nil {
		return 0, fmt.Errorf("listing the end of work partition %d: %w", p, cmp.Or(lo.Err, errors.New("partition not listed")))
	}
	return lo.Offset, nil
}

// writeLedger writes e to partition p's ledger and returns its ledger offset once acknowledged. A claim is a
// record of its own; other entries may share a batch record (ledgerOut).
func (w *Worker) writeLedger(ctx context.Context, p int32, key []byte, e ledger.Entry) (int64, error) {
	if e.Kind != ledger.KindClaim {
		return w.out.write(ctx, p, key, e)
	}
	r := &kgo.Record{Topic: w.names.Results, Partition: p, Key: key, Value: ledger.Encode(e)}
	if err := w.prod.ProduceSync(ctx, r).FirstErr(); err != nil {
		return 0, kafka.NeedACL(err, "Write", "topic", w.names.Results)
	}
	w.tail.remember(p, r.Offset, []ledger.Entry{e})
	return r.Offset, nil
}

// confirm writes e (a started entry) and reads the ledger back up to it. It reports the instant up to which the
// lease may then run: the entry was appended after it was sent, no claim of another worker precedes it, and the
// fold took it (it was written under the lane's token of the time).
func (l *lane) confirm(ctx context.Context, e ledger.Entry) (time.Time, error) {
	w := l.w
	sent := time.Now()
	o, err := w.writeLedger(ctx, l.partition, []byte(e.ID), e)
	if err != nil {
		return time.Time{}, fmt.Errorf("writing the %s entry of %s: %w", e.Kind, e.ID, err)
	}
	if !l.ledger.waitRead(ctx, o, w.cfg.Lease) {
		return time.Time{}, fmt.Errorf("reading back the %s entry of %s: %w", e.Kind, e.ID, cmp.Or(ctx.Err(), errors.New("timed out")))
	}
	if l.ledger.isFenced() {
		return time.Time{}, errFenced
	}
	if !l.ledger.took(e) {
		return time.Time{}, fmt.Errorf("the %s entry of %s was written under token %d, no longer the lane's", e.Kind, e.ID, e.Fence)
	}
	return sent.Add(w.cfg.Lease), nil
}

// took reports whether the fold took e, this lane's started entry: the tick's latest start is e's.
func (ll *laneLedger) took(e ledger.Entry) bool {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	s := ll.fold.Tick(e.Offset, e.ID)
	return s != nil && s.Started && s.StartedBy == ll.self && s.StartedFence == e.Fence && s.Attempts == e.Attempt
}

// currentFence is the lane's token.
func (ll *laneLedger) currentFence() int64 {
	ll.mu.Lock()
	defer ll.mu.Unlock()
	return ll.fence
}

// foreignClaim handles a claim of another worker that followed this lane's: when the group, stable, still
// assigns the partition to this worker, the claim cannot be a real owner's (a new owner gets the partition
// only after this worker lost it), so it is counted, warned about, and the lane claims the partition again,
// above it; it then reports true. It reports false when the group does not, or cannot be shown to, assign the
// partition to this worker: the lane then gives way. Concurrent callers claim once.
func (l *lane) foreignClaim(ctx context.Context) bool {
	w := l.w
	l.reclaimMu.Lock()
	defer l.reclaimMu.Unlock()
	if !l.ledger.isFenced() {
		return true // claimed again meanwhile
	}
	failures := 0
	for try := 1; ; try++ {
		ours, err := w.groupAssigns(ctx, l.partition)
		switch {
		case errors.Is(err, errGroupUnsettled):
			// A rebalance is under way: it settles who owns the partition, however long it takes.
		case err != nil:
			w.logger.Warn("describing the worker group after a claim of another worker", "partition", l.partition, "error", err)
			if failures++; failures >= 5 {
				return false
			}
		case ours:
			ll := l.ledger
			ll.mu.Lock()
			owner, fence := ll.fold.Owner, ll.fold.Fence
			ll.refusedLocked(w, refusedForeignClaim, "writer", owner, "fence", fence)
			// Whatever it wrote under that claim (outcomes that would skip ticks, starts that would hold keys)
			// no longer counts.
			ll.fold.Disown(owner, fence)
			ll.mu.Unlock()
			if err := l.takeover(ctx); err == nil {
				w.logger.Warn("a claim of another worker followed this worker's while the group assigns it the partition: claimed again",
					"partition", l.partition, "foreign_writer", owner, "foreign_fence", fence, "fence", ll.currentFence())
				return true
			} else if ctx.Err() != nil {
				return false
			}
		default:
			return false // the stable group gives the partition to another member: a real owner's claim
		}
		if !sleep(ctx, w.backoff(min(try, 5))) {
			return false
		}
	}
}

// errGroupUnsettled: the worker group is rebalancing; who owns what is not known yet.
var errGroupUnsettled = errors.New("worker group not stable")

// groupAssigns reports whether the worker group, stable, assigns work partition p to this worker's member
// (errGroupUnsettled: the group is not stable).
func (w *Worker) groupAssigns(ctx context.Context, p int32) (bool, error) {
	cl := w.client()
	member, _ := cl.GroupMetadata()
	described, err := kadm.NewClient(cl).DescribeGroups(ctx, w.names.WorkerGroup)
	if err != nil {
		return false, err
	}
	g, ok := described[w.names.WorkerGroup]
	if !ok || g.Err != nil {
		return false, cmp.Or(g.Err, errors.New("group not described"))
	}
	if g.State != "Stable" {
		return false, errGroupUnsettled
	}
	for _, m := range g.Members {
		if m.MemberID != member {
			continue
		}
		c, ok := m.Assigned.AsConsumer()
		if !ok {
			return false, nil
		}
		for _, t := range c.Topics {
			if t.Topic == w.names.Work && slices.Contains(t.Partitions, p) {
				return true, nil
			}
		}
	}
	return false, nil
}

// claim is this lane's claim entry with token fence (a renewal repeats the lane's own token).
func (l *lane) claim(fence int64) ledger.Entry {
	w := l.w
	return ledger.Entry{Kind: ledger.KindClaim, Partition: l.partition, Fence: fence, Worker: w.cfg.WorkerID,
		At: w.cfg.Now().UTC(), LeaseMS: w.cfg.Lease.Milliseconds()}
}

// renewRun proves that the run started by e (this lane's started entry) is still alive, by writing a renewal
// of it and reading it back: it stands when no other worker started the tick in between.
func (l *lane) renewRun(ctx context.Context, e ledger.Entry) (time.Time, error) {
	w := l.w
	sent := time.Now()
	r := e
	r.Kind, r.At = ledger.KindRenewed, w.cfg.Now().UTC()
	o, err := w.writeLedger(ctx, l.partition, []byte(e.ID), r)
	if err != nil {
		return time.Time{}, err
	}
	if !l.ledger.waitRead(ctx, o, w.cfg.Lease) {
		return time.Time{}, cmp.Or(ctx.Err(), errors.New("timed out reading the renewal back"))
	}
	if !l.ledger.took(e) {
		return time.Time{}, errSeized
	}
	return sent.Add(w.cfg.Lease), nil
}

// keepLease renews ls, the lease of the run started by e, while it runs, until ctx ends. When the lease cannot
// be renewed before it ends, or another worker took the tick over, it cancels the attempt (an exec handler's
// supervisor kills the process group at the lease's end by itself, even if this process is frozen). The
// partition's ownership does not matter: a run goes on after its partition moved to another worker.
//
// It is called a renewal period after the attempt's start (renewEvery) and renews at once, then every period.
func (l *lane) keepLease(ctx context.Context, e ledger.Entry, ls *lease, cancel context.CancelCauseFunc) {
	ticker := time.NewTicker(l.renewEvery())
	defer ticker.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		rctx, rcancel := context.WithDeadline(ctx, ls.Deadline())
		until, err := l.renewRun(rctx, e)
		rcancel()
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errSeized):
			l.w.logger.Warn("another worker took the tick over: cancelling the run", "partition", l.partition, "tick_id", e.ID)
			cancel(errSeized)
			return
		case err == nil:
			ls.extend(until)
		case time.Now().After(ls.Deadline()):
			l.w.logger.Warn("handler lease expired: cancelling the attempt", "partition", l.partition, "error", err)
			cancel(errLeaseExpired)
			return
		}
	}
}

// renewEvery is how often a running handler's lease is renewed: a fifth of the lease.
func (l *lane) renewEvery() time.Duration { return max(l.w.cfg.Lease/5, 10*time.Millisecond) }

// interruptedWait is when a run of s that another worker (or an earlier lane of this one) started and did not
// finish is surely over, unless a renewal or its outcome arrives first: its lease runs at most the lease after
// its latest proof of life (its start or its latest renewal, by the timestamp its writer gave it and never later
// than when it was read), plus the clock skew between the hosts. A run of an older build renews its lease by
// claims, which stop proving anything once this lane's claim follows them: the partition's last proof under
// the run's token, up to this lane's claim, counts too. After a crash the last proof is about when the worker
// died, so the wait is mostly over by the time the session timeout has moved the partition.
func (l *lane) interruptedWait(s *ledger.TickState) time.Time {
	ll := l.ledger
	ll.mu.Lock()
	defer ll.mu.Unlock()
	from := s.ProofAt
	if proof, ok := ll.fold.LastProof(s.StartedFence); ok {
		if proof.After(ll.claimAt) {
			proof = ll.claimAt
		}
		if proof.After(from) {
			from = proof
		}
	}
	from = from.Add(time.Millisecond) // record timestamps are whole milliseconds, cut down from the send instant
	lease := s.StartedLease
	if lease <= 0 {
		// A start of an older build (its lease is in its claim), read before any claim: what the old build assumed.
		lease = max(ll.fold.OwnerLease, l.w.cfg.Lease)
	}
	return from.Add(lease + l.w.cfg.MaxClockSkew)
}

// formerRunUntil returns, for a due record whose tick the ledger shows running elsewhere (started, not
// finished, not released), when that run is surely over; zero when nothing runs it. Called with w.mu held.
func (l *lane) formerRunUntil(it *item) time.Time {
	id := it.t.ID
	if it.err != nil {
		return time.Time{}
	}
	ll := l.ledger
	ll.mu.Lock()
	s := ll.fold.Tick(it.rec.Offset, id)
	if s == nil || !s.Started || s.Outcome != nil {
		ll.mu.Unlock()
		return time.Time{}
	}
	c := *s
	ll.mu.Unlock()
	return l.interruptedWait(&c)
}
