package ledger

import (
	"math"
	"slices"
	"time"
)

// Bounds on what an entry may say. The ledger is a topic that any principal with Write on it can append to, so
// the fold refuses what no worker of this build writes, rather than letting one record block or hide a tick.
const (
	// MaxFence is the highest fencing token a claim may carry (a claim adds one per takeover: no real
	// partition gets near it).
	MaxFence = 1 << 48
	// MaxFenceStep is how far above the highest token seen a claim may go: a worker claims one above the
	// highest token it read.
	MaxFenceStep = 1 << 16
	// MaxLease is the longest handler lease a claim may announce (the longest a worker may be configured with).
	MaxLease = 10 * time.Minute
	// MaxIDsPerOffset bounds the tick IDs the fold keeps for one work offset: one is the real one, the others
	// come from entries that named the wrong tick.
	MaxIDsPerOffset = 3
	// maxProofs bounds the fencing tokens whose last proof the fold remembers.
	maxProofs = 64
)

// Refusal says why Fold.Apply did not apply an entry ("" when it did).
type Refusal string

// Refusals. RefusedStale, RefusedNotOwner and RefusedDone happen without any hostile writer (a worker that froze
// and woke up writes stale claims and starts); the others do not.
const (
	RefusedPartition Refusal = "other_partition"    // the entry names another work partition
	RefusedStale     Refusal = "stale_claim"        // a claim at or below the highest token of another worker
	RefusedFence     Refusal = "fence_out_of_range" // a token beyond MaxFence or far above the highest seen
	RefusedLease     Refusal = "lease_out_of_range" // a lease beyond MaxLease or negative
	RefusedNotOwner  Refusal = "not_owner"          // neither the partition's owner of the time nor the tick's runner
	RefusedOffset    Refusal = "offset_out_of_range"
	RefusedDone      Refusal = "after_outcome" // a second outcome, or a start or release after the outcome
	RefusedIDs       Refusal = "too_many_ids"  // more than MaxIDsPerOffset tick IDs for one work offset
	RefusedDisowned  Refusal = "disowned"      // written under a claim shown to be forged (Disown)
)

// Hostile reports whether r is a refusal that no worker of this build causes by itself.
func (r Refusal) Hostile() bool {
	switch r {
	case "", RefusedStale, RefusedNotOwner, RefusedDone:
		return false
	}
	return true
}

// TickState is what the ledger says about one tick at one work offset.
type TickState struct {
	Offset int64
	ID     string
	// FirstAt is the ledger offset of the tick's first entry.
	FirstAt int64
	// Attempts is the highest attempt number started.
	Attempts int
	// Started is set when an attempt started and neither an outcome nor a release (but for a retry) followed it.
	Started bool
	// Retrying is set when the runner of the latest attempt said that it failed and that another follows (a
	// release marked Retry): nothing runs the tick and nothing was cut off. The next start clears it, and so does
	// a renewal of the attempt (the run is alive: the retry was not its runner's).
	Retrying bool
	// StartedBy is the worker of the latest started attempt, StartedFence its fencing token and StartedLease
	// the lease its claim announced.
	StartedBy    string
	StartedFence int64
	StartedLease time.Duration
	// Limit is the limit the latest started attempt named (Entry.Limit).
	Limit string
	// ProofAt is the latest sign of life of the latest attempt's run: the timestamp of its start or of its
	// runner's latest renewal (capped by the reader at the instant it read the entry). The run's lease ends at
	// most StartedLease after it.
	ProofAt time.Time
	// SeizedAt and SeizedLease are, when the latest start took the tick from another worker's unfinished
	// run, that run's last proof and lease: the new run must not start its handler before they ran out.
	SeizedAt    time.Time
	SeizedLease time.Duration
	// Released is set when the latest attempt was cut off and its process is known to be gone.
	Released bool
	// marks are the writers of the entries that say an attempt of the tick was cut off, or followed one that
	// was (a release, or a start or retry marked Interrupted): the tick counts as interrupted until its
	// outcome, whatever came after. Disown drops the marks of the writer it disowns.
	marks []writer
	// Outcome is the tick's final entry, if any.
	Outcome *Entry

	other *TickState // another tick ID that entries named for this offset
}

// Finished reports whether the tick has a final outcome.
func (s *TickState) Finished() bool { return s.Outcome != nil }

// Running reports whether an attempt started and may still run: no outcome, release or retry followed it.
func (s *TickState) Running() bool { return s.Started && !s.Retrying }

// Interrupted reports whether the tick, not finished, had an attempt cut off (released, or started and not
// ended: a run of a worker that died or froze) or followed one that was.
func (s *TickState) Interrupted() bool {
	return s.Outcome == nil && (s.Running() || len(s.marks) > 0)
}

// mark records that e, by its writer, says an attempt of the tick was cut off or followed one that was.
func (s *TickState) mark(e Entry) {
	w := writer{e.Worker, e.Fence}
	if !slices.Contains(s.marks, w) {
		s.marks = append(slices.Clip(s.marks), w)
	}
}

// Fold is the state of one work partition as its ledger tells it, built by applying the partition's entries in
// log order.
type Fold struct {
	Partition int32
	// Fence is the highest fencing token claimed so far; Owner the worker that claimed it, ClaimOffset the
	// ledger offset of that claim (-1: no claim read yet) and OwnerLease the lease it announced.
	Fence       int64
	Owner       string
	ClaimOffset int64
	OwnerLease  time.Duration
	// BaseFence is the token of the owner that committed the offset the fold was read from (from the commit's
	// metadata): before the first claim it reads, the fold takes entries with a token up to BaseFence. NewFold
	// sets MaxFence (nothing known: every token).
	BaseFence int64
	// Floor and Limit bound the work offsets the fold keeps: entries about offsets below Floor (committed past)
	// are dropped quietly, those at or above Limit (records that did not exist when the reader started, or
	// that it has not fetched) are refused. NewFold sets 0 and no limit.
	Floor, Limit int64
	// Ticks maps work offsets to their states.
	Ticks map[int64]*TickState

	proofs   map[int64]time.Time // token -> the latest timestamp of a claim, renewal or start under it
	disowned map[writer]bool     // claims shown to be forged (Disown): nothing written under them counts
}

// writer is who wrote an entry: a worker under a token.
type writer struct {
	worker string
	fence  int64
}

// NewFold returns an empty fold of work partition p that takes every entry.
func NewFold(p int32) *Fold {
	return &Fold{Partition: p, ClaimOffset: -1, BaseFence: MaxFence, Limit: math.MaxInt64, Ticks: map[int64]*TickState{},
		proofs: map[int64]time.Time{}}
}

// Tick returns the state of the tick id at work offset o, or nil.
func (f *Fold) Tick(o int64, id string) *TickState {
	for s := f.Ticks[o]; s != nil; s = s.other {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// OtherIDs reports whether entries named a tick other than id for work offset o.
func (f *Fold) OtherIDs(o int64, id string) bool {
	for s := f.Ticks[o]; s != nil; s = s.other {
		if s.ID != id {
			return true
		}
	}
	return false
}

// LastProof returns the timestamp of the latest claim, renewal or start written under fence while it was the
// partition's token: a run under that token cannot have a lease beyond it plus the lease.
func (f *Fold) LastProof(fence int64) (time.Time, bool) {
	t, ok := f.proofs[fence]
	return t, ok
}

// Apply applies e, read at ledger offset at with record timestamp ts, and says why it did not ("" when it did).
//
// A claim stands when its token is above the highest so far (a renewal repeats its owner's token). A started
// entry is valid only from the owner of the latest claim; a renewal or a retry only from the runner of the
// tick's latest attempt, while it runs (a retry whose start is gone from the log, as a release); a release or
// outcome from the owner or from that runner (a former owner reporting on a run it started); a release marked
// Unstarted only from the runner of the latest attempt while it runs (else it is ignored: it takes nothing back).
// Before the first claim read, entries with a token up to BaseFence stand.
func (f *Fold) Apply(e Entry, at int64, ts time.Time) Refusal {
	if e.Partition != f.Partition {
		return RefusedPartition
	}
	if e.Kind == KindClaim {
		return f.claim(e, at, ts)
	}
	if e.Offset < f.Floor {
		return "" // committed past: nothing to keep
	}
	if r := f.checkEntry(e); r != "" {
		return r
	}
	s := f.Tick(e.Offset, e.ID)
	if e.Kind == KindReleased && e.Unstarted {
		if s != nil && s.Running() && s.ranBy(e) {
			s.applyUnstarted(e)
		}
		return "" // from another than the runner of the latest attempt, it takes back nothing: ignored
	}
	if r := f.checkWriter(e, s); r != "" {
		return r
	}
	if s == nil {
		var r Refusal
		if s, r = f.newTick(e, at); r != "" {
			return r
		}
	}
	if s.Outcome != nil {
		return RefusedDone
	}
	switch e.Kind {
	case KindStarted:
		f.applyStarted(s, e, ts)
	case KindRenewed:
		s.Retrying = false // the run is alive: a retry of its attempt was not its runner's
		if ts.After(s.ProofAt) {
			s.ProofAt = ts
		}
		if e.LeaseMS > 0 {
			s.StartedLease = time.Duration(e.LeaseMS) * time.Millisecond
		}
	case KindReleased:
		s.applyReleased(e)
	case KindOutcome:
		e := e
		s.Outcome, s.Started, s.Released, s.Retrying = &e, false, false, false
		s.Attempts = max(s.Attempts, e.Attempts)
	}
	return ""
}

// checkEntry refuses an entry of a tick past the partition's limit, with a lease out of bounds, or of a writer
// that was disowned.
func (f *Fold) checkEntry(e Entry) Refusal {
	switch {
	case e.Offset >= f.Limit:
		return RefusedOffset
	case e.LeaseMS < 0 || e.LeaseMS > MaxLease.Milliseconds():
		return RefusedLease
	case f.disowned[writer{e.Worker, e.Fence}]:
		return RefusedDisowned
	}
	return ""
}

// checkWriter refuses an entry its writer may not write of tick s (nil: none known yet): a start by another
// than the partition's owner, a renewal by another than the latest attempt's runner, a retry of an attempt that
// is not the latest, another entry by neither the owner nor the tick's runner.
func (f *Fold) checkWriter(e Entry, s *TickState) Refusal {
	owner := f.isOwner(e)
	switch e.Kind {
	case KindStarted:
		if !owner {
			return RefusedNotOwner
		}
	case KindRenewed:
		if !s.ranBy(e) {
			return RefusedNotOwner // not the runner of the tick's latest attempt (another worker started it since)
		}
	default:
		if e.Kind == KindReleased && e.Retry && s != nil && !s.ranBy(e) {
			return RefusedNotOwner // a retry of an attempt that is not the latest, or not its runner's
		}
		if !owner && (s == nil || s.StartedBy != e.Worker || s.StartedFence != e.Fence) {
			return RefusedNotOwner
		}
	}
	return ""
}

// applyStarted folds a start of tick s: an attempt under way, seized from its former runner if one still ran it.
func (f *Fold) applyStarted(s *TickState, e Entry, ts time.Time) {
	s.SeizedAt, s.SeizedLease = time.Time{}, 0
	if s.Running() && (s.StartedBy != e.Worker || s.StartedFence != e.Fence) {
		s.SeizedAt, s.SeizedLease = s.ProofAt, s.StartedLease
	}
	s.Started, s.Released, s.Retrying = true, false, false
	if e.Interrupted {
		s.mark(e)
	}
	s.Attempts = max(s.Attempts, e.Attempt)
	s.StartedBy, s.StartedFence, s.Limit = e.Worker, e.Fence, e.Limit
	s.StartedLease = f.OwnerLease
	if e.LeaseMS > 0 { // the runner's own lease (entries of older builds have none: its claim's counts)
		s.StartedLease = time.Duration(e.LeaseMS) * time.Millisecond
	}
	s.ProofAt = ts
	f.prove(e.Fence, ts)
}

// applyReleased folds a release of tick s: a failed attempt to retry, or a run that ended without an outcome.
func (s *TickState) applyReleased(e Entry) {
	s.Attempts = max(s.Attempts, e.Attempt)
	if e.Interrupted || !e.Retry {
		s.mark(e)
	}
	if e.Retry { // the attempt failed and its process is gone: nothing runs the tick, nothing was cut off
		s.Retrying = s.Started // not started: its start is gone from the log (compacted), nothing runs
		return
	}
	s.Started, s.Released = false, true
}

// applyUnstarted takes back the latest attempt of s, whose handler never started (a release marked Unstarted by
// its runner): nothing ran and nothing was cut off, so the tick is as before that start (its marks from earlier
// cuts stay), and its next start is the same attempt.
func (s *TickState) applyUnstarted(e Entry) {
	s.Started, s.Released, s.Retrying = false, false, false
	s.SeizedAt, s.SeizedLease = time.Time{}, 0
	s.Attempts = e.Attempt - 1
}

func (f *Fold) claim(e Entry, at int64, ts time.Time) Refusal {
	if e.LeaseMS < 0 || e.LeaseMS > MaxLease.Milliseconds() {
		return RefusedLease
	}
	if f.ClaimOffset >= 0 && e.Fence == f.Fence && e.Worker == f.Owner {
		f.prove(e.Fence, ts) // a renewal
		return ""
	}
	base := f.Fence
	if f.ClaimOffset < 0 && f.BaseFence < MaxFence {
		base = max(base, f.BaseFence)
	}
	switch {
	case e.Fence < 1 || e.Fence > MaxFence || (base > 0 && e.Fence > base+MaxFenceStep):
		return RefusedFence
	case f.ClaimOffset >= 0 && e.Fence <= f.Fence:
		return RefusedStale // its writer read an older ledger; the higher token stands
	}
	f.Fence, f.Owner, f.ClaimOffset = e.Fence, e.Worker, at
	f.OwnerLease = time.Duration(e.LeaseMS) * time.Millisecond
	f.prove(e.Fence, ts)
	return ""
}

// isOwner reports whether e's writer owned the partition when e was appended.
func (f *Fold) isOwner(e Entry) bool {
	if f.ClaimOffset < 0 {
		return e.Fence <= f.BaseFence
	}
	return e.Worker == f.Owner && e.Fence == f.Fence
}

func (f *Fold) newTick(e Entry, at int64) (*TickState, Refusal) {
	s := &TickState{Offset: e.Offset, ID: e.ID, FirstAt: at}
	head := f.Ticks[e.Offset]
	if head == nil {
		f.Ticks[e.Offset] = s
		return s, ""
	}
	n := 1
	last := head
	for ; last.other != nil; last = last.other {
		n++
	}
	if n >= MaxIDsPerOffset {
		return nil, RefusedIDs
	}
	last.other = s
	return s, ""
}

// prove records ts as the latest proof under fence.
func (f *Fold) prove(fence int64, ts time.Time) {
	if ts.After(f.proofs[fence]) {
		f.proofs[fence] = ts
	}
	if len(f.proofs) <= maxProofs {
		return
	}
	low := int64(math.MaxInt64)
	for k := range f.proofs {
		low = min(low, k)
	}
	delete(f.proofs, low)
}

// Disown takes back what was written under the claim of worker with token fence, shown to be forged (the
// consumer group gave the partition to nobody else): the starts and outcomes it wrote no longer count, and
// nothing it writes later will. The partition's owner is then unknown until the next claim.
func (f *Fold) Disown(worker string, fence int64) {
	if f.disowned == nil {
		f.disowned = map[writer]bool{}
	}
	f.disowned[writer{worker, fence}] = true
	for _, head := range f.Ticks {
		for s := head; s != nil; s = s.other {
			if o := s.Outcome; o != nil && o.Worker == worker && o.Fence == fence {
				s.Outcome = nil
			}
			if s.Started && s.StartedBy == worker && s.StartedFence == fence {
				s.Started, s.Retrying, s.SeizedAt = false, false, time.Time{}
			}
			s.marks = slices.DeleteFunc(slices.Clone(s.marks), func(w writer) bool { return w == writer{worker, fence} })
		}
	}
	delete(f.proofs, fence)
}

// Forget drops the states of work offsets below offset (they are committed and never delivered again) and
// keeps no entry about them from then on.
func (f *Fold) Forget(offset int64) {
	f.Floor = max(f.Floor, offset)
	for o := range f.Ticks {
		if o < offset {
			delete(f.Ticks, o)
		}
	}
}

// ranBy reports whether e comes from the runner of s's latest attempt while it runs (or ended it with a retry):
// the writer, token and attempt of its start.
func (s *TickState) ranBy(e Entry) bool {
	return s != nil && s.Started && s.StartedBy == e.Worker && s.StartedFence == e.Fence && s.Attempts == e.Attempt
}
