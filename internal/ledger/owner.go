package ledger

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// What the ledger tells an owner and its runs.
var (
	// ErrFenced: a claim of another worker followed the owner's (it starts nothing more).
	ErrFenced = errors.New("partition claimed by another worker (fenced)")
	// ErrSeized: another worker started the tick after this run's lease had run out.
	ErrSeized = errors.New("another worker took the tick over after this run's lease ran out")
)

// Owner is one worker's ownership of one partition's ledger: the protocol by which it takes the partition over
// (Takeover: claim, confirm), starts ticks (Start) and proves its runs alive (Renew), and its fold of the
// partition, which tells what happened to each tick. Its methods are safe for concurrent use.
//
// Log order fences: an entry that starts something stands only when no claim of another worker lies between
// its writer's claim and it, so a former owner that wakes up reads the new owner's claim before it could
// confirm any new start, and the runs it had started are over at most their lease after their last proof of
// life (InterruptedAt).
type Owner struct {
	lg        *Log
	partition int32
	onFenced  func()

	mu      sync.Mutex
	fold    *Fold
	reading bool          // Takeover has added the partition to the Log's reader
	readTo  int64         // the ledger offset after the last entry read
	fence   int64         // this owner's fencing token once its claim stands; 0 before
	claimAt time.Time     // when this owner's claim was acknowledged
	fenced  bool          // a claim of another worker followed this owner's claim
	changed chan struct{} // closed and replaced whenever the fold or readTo changes
	warned  map[Refusal]time.Time
	// wrongTick remembers the work offsets whose entries named another tick (counted once each).
	wrongTick map[int64]bool
	// retired is set once the owner no longer owns the partition and only waits for its runs.
	retired bool
	// own is this owner's reader when another owner of this worker still reads the partition (see Log.add).
	own *kgo.Client
}

// Refusals an Owner decides, beside the fold's.
const (
	RefusedWrongTick    Refusal = "wrong_tick"    // an entry names another tick for a work offset
	RefusedForeignClaim Refusal = "foreign_claim" // a claim of another worker while the group gives the owner the partition
)

// refusalWarnEvery is how often an owner warns about refused entries of one reason (each is counted).
const refusalWarnEvery = 10 * time.Second

// NewOwner returns an owner of partition p that reads nothing before Takeover. onFenced, when not nil, is called
// (it must not block) when a claim of another worker follows the owner's.
func (lg *Log) NewOwner(p int32, onFenced func()) *Owner {
	f := NewFold(p)
	f.Limit = 0 // until Takeover lists the work partition's end: no offset
	return &Owner{lg: lg, partition: p, onFenced: onFenced, fold: f, changed: make(chan struct{}), warned: map[Refusal]time.Time{}}
}

// Takeover makes this worker the owner of the partition in the ledger:
//
//  1. from pos (StartPosition: where the ledger starts mattering and the last fencing token), start reading;
//  2. write a claim with the next token and read the ledger up to the claim. Every entry before the claim is
//     now known; a claim of another worker in between with a higher token means ours did not stand, so claim
//     again above it; a claim after ours means a newer owner: ErrFenced.
//
// workEnd lists the work partition's end; it is called once each claim is acknowledged, and the fold takes the
// entries about work offsets below it (and those the owner raises the limit to: RaiseLimit). A takeover that
// failed may be tried again on the same Owner: once a try has started reading, the next goes on with that
// reader (which is past the entries the try read; a fresh reader would start with a fold that lacks them).
func (o *Owner) Takeover(ctx context.Context, pos Position, workEnd func(context.Context) (int64, error)) error {
	lg := o.lg
	begin := time.Now()
	o.mu.Lock()
	next := pos.Fence + 1
	if o.reading {
		next = max(next, o.fold.Fence+1)
	}
	o.mu.Unlock()
	for try := 0; ; try++ {
		if try == 5 {
			return fmt.Errorf("claiming partition %d: other claims kept winning", o.partition)
		}
		off, err := lg.Write(ctx, o.partition, ClaimKey(o.partition), o.claim(next))
		if err != nil {
			return fmt.Errorf("claiming partition %d: %w", o.partition, err)
		}
		ackAt := time.Now()
		// Listed once the claim stands: every entry before the claim is about a work record below this end.
		end, err := workEnd(ctx)
		if err != nil {
			return err
		}
		o.mu.Lock()
		start := !o.reading
		if start {
			o.reading, o.readTo = true, pos.From
			o.fold.BaseFence, o.fold.Floor = pos.Base, max(o.fold.Floor, pos.Floor)
		}
		o.fold.Limit = max(o.fold.Limit, end)
		o.mu.Unlock()
		if start {
			lg.add(o, pos.From)
		}
		if !o.waitRead(ctx, off, 30*time.Second) {
			return fmt.Errorf("claiming partition %d: reading the ledger up to the claim at offset %d: %w", o.partition, off, cmp.Or(ctx.Err(), errors.New("timed out")))
		}
		o.mu.Lock()
		won := o.fold.Owner == lg.cfg.Worker && o.fold.Fence == next && o.fold.ClaimOffset == off
		if won {
			o.fence, o.claimAt, o.fenced = next, ackAt, false
		}
		highest, latest := o.fold.Fence, o.fold.ClaimOffset
		pending := len(o.fold.Ticks)
		o.mu.Unlock()
		if !won && latest > off {
			// A claim landed after ours: a newer owner (we may be a worker that froze during its takeover).
			// Claiming above it would stop the real owner's work; give way instead.
			return fmt.Errorf("claiming partition %d: a newer claim follows ours: %w", o.partition, ErrFenced)
		}
		if won {
			lg.cfg.Metrics.Takeover.Observe(time.Since(begin).Seconds())
			lg.cfg.Logger.Debug("partition claimed", "partition", o.partition, "fence", next, "ledger_from", pos.From, "ledger_claim", off, "known_ticks", pending)
			return nil
		}
		next = highest + 1
	}
}

// claim is this owner's claim entry with token fence.
func (o *Owner) claim(fence int64) Entry {
	cfg := &o.lg.cfg
	return Entry{Kind: KindClaim, Partition: o.partition, Fence: fence, Worker: cfg.Worker, At: cfg.Now().UTC(), LeaseMS: cfg.Lease.Milliseconds()}
}

// Start writes e (a started entry, under the owner's token: Fence) and reads the ledger back up to it. It
// returns the instant up to which the run's lease then runs: the entry was appended after it was sent, no claim
// of another worker precedes it (else ErrFenced), and the fold took it.
func (o *Owner) Start(ctx context.Context, e Entry) (time.Time, error) {
	lease := o.lg.cfg.Lease
	sent := time.Now()
	off, err := o.lg.Write(ctx, o.partition, []byte(e.ID), e)
	if err != nil {
		return time.Time{}, fmt.Errorf("writing the %s entry of %s: %w", e.Kind, e.ID, err)
	}
	if !o.waitRead(ctx, off, lease) {
		return time.Time{}, fmt.Errorf("reading back the %s entry of %s: %w", e.Kind, e.ID, cmp.Or(ctx.Err(), errors.New("timed out")))
	}
	if o.Fenced() {
		return time.Time{}, ErrFenced
	}
	if !o.took(e) {
		return time.Time{}, fmt.Errorf("the %s entry of %s was written under token %d, no longer the owner's", e.Kind, e.ID, e.Fence)
	}
	return sent.Add(lease), nil
}

// Renew proves that the run started by e (this owner's started entry) is still alive, by writing a renewal of
// it and reading it back, and returns the lease's new end. The renewal stands when no other worker started the
// tick in between (else ErrSeized); who owns the partition does not matter (a run goes on after its partition
// moved to another worker).
func (o *Owner) Renew(ctx context.Context, e Entry) (time.Time, error) {
	cfg := &o.lg.cfg
	sent := time.Now()
	r := e
	r.Kind, r.At = KindRenewed, cfg.Now().UTC()
	off, err := o.lg.Write(ctx, o.partition, []byte(e.ID), r)
	if err != nil {
		return time.Time{}, err
	}
	if !o.waitRead(ctx, off, cfg.Lease) {
		return time.Time{}, cmp.Or(ctx.Err(), errors.New("timed out reading the renewal back"))
	}
	if !o.took(e) {
		return time.Time{}, ErrSeized
	}
	return sent.Add(cfg.Lease), nil
}

// took reports whether the fold took e, this owner's started entry: the tick's latest start is e's.
func (o *Owner) took(e Entry) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.fold.Tick(e.Offset, e.ID)
	return s != nil && s.Started && s.StartedBy == o.lg.cfg.Worker && s.StartedFence == e.Fence && s.Attempts == e.Attempt
}

// apply applies recs to the fold; known, when not nil, holds the entries this worker wrote itself (nil for the
// others, which are decoded).
func (o *Owner) apply(recs []*kgo.Record, known [][]Entry) {
	cfg := &o.lg.cfg
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, r := range recs {
		if r.Offset < o.readTo {
			continue // a refetch after remove and add
		}
		o.readTo = r.Offset + 1
		if r.Value == nil || IsBreachKey(r.Key) {
			continue // a tombstone (an operator's deletion; the ledger keeps what it has), or a breach (no entry)
		}
		var es []Entry
		if known != nil && known[i] != nil {
			es = known[i]
		} else {
			var err error
			if es, err = Entries(r.Value); err != nil {
				cfg.Metrics.Unreadable.Inc()
				cfg.Logger.Warn("unreadable ledger entry: ignored", "partition", r.Partition, "offset", r.Offset, "error", err)
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
			if why := o.fold.Apply(e, r.Offset, ts); why != "" {
				o.refusedLocked(why, "ledger_offset", r.Offset, "kind", e.Kind, "writer", e.Worker, "fence", e.Fence, "work_offset", e.Offset)
			}
		}
	}
	if o.fence > 0 && (o.fold.Owner != cfg.Worker || o.fold.Fence != o.fence) && !o.fenced {
		o.fenced = true
		if o.onFenced != nil {
			o.onFenced() // the owner's user looks into it before it decides anything more from the fold
		}
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

// refusedLocked counts a refused entry and warns about it, at most once per refusalWarnEvery and reason for the
// refusals no worker causes by itself. Called with o.mu held.
func (o *Owner) refusedLocked(why Refusal, attrs ...any) {
	if o.retired {
		return // an owner that only waits for its runs: the entries of the partition's next owners are no concern
	}
	cfg := &o.lg.cfg
	cfg.Metrics.Refused.WithLabelValues(string(why)).Inc()
	if !why.Hostile() && why != RefusedWrongTick && why != RefusedForeignClaim {
		return
	}
	now := time.Now()
	if now.Sub(o.warned[why]) < refusalWarnEvery {
		return
	}
	o.warned[why] = now
	cfg.Logger.Warn("ledger entry refused: it does not match what the log proves (counted in tickgroup_worker_ledger_refused_total)",
		append([]any{"partition", o.partition, "reason", string(why)}, attrs...)...)
}

// Disown sets aside the partition's latest claim, which the caller has shown to be forged (the group gives this
// worker the partition), with whatever was written under it, counts and warns about it, and returns the claim's
// writer and token. The caller claims again (Takeover).
func (o *Owner) Disown() (writer string, fence int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	writer, fence = o.fold.Owner, o.fold.Fence
	o.refusedLocked(RefusedForeignClaim, "writer", writer, "fence", fence)
	// Whatever it wrote under that claim (outcomes that would skip ticks, starts that would hold keys) no
	// longer counts.
	o.fold.Disown(writer, fence)
	return writer, fence
}

// Retire marks the owner as one that no longer owns the partition and only waits for its runs: refusals are no
// longer counted.
func (o *Owner) Retire() {
	o.mu.Lock()
	o.retired = true
	o.mu.Unlock()
}

// Close stops reading the partition for this owner.
func (o *Owner) Close() {
	o.mu.Lock()
	reading := o.reading
	o.mu.Unlock()
	if reading {
		o.lg.remove(o)
	}
}

// RaiseLimit lets the fold take entries about work offsets below limit (records the owner has fetched).
func (o *Owner) RaiseLimit(limit int64) {
	o.mu.Lock()
	o.fold.Limit = max(o.fold.Limit, limit)
	o.mu.Unlock()
}

// Changed returns a channel closed at the next change of the fold.
func (o *Owner) Changed() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Standing reports whether the owner's claim stands: it was read back as the latest, and no claim of another
// worker has followed it.
func (o *Owner) Standing() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fence > 0 && !o.fenced
}

// Fenced reports whether a claim of another worker followed the owner's.
func (o *Owner) Fenced() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fenced
}

// Fence is the owner's token (0 before its claim stands).
func (o *Owner) Fence() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.fence
}

// State returns a copy of what the ledger says about tick id at work offset off (nil: nothing), and a channel
// closed at the next change. Entries that name another tick for off are refused here (counted once per offset).
func (o *Owner) State(off int64, id string) (*TickState, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.fold.Tick(off, id)
	if o.fold.OtherIDs(off, id) && !o.wrongTickSeen(off) {
		o.refusedLocked(RefusedWrongTick, "work_offset", off, "tick_id", id)
	}
	if s == nil {
		return nil, o.changed
	}
	c := *s
	return &c, o.changed
}

// wrongTickSeen reports whether offset off's wrong-tick entries were counted already, and remembers that they
// were. Called with o.mu held.
func (o *Owner) wrongTickSeen(off int64) bool {
	if o.wrongTick == nil {
		o.wrongTick = map[int64]bool{}
	}
	if o.wrongTick[off] {
		return true
	}
	if len(o.wrongTick) > 10_000 {
		clear(o.wrongTick)
	}
	o.wrongTick[off] = true
	return false
}

// waitRead waits until the entry at ledger offset off has been read. It reports false when ctx ended or d
// passed.
func (o *Owner) waitRead(ctx context.Context, off int64, d time.Duration) bool {
	var timeout <-chan time.Time // made once a wait is needed: the entry is often read back already
	for {
		o.mu.Lock()
		done, ch := o.readTo > off, o.changed
		o.mu.Unlock()
		if done {
			return true
		}
		if timeout == nil {
			timer := time.NewTimer(d)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		case <-timeout:
			return false
		}
	}
}

// SeizedUntil returns, when the owner's start e took its tick from another worker's unfinished run, when that
// run's lease surely ran out: its last proof + its lease + the clock skew (this worker's lease when its own is
// unknown); zero otherwise.
func (o *Owner) SeizedUntil(e Entry) time.Time {
	cfg := &o.lg.cfg
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.fold.Tick(e.Offset, e.ID)
	if s == nil || s.SeizedAt.IsZero() || s.StartedBy != cfg.Worker || s.StartedFence != e.Fence {
		return time.Time{}
	}
	lease := s.SeizedLease
	if lease <= 0 {
		lease = cfg.Lease
	}
	return s.SeizedAt.Add(time.Millisecond + lease + cfg.MaxClockSkew)
}

// InterruptedAt is when a run of s that another worker (or an earlier owner of this one) started and did not
// finish is surely over, unless a renewal or its outcome arrives first: its lease runs at most the lease after
// its latest proof of life (its start or its latest renewal, by the timestamp its writer gave it and never later
// than when it was read), plus the clock skew between the hosts. A run of an older build renews its lease by
// claims, which stop proving anything once this owner's claim follows them: the partition's last proof under
// the run's token, up to this owner's claim, counts too. After a crash the last proof is about when the worker
// died, so the wait is mostly over by the time the session timeout has moved the partition.
func (o *Owner) InterruptedAt(s *TickState) time.Time {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.interruptedAtLocked(s)
}

// interruptedAtLocked is InterruptedAt with o.mu held.
func (o *Owner) interruptedAtLocked(s *TickState) time.Time {
	cfg := &o.lg.cfg
	from := s.ProofAt
	if proof, ok := o.fold.LastProof(s.StartedFence); ok {
		if proof.After(o.claimAt) {
			proof = o.claimAt
		}
		if proof.After(from) {
			from = proof
		}
	}
	from = from.Add(time.Millisecond) // record timestamps are whole milliseconds, cut down from the send instant
	lease := s.StartedLease
	if lease <= 0 {
		// A start of an older build (its lease is in its claim), read before any claim: what the old build assumed.
		lease = max(o.fold.OwnerLease, cfg.Lease)
	}
	return from.Add(lease + cfg.MaxClockSkew)
}

// RunningUntil returns, for tick id at work offset off, when the ledger shows it running (started, not
// finished, not released), when that run is surely over (InterruptedAt); zero when nothing runs it.
func (o *Owner) RunningUntil(off int64, id string) time.Time {
	o.mu.Lock()
	s := o.fold.Tick(off, id)
	if s == nil || !s.Running() || s.Outcome != nil {
		o.mu.Unlock()
		return time.Time{}
	}
	c := *s
	o.mu.Unlock()
	return o.InterruptedAt(&c)
}

// CommitMeta is the metadata of a commit of work offset next: where the next owner must read the ledger from
// (resumeFromLocked) and the owner's token. It is "" (commit nothing) before the owner's claim stands and once
// a claim of another worker followed it: a fenced owner's fold is no longer the partition's (it refuses the new
// owner's entries about records it never fetched), so a position taken from it could skip the new owner's
// claim and starts. Such a commit can still land: kgo sends a commit that waited for a rejoin under the new
// generation.
func (o *Owner) CommitMeta(next int64) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fence == 0 || o.fenced {
		return ""
	}
	return EncodeMeta(o.resumeFromLocked(next), o.fence)
}

// resumeFromLocked is the ledger offset a next owner must read from to learn everything about work offsets >=
// next: the first entry of any tick at or above next that the fold knows, or else the first entry not read yet.
// Called with o.mu held.
func (o *Owner) resumeFromLocked(next int64) int64 {
	from := o.readTo
	for off, s := range o.fold.Ticks {
		if off >= next {
			from = min(from, s.FirstAt)
		}
	}
	return from
}

// Forget drops the states of work offsets below next (committed).
func (o *Owner) Forget(next int64) {
	o.mu.Lock()
	o.fold.Forget(next)
	o.mu.Unlock()
}
