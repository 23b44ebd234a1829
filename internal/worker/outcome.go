package worker

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Outcome statuses, the status field of an outcome record (documented in internal/ledger).
const (
	StatusOK             = ledger.StatusOK
	StatusFailed         = ledger.StatusFailed
	StatusSkippedLate    = ledger.StatusSkippedLate
	StatusDeadLettered   = ledger.StatusDeadLettered
	StatusSkippedOverlap = ledger.StatusSkippedOverlap
	StatusInterrupted    = ledger.StatusInterrupted
	StatusCancelled      = ledger.StatusCancelled
	StatusSkippedGate    = ledger.StatusSkippedGate
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

// result is what becomes of a record: its outcome record (ledger.Outcome, the one schema of it), with what only
// the worker needs to know.
type result struct {
	ledger.Outcome
	// reason is the dead-letter reason when the record went to the dead-letter topic.
	reason string
	// cut is set when the record has no outcome: its run was cut, or it never started (the lane stopped
	// starting records); nothing is recorded and the next owner decides from the ledger.
	cut bool
	// finished is set when the tick got its outcome elsewhere before an attempt started here (a former owner's
	// run ended after all): nothing is recorded, and the record is done.
	finished bool
	// ran spans the handler's attempts (zero when none started).
	ran span
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

// resultRecord is the outcome record of rec.
func (w *Worker) resultRecord(rec *kgo.Record, o ledger.Outcome, partitions int) *kgo.Record {
	// The outcome goes to the results partition with the work partition's number, so the promises of one lane
	// complete in order and its committed offset never passes an outcome that is not written yet.
	return &kgo.Record{Topic: w.names.Results, Partition: rec.Partition % int32(max(partitions, 1)), Key: resultKey(rec), Value: ledger.MarshalOutcome(o)}
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

// refusedForGood reports whether err is the broker refusing a record for what it is (its size, its form, a
// policy): writing it again cannot help.
func refusedForGood(err error) bool {
	for _, e := range []error{kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord, kerr.PolicyViolation} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
