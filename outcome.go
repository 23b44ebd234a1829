package tickgroup

import "github.com/tickgroup/tickgroup/internal/ledger"

// Outcome is what became of one tick, as a worker records it in the results topic (<ns>.results, or a pool's
// <ns>.pool.NAME.results), keyed by the tick's ID: its status (one of the Status constants), attempts, duration,
// worker, fencing token, and the error of the last attempt:
//
//	ID, Schedule string; Slot *time.Time; Status string; Attempts int; DurationMS float64; Worker, Error string;
//	Partition int32; Offset int64 (the tick's work record); FinishedAt time.Time; Fence int64; Interrupted bool
type Outcome = ledger.Outcome

// Outcome statuses.
const (
	StatusOK             = ledger.StatusOK             // the handler succeeded
	StatusFailed         = ledger.StatusFailed         // the handler failed permanently (Permanent); also dead-lettered
	StatusDeadLettered   = ledger.StatusDeadLettered   // every attempt failed, or the record was unreadable
	StatusSkippedLate    = ledger.StatusSkippedLate    // it would have started after its deadline
	StatusSkippedOverlap = ledger.StatusSkippedOverlap // overlap skip: a newer tick of its schedule was already due
	StatusInterrupted    = ledger.StatusInterrupted    // a run was cut off and the worker does not run it again
	StatusCancelled      = ledger.StatusCancelled      // its schedule was paused or deleted before it started
)

// Outcomes returns the outcomes in the value of a results-topic record, for a program that reads that topic
// (a report, a downstream consumer): none for the ledger's other entries (claims, starts, renewals, releases),
// one for an outcome record, several, in order, for a batch record. A value that is not a ledger entry of this
// major version is an error. The topic is written by every worker with Write on it: count an outcome as proof
// only after `ticker audit`'s checks (docs/audit.md).
func Outcomes(value []byte) ([]Outcome, error) { return ledger.Outcomes(value) }
