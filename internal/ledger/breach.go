package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Breach is a deadline breach: a run of a scheduled tick not started by its start_by, or not finished by its
// finish_by (schedule.Spec.StartBy, FinishBy). The worker that sees it writes it to the tick's results
// partition, under the key BreachKey(ID, Deadline), as a record of its own (never in a batch): a second record of
// the same breach (a worker that took the tick over and saw it again) has the same key, so a reader counts one
// per key, and compaction keeps one.
//
// A ledger reader of an earlier release does not know the kind: it logs the record as unreadable and ignores it.
type Breach struct {
	V    int    `json:"v"`
	Kind string `json:"kind"` // KindBreach
	// ID, Schedule and Slot name the tick.
	ID       string    `json:"id"`
	Schedule string    `json:"schedule"`
	Slot     time.Time `json:"slot"`
	// Deadline is which one: DeadlineStartBy or DeadlineFinishBy. Due is its instant.
	Deadline string    `json:"deadline"`
	Due      time.Time `json:"due"`
	// At is when the worker saw it: the late start, or the instant the run was still going at its finish_by
	// (or its late end).
	At time.Time `json:"at"`
	// Worker, Partition and Offset say who saw it, and the tick's work-topic coordinates.
	Worker    string `json:"worker"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// KindBreach is the kind of a Breach record.
const KindBreach = "breach"

// The deadlines a Breach names.
const (
	DeadlineStartBy  = "start_by"
	DeadlineFinishBy = "finish_by"
)

// BreachKey is the record key of tick id's breach of deadline.
func BreachKey(id, deadline string) []byte { return []byte("~breach/" + deadline + "/" + id) }

// IsBreachKey reports whether key is a breach's key: not a ledger entry (Entries refuses its value).
func IsBreachKey(key []byte) bool { return strings.HasPrefix(string(key), "~breach/") }

// EncodeBreach returns b's record value, with V and Kind set.
func EncodeBreach(b Breach) []byte {
	b.V, b.Kind = Version, KindBreach
	v, _ := json.Marshal(b) // no value of its fields fails
	return v
}

// DecodeBreach reads a breach record's value.
func DecodeBreach(v []byte) (Breach, error) {
	var b Breach
	if err := json.Unmarshal(v, &b); err != nil {
		return Breach{}, fmt.Errorf("decoding breach: %w", err)
	}
	switch {
	case b.V != Version:
		return Breach{}, fmt.Errorf("decoding breach: version %d: %w", b.V, ErrUnknownVersion)
	case b.Kind != KindBreach || b.ID == "":
		return Breach{}, errors.New("decoding breach: not a breach")
	case b.Deadline != DeadlineStartBy && b.Deadline != DeadlineFinishBy:
		return Breach{}, fmt.Errorf("decoding breach: unknown deadline %q", truncate(b.Deadline, 32))
	}
	return b, nil
}
