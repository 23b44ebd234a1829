package ledger

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tickgroup/tickgroup/internal/jsonfast"
)

// Outcome is the value of an outcome record, the one schema of what a worker writes when a tick is finished:
// its outcome entry with the fields a reader of outcomes needs, finished_at, attempts and duration_ms always
// present. Readers decode the record as an Entry (Decode) or, for outcomes only, with Outcomes; OutcomeEntry
// returns the entry an Outcome's record decodes to. (A function, not a method: the Go API publishes Outcome.)
type Outcome struct {
	V          int        `json:"v"`
	Kind       string     `json:"kind"`
	ID         string     `json:"id"`
	Schedule   string     `json:"schedule,omitempty"`
	Slot       *time.Time `json:"slot,omitempty"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	DurationMS float64    `json:"duration_ms"`
	Worker     string     `json:"worker"`
	Error      string     `json:"error,omitempty"`
	Partition  int32      `json:"partition"`
	Offset     int64      `json:"offset"`
	FinishedAt time.Time  `json:"finished_at"`
	// Fence is the fencing token the tick's last attempt started under (the lane's token when no attempt ran).
	Fence int64 `json:"fence,omitempty"`
	// Interrupted marks the outcome of a tick whose earlier run had been cut off.
	Interrupted bool `json:"interrupted,omitempty"`
	// Output is the tail of the last attempt's output, when the worker records it (--record-output).
	Output string `json:"output,omitempty"`
}

// OutcomeEntry is o as the entry its record decodes to.
func OutcomeEntry(o Outcome) Entry {
	finished := o.FinishedAt
	return Entry{V: Version, Kind: KindOutcome, ID: o.ID, Schedule: o.Schedule, Slot: o.Slot,
		Partition: o.Partition, Offset: o.Offset, Fence: o.Fence, Worker: o.Worker, Attempts: o.Attempts,
		Status: o.Status, Error: o.Error, DurationMS: o.DurationMS, Interrupted: o.Interrupted, FinishedAt: &finished, Output: o.Output}
}

// outcomeOf is the Outcome of e, an outcome entry.
func outcomeOf(e Entry) Outcome {
	o := Outcome{V: e.V, Kind: e.Kind, ID: e.ID, Schedule: e.Schedule, Slot: e.Slot, Status: e.Status, Attempts: e.Attempts,
		DurationMS: e.DurationMS, Worker: e.Worker, Error: e.Error, Partition: e.Partition, Offset: e.Offset, Fence: e.Fence,
		Interrupted: e.Interrupted, Output: e.Output}
	if e.FinishedAt != nil {
		o.FinishedAt = *e.FinishedAt
	}
	return o
}

// Outcomes returns the outcomes a results record's value holds: none for a claim, start, renewal or release,
// one for an outcome record, and a batch's in their order.
func Outcomes(value []byte) ([]Outcome, error) {
	es, err := Entries(value)
	if err != nil {
		return nil, err
	}
	var out []Outcome
	for _, e := range es {
		if e.Kind == KindOutcome {
			out = append(out, outcomeOf(e))
		}
	}
	return out, nil
}

// MarshalOutcome returns the record value of o, with this build's version and kind.
func MarshalOutcome(o Outcome) []byte {
	o.V, o.Kind = Version, KindOutcome
	v, ok := appendOutcome(make([]byte, 0, 320+len(o.Error)), &o)
	if !ok {
		var err error
		if v, err = json.Marshal(o); err != nil { // cannot happen: every field marshals
			v = []byte(fmt.Sprintf(`{"v":%d,"kind":%q,"id":%q,"status":%q}`, Version, KindOutcome, o.ID, o.Status))
		}
	}
	return v
}

// appendOutcome appends the JSON of o, the bytes json.Marshal writes for it (FuzzOutcomeIsMarshal), without
// reflection: a worker writes one for every tick. It reports false for what it does not write itself (a time
// or a number json.Marshal writes its own way or refuses).
func appendOutcome(b []byte, o *Outcome) ([]byte, bool) {
	w := jsonfast.NewObject(b)
	w.Int(`{"v":`, int64(o.V))
	w.String(`,"kind":`, o.Kind)
	w.String(`,"id":`, o.ID)
	w.OmitString(`,"schedule":`, o.Schedule)
	w.OmitTime(`,"slot":`, o.Slot)
	w.String(`,"status":`, o.Status)
	w.Int(`,"attempts":`, int64(o.Attempts))
	w.Float(`,"duration_ms":`, o.DurationMS)
	w.String(`,"worker":`, o.Worker)
	w.OmitString(`,"error":`, o.Error)
	w.Int(`,"partition":`, int64(o.Partition))
	w.Int(`,"offset":`, o.Offset)
	w.Time(`,"finished_at":`, o.FinishedAt)
	w.OmitInt(`,"fence":`, o.Fence)
	w.OmitBool(`,"interrupted":`, o.Interrupted)
	w.OmitString(`,"output":`, o.Output)
	return w.Close()
}
