package tickgroup

import (
	"time"

	"github.com/tickgroup/tickgroup/internal/ledger"
)

// Outcome is what became of one tick, as a worker records it in the results topic (<ns>.results, or a pool's
// <ns>.pool.NAME.results), keyed by the tick's ID. The JSON names are those of the outcome record's fields (the
// record also carries its version, "v", and its kind, "outcome").
type Outcome struct {
	// ID is the tick's ID (Tick.ID).
	ID string `json:"id"`
	// Schedule is the tick's schedule; it may be empty when the work record was not a readable tick.
	Schedule string `json:"schedule,omitempty"`
	// Slot is the tick's slot (UTC); it may be nil when the work record was not a readable tick.
	Slot *time.Time `json:"slot,omitempty"`
	// Status is what became of the tick: one of the Status constants.
	Status Status `json:"status"`
	// Attempts counts the tick's attempts, across workers (Tick.Attempt of the last one).
	Attempts int `json:"attempts"`
	// DurationMS is how long the worker took from taking the tick up to its outcome, retries included, in
	// milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// Worker is the ID of the worker that recorded the outcome.
	Worker string `json:"worker"`
	// Error is the error of the last attempt, or why the tick did not run; empty on success.
	Error string `json:"error,omitempty"`
	// Partition and Offset locate the tick's record in the work topic.
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// FinishedAt is when the worker recorded the outcome.
	FinishedAt time.Time `json:"finished_at"`
	// Fence is the fencing token the tick's last attempt started under (Tick.Fence; the partition's token when
	// no attempt ran).
	Fence int64 `json:"fence,omitempty"`
	// Interrupted marks the outcome of a tick whose earlier run had been cut off (Tick.Interrupted).
	Interrupted bool `json:"interrupted,omitempty"`
	// Output is the tail of the last attempt's output (Tick.RecordOutput), kept only by a worker that records it
	// (WorkerConfig.RecordOutput, worker run --record-output); empty otherwise.
	Output string `json:"output,omitempty"`
}

// Status is what became of a tick (Outcome.Status).
type Status string

// Outcome statuses.
const (
	StatusOK             Status = "ok"              // the handler succeeded
	StatusFailed         Status = "failed"          // the handler failed permanently (Permanent); also dead-lettered
	StatusDeadLettered   Status = "dead_lettered"   // every attempt failed, or the record was unreadable
	StatusSkippedLate    Status = "skipped_late"    // it would have started after its deadline
	StatusSkippedOverlap Status = "skipped_overlap" // overlap skip: a newer tick of its schedule was already due
	StatusInterrupted    Status = "interrupted"     // a run was cut off and the worker does not run it again
	StatusCancelled      Status = "cancelled"       // its schedule was paused or deleted before it started
	StatusSkippedGate    Status = "skipped_gate"    // its gate's required slot had not succeeded (Schedule.Requires)
)

// Outcomes returns the outcomes in the value of a results-topic record, for a program that reads that topic
// (a report, a downstream consumer): none for the ledger's other entries (claims, starts, renewals, releases),
// one for an outcome record, several, in order, for a batch record. A value that is not a ledger entry of this
// major version is an error. The topic is written by every worker with Write on it: count an outcome as proof
// only after `ticker audit`'s checks (docs/audit.md).
func Outcomes(value []byte) ([]Outcome, error) {
	outs, err := ledger.Outcomes(value)
	if err != nil {
		return nil, err
	}
	var out []Outcome
	for _, o := range outs {
		out = append(out, fromOutcome(o))
	}
	return out, nil
}

// fromOutcome is the Outcome of o; the record's version and kind are left behind.
func fromOutcome(o ledger.Outcome) Outcome {
	return Outcome{ID: o.ID, Schedule: o.Schedule, Slot: copyTime(o.Slot), Status: Status(o.Status), Attempts: o.Attempts,
		DurationMS: o.DurationMS, Worker: o.Worker, Error: o.Error, Partition: o.Partition, Offset: o.Offset,
		FinishedAt: o.FinishedAt, Fence: o.Fence, Interrupted: o.Interrupted, Output: o.Output}
}
