package ledger

// TickState is what the ledger says about one work record.
type TickState struct {
	Offset int64
	ID     string
	// FirstAt is the ledger offset of the tick's first entry.
	FirstAt int64
	// Attempts is the highest attempt number started.
	Attempts int
	// Started is set when an attempt started and neither an outcome nor a release followed it.
	Started bool
	// StartedBy is the worker of the latest started attempt, StartedFence its fencing token.
	StartedBy    string
	StartedFence int64
	// Released is set when the latest attempt was cut off and its process is known to be gone.
	Released bool
	// Outcome is the tick's final entry, if any.
	Outcome *Entry
}

// Finished reports whether the tick has a final outcome.
func (s *TickState) Finished() bool { return s.Outcome != nil }

// Interrupted reports whether an attempt started and was cut off (released, or no outcome yet).
func (s *TickState) Interrupted() bool { return s.Outcome == nil && (s.Started || s.Released) }

// Fold is the state of one work partition as its ledger tells it, built by applying the partition's entries in
// log order.
type Fold struct {
	Partition int32
	// Fence is the highest fencing token claimed so far; Owner the worker that claimed it, ClaimOffset the
	// ledger offset of that claim.
	Fence       int64
	Owner       string
	ClaimOffset int64
	// MaxLeaseMS is the longest handler lease any claim has announced: a handler of a former owner is over at
	// most that long after the claim that replaced its owner.
	MaxLeaseMS int64
	// Ticks maps work offsets to their state.
	Ticks map[int64]*TickState
}

// NewFold returns an empty fold of work partition p.
func NewFold(p int32) *Fold {
	return &Fold{Partition: p, ClaimOffset: -1, Ticks: map[int64]*TickState{}}
}

// Apply applies e, read at ledger offset at. It reports whether e is valid: entries of another partition are
// ignored, and a started entry written by a worker that is not the owner of the latest claim is not valid (its
// writer sees the newer claim before it confirms the start, so it never runs).
func (f *Fold) Apply(e Entry, at int64) bool {
	if e.Partition != f.Partition {
		return false
	}
	if e.Kind == KindClaim {
		f.MaxLeaseMS = max(f.MaxLeaseMS, e.LeaseMS)
		if e.Fence <= f.Fence && f.ClaimOffset >= 0 {
			return false // a stale claim (its writer read an older ledger); the higher token stands
		}
		f.Fence, f.Owner, f.ClaimOffset = e.Fence, e.Worker, at
		return true
	}
	if e.Kind == KindStarted && f.ClaimOffset >= 0 && (e.Worker != f.Owner || e.Fence != f.Fence) {
		return false
	}
	s := f.Ticks[e.Offset]
	if s == nil {
		s = &TickState{Offset: e.Offset, ID: e.ID, FirstAt: at}
		f.Ticks[e.Offset] = s
	}
	switch e.Kind {
	case KindStarted:
		if s.Outcome != nil {
			return false
		}
		s.Started, s.Released = true, false
		s.Attempts = max(s.Attempts, e.Attempt)
		s.StartedBy, s.StartedFence = e.Worker, e.Fence
	case KindReleased:
		if s.Outcome != nil {
			return false
		}
		s.Started, s.Released = false, true
		s.Attempts = max(s.Attempts, e.Attempt)
	case KindOutcome:
		if s.Outcome != nil {
			return false // the first outcome stands
		}
		e := e
		s.Outcome, s.Started, s.Released = &e, false, false
		s.Attempts = max(s.Attempts, e.Attempts)
	}
	return true
}

// Forget drops the states of work offsets below offset (they are committed and never delivered again).
func (f *Fold) Forget(offset int64) {
	for o := range f.Ticks {
		if o < offset {
			delete(f.Ticks, o)
		}
	}
}
