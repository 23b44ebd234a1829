package audit

import (
	"sort"

	"github.com/tickgroup/tickgroup/internal/ledger"
)

// reRun is how a tick's handler came to run more than once, as its ledger tells it. The classes are ordered:
// a tick takes the worst of its later runs.
type reRun int

const (
	// reRunNone: one run at most.
	reRunNone reRun = iota
	// reRunRetried: every later run is a retry after a failed attempt (its run before it ended with a release
	// marked retry, or it is the same worker's next attempt), or its run before it is gone from the log and it is
	// not marked. The documented at-least-once behaviour of a failing handler.
	reRunRetried
	// reRunMarked: a later run was marked interrupted (its handler was told: Tick.Interrupted, TICK_INTERRUPTED=1)
	// and every other later run was marked or a retry. Two ok outcomes are this when the later run was marked.
	reRunMarked
	// reRunUnmarked: a later run was neither marked nor a retry, after a run that may have had its effects (one
	// with an outcome, ok or any other, or one cut off without a release marked retry): the tick ran twice and its
	// handler was not told.
	reRunUnmarked
)

// run is one run of a tick's handler as the ledger tells it: a started attempt, or an outcome (or a release)
// whose started entry is gone from the log (compaction keeps a key's latest record).
type run struct {
	worker  string
	attempt int
	// marked: the run's handler was told that an earlier run had been interrupted. Read from its started entry
	// (the handler's Interrupted is what the start says; a release copies it), and only when the start is gone
	// from the entry that stands for the run: an outcome is marked also when its own run, not told, was cut off
	// by its lease.
	marked   bool
	retry    bool   // a release marked retry ended it: the attempt failed and another follows
	released bool   // a release (not marked retry) ended it: cut off, its process gone
	outcome  string // its outcome's status ("": none)
}

// runsOf returns the runs t's ledger entries (in log order) tell of, in attempt order (log order among equal
// attempts). A release or an outcome belongs to the latest run of its worker and attempt that has no outcome
// yet (or, for a release, of its attempt alone: a partition's owner may release another worker's run); one that
// belongs to none stands for a run of its own whose start is gone, except an outcome that says the handler did
// not run in it (skipped_late, skipped_overlap, interrupted, cancelled) or that counts no attempt. A second
// outcome of one run is a run of its own: two ok outcomes are two runs, whoever wrote them.
func runsOf(entries []ledger.Entry) []run {
	var rs []run
	find := func(worker string, attempt int) int {
		for i := len(rs) - 1; i >= 0; i-- {
			if rs[i].attempt == attempt && rs[i].outcome == "" && (worker == "" || rs[i].worker == worker) {
				return i
			}
		}
		return -1
	}
	for _, e := range entries {
		switch e.Kind {
		case ledger.KindStarted:
			rs = append(rs, run{worker: e.Worker, attempt: e.Attempt, marked: e.Interrupted})
		case ledger.KindRenewed:
			if i := find(e.Worker, e.Attempt); i >= 0 {
				rs[i].retry = false // the run is alive: a retry of its attempt was not its runner's (ledger.Fold)
			}
		case ledger.KindReleased:
			if e.Unstarted { // its runner took the start back: the handler never ran in it
				if i := find(e.Worker, e.Attempt); i >= 0 {
					rs = append(rs[:i], rs[i+1:]...)
				}
				continue
			}
			i := find(e.Worker, e.Attempt)
			if i < 0 {
				i = find("", e.Attempt)
			}
			if i < 0 {
				rs = append(rs, run{worker: e.Worker, attempt: e.Attempt, marked: e.Interrupted})
				i = len(rs) - 1
			}
			if e.Retry {
				rs[i].retry = true
			} else {
				rs[i].released = true
			}
		case ledger.KindOutcome:
			i := find(e.Worker, e.Attempts)
			if i < 0 {
				if !handlerRan(e.Status) || e.Attempts < 1 {
					continue
				}
				rs = append(rs, run{worker: e.Worker, attempt: e.Attempts, marked: e.Interrupted})
				i = len(rs) - 1
			}
			rs[i].outcome = e.Status
		}
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].attempt < rs[j].attempt })
	return rs
}

// handlerRan reports whether an outcome of status may end a run of the handler (the others are written instead
// of running it).
func handlerRan(status string) bool {
	switch status {
	case ledger.StatusSkippedLate, ledger.StatusSkippedOverlap, ledger.StatusInterrupted, ledger.StatusCancelled:
		return false
	}
	return true
}

// classOf returns the class of the runs rs (runsOf). Each run after the first is marked, a retry, or unmarked:
//   - marked when its handler was told (run.marked);
//   - a retry when the run before it has no outcome and ended with a release marked retry, or was the same
//     worker's and was not released: a worker runs its attempts of a tick one after the other, so this is its
//     next attempt after a failure, whose retry entry was not written or is compacted away (a worker restarted
//     under the same --worker-id finds its run unfinished and marks the next one);
//   - a retry too when the run before it is not in the log (the first run's attempt is above 1, or an attempt
//     number is skipped): nothing says what ended it, and the worker that started this one did not see a cut;
//   - unmarked otherwise.
func classOf(rs []run) reRun {
	class := reRunNone
	for i, r := range rs {
		var prev *run
		if i > 0 {
			prev = &rs[i-1]
		}
		gone := r.attempt > 1 && (prev == nil || r.attempt > prev.attempt+1)
		if prev == nil && !gone {
			continue // the first run
		}
		c := reRunUnmarked
		switch {
		case r.marked:
			c = reRunMarked
		case gone:
			c = reRunRetried
		case prev.outcome == "" && (prev.retry || (!prev.released && prev.worker == r.worker)):
			c = reRunRetried
		}
		class = max(class, c)
	}
	return class
}
