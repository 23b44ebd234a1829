package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/jsonfast"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Outcome statuses, the status field of a result record.
const (
	// StatusOK: the handler succeeded.
	StatusOK = "ok"
	// StatusFailed: the handler failed permanently (Permanent, an HTTP 4xx); the tick is also in the
	// dead-letter topic with reason "permanent".
	StatusFailed = "failed"
	// StatusSkippedLate: the tick would have started after its deadline and did not run.
	StatusSkippedLate = "skipped_late"
	// StatusDeadLettered: every attempt failed, or the record was not a readable tick; it is in the
	// dead-letter topic.
	StatusDeadLettered = "dead_lettered"
	// StatusSkippedOverlap: the schedule's overlap policy is skip and a newer tick of the same schedule and
	// shard was already due when this one could start.
	StatusSkippedOverlap = ledger.StatusSkippedOverlap
	// StatusInterrupted: an earlier run was cut off and Config.OnInterrupted is skip: the tick is not run again.
	StatusInterrupted = ledger.StatusInterrupted
	// StatusCancelled: the schedule was paused or deleted after the tick was emitted (ahead of its slot) and
	// before it started (tick.Cancel): it did not run.
	StatusCancelled = ledger.StatusCancelled
)

// Dead-letter reasons, the tickgroup-reason header of a dead-letter record.
const (
	reasonMaxAttempts    = "max_attempts"
	reasonPermanent      = "permanent"
	reasonUndecodable    = "undecodable"
	reasonUnknownVersion = "unknown_version"
	reasonTooLarge       = "too_large"
	reasonForgedCancel   = "forged_cancel"
)

// Dead-letter headers.
const (
	HeaderReason          = "tickgroup-reason"
	HeaderError           = "tickgroup-error"
	HeaderSourceTopic     = "tickgroup-source-topic"
	HeaderSourcePartition = "tickgroup-source-partition"
	HeaderSourceOffset    = "tickgroup-source-offset"
	HeaderAttempts        = "tickgroup-attempts"
	HeaderWorker          = "tickgroup-worker"
	// HeaderTruncated, on a dead letter cut down because the original was too large, says so and why.
	HeaderTruncated = "tickgroup-truncated"
	// HeaderPrefix holds the first bytes of a cut-down dead letter's original value.
	HeaderPrefix = "tickgroup-value-prefix"
)

// Outcome is the value of a result record in <ns>.results, keyed by tick ID: the ledger's outcome entry
// (internal/ledger), with the fields a reader of outcomes needs.
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

	// reason is the dead-letter reason when the record went to the dead-letter topic.
	reason string
	// cut is set when the record has no outcome: its run was cut, or it never started (the lane stopped
	// starting records); nothing is recorded and the next owner decides from the ledger.
	cut bool
}

// maxKeyBytes bounds the keys the worker writes: a work record with a longer key (not a tick the leader wrote)
// is recorded under its coordinates.
const maxKeyBytes = 1024

// maxCopyBytes is the largest dead-letter copy written whole. Kafka's default limits (the producer's batch,
// the broker's message.max.bytes) are about 1 MB; a bigger copy is cut down (see deadLetterRecord).
const maxCopyBytes = 900_000

// prefixBytes is how much of a cut-down record's value its dead letter keeps, in a header.
const prefixBytes = 1024

// resultKey is the key of rec's outcome: its tick ID, or for a record without a key (results are compacted and
// need one) or with an oversized one, its coordinates.
func resultKey(rec *kgo.Record) []byte {
	if len(rec.Key) > 0 && len(rec.Key) <= maxKeyBytes {
		return rec.Key
	}
	return []byte(rec.Topic + "/" + strconv.Itoa(int(rec.Partition)) + "/" + strconv.FormatInt(rec.Offset, 10))
}

// entry is o as the ledger entry its record decodes to.
func (o Outcome) entry() ledger.Entry {
	finished := o.FinishedAt
	return ledger.Entry{V: ledger.Version, Kind: ledger.KindOutcome, ID: o.ID, Schedule: o.Schedule, Slot: o.Slot,
		Partition: o.Partition, Offset: o.Offset, Fence: o.Fence, Worker: o.Worker, Attempts: o.Attempts,
		Status: o.Status, Error: o.Error, DurationMS: o.DurationMS, Interrupted: o.Interrupted, FinishedAt: &finished}
}

func (w *Worker) resultRecord(rec *kgo.Record, o Outcome, partitions int) *kgo.Record {
	o.V, o.Kind = ledger.Version, ledger.KindOutcome
	v, ok := appendOutcome(make([]byte, 0, 320+len(o.Error)), &o)
	if !ok {
		var err error
		if v, err = json.Marshal(o); err != nil { // cannot happen: every field marshals
			v = []byte(fmt.Sprintf(`{"status":%q}`, o.Status))
		}
	}
	// The outcome goes to the results partition with the work partition's number, so the promises of one lane
	// complete in order and its committed offset never passes an outcome that is not written yet.
	return &kgo.Record{Topic: w.names.Results, Partition: rec.Partition % int32(max(partitions, 1)), Key: resultKey(rec), Value: v}
}

// appendOutcome appends the JSON of o, the bytes json.Marshal writes for it (FuzzOutcomeIsMarshal), without
// reflection: a worker writes one for every tick. It reports false for what it does not write itself (a time
// or a number json.Marshal writes its own way or refuses).
func appendOutcome(b []byte, o *Outcome) ([]byte, bool) {
	ok := true
	var w bool
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(o.V), 10)
	b = append(b, `,"kind":`...)
	b = jsonfast.AppendString(b, o.Kind)
	b = append(b, `,"id":`...)
	b = jsonfast.AppendString(b, o.ID)
	if o.Schedule != "" {
		b = append(b, `,"schedule":`...)
		b = jsonfast.AppendString(b, o.Schedule)
	}
	if o.Slot != nil {
		b = append(b, `,"slot":`...)
		b, w = jsonfast.AppendTime(b, *o.Slot)
		ok = ok && w
	}
	b = append(b, `,"status":`...)
	b = jsonfast.AppendString(b, o.Status)
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(o.Attempts), 10)
	b = append(b, `,"duration_ms":`...)
	b, w = jsonfast.AppendFloat(b, o.DurationMS)
	ok = ok && w
	b = append(b, `,"worker":`...)
	b = jsonfast.AppendString(b, o.Worker)
	if o.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonfast.AppendString(b, o.Error)
	}
	b = append(b, `,"partition":`...)
	b = strconv.AppendInt(b, int64(o.Partition), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, o.Offset, 10)
	b = append(b, `,"finished_at":`...)
	b, w = jsonfast.AppendTime(b, o.FinishedAt)
	ok = ok && w
	if o.Fence != 0 {
		b = append(b, `,"fence":`...)
		b = strconv.AppendInt(b, o.Fence, 10)
	}
	if o.Interrupted {
		b = append(b, `,"interrupted":true`...)
	}
	return append(b, '}'), ok
}

func (w *Worker) deadLetterRecord(rec *kgo.Record, reason string, cause error, attempts, partitions int) *kgo.Record {
	headers := append([]kgo.RecordHeader(nil), rec.Headers...)
	headers = append(headers,
		kgo.RecordHeader{Key: HeaderReason, Value: []byte(reason)},
		kgo.RecordHeader{Key: HeaderError, Value: []byte(errString(cause))},
		kgo.RecordHeader{Key: HeaderSourceTopic, Value: []byte(rec.Topic)},
		kgo.RecordHeader{Key: HeaderSourcePartition, Value: []byte(strconv.Itoa(int(rec.Partition)))},
		kgo.RecordHeader{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
		kgo.RecordHeader{Key: HeaderAttempts, Value: []byte(strconv.Itoa(attempts))},
		kgo.RecordHeader{Key: HeaderWorker, Value: []byte(w.cfg.WorkerID)},
	)
	dl := &kgo.Record{
		Topic:     w.names.DLQ,
		Partition: rec.Partition % int32(max(partitions, 1)),
		Key:       rec.Key,
		Value:     rec.Value,
		Headers:   headers,
	}
	if size := kafka.RecordSize(dl); size > maxCopyBytes {
		// A copy this large would be refused by the broker (or the producer) and retried forever, blocking the
		// partition behind it. Keep the reference (source headers), a prefix and the reason instead.
		prefix := rec.Value[:min(len(rec.Value), prefixBytes)]
		dl.Key, dl.Value = resultKey(rec), nil
		dl.Headers = append(append([]kgo.RecordHeader(nil), headers[len(rec.Headers):]...),
			kgo.RecordHeader{Key: HeaderTruncated, Value: []byte(fmt.Sprintf("the record (%d bytes with headers) is too large to copy; value, key and headers dropped", size))},
			kgo.RecordHeader{Key: HeaderPrefix, Value: prefix},
		)
	}
	return dl
}

// decodeReason classifies a tick.Decode error as a dead-letter reason.
func decodeReason(err error) string {
	if errors.Is(err, tick.ErrUnknownVersion) {
		return reasonUnknownVersion
	}
	if errors.Is(err, cancel.ErrForged) {
		return reasonForgedCancel
	}
	return reasonUndecodable
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > 2048 {
		s = errlimit.Cut(s, 2048) + "..."
	}
	return s
}

// Outcomes returns the outcomes a results record's value holds: none for a claim, start, renewal or release,
// one for an outcome record, and a batch's (ledger.KindBatch) in their order.
func Outcomes(value []byte) ([]Outcome, error) {
	es, err := ledger.Entries(value)
	if err != nil {
		return nil, err
	}
	var out []Outcome
	for _, e := range es {
		if e.Kind != ledger.KindOutcome {
			continue
		}
		o := Outcome{V: e.V, Kind: e.Kind, ID: e.ID, Schedule: e.Schedule, Slot: e.Slot, Status: e.Status, Attempts: e.Attempts,
			DurationMS: e.DurationMS, Worker: e.Worker, Error: e.Error, Partition: e.Partition, Offset: e.Offset, Fence: e.Fence,
			Interrupted: e.Interrupted}
		if e.FinishedAt != nil {
			o.FinishedAt = *e.FinishedAt
		}
		out = append(out, o)
	}
	return out, nil
}
