// Package ledger is the execution ledger: the records a worker writes to <ns>.results for every tick it takes
// over, starts and finishes, and the fold that turns a results partition back into "what has happened to each
// tick of this work partition".
//
// The results topic has as many partitions as the work topic, and the entries of work partition p go to results
// partition p (modulo the results partition count), so a work partition's ledger is one ordered log. Four kinds
// of entry, all JSON with a major version in "v":
//
//   - claim (key "~claim/<p>"): a worker took partition p over, with fencing token Fence. Tokens strictly
//     increase: a new owner writes the highest token it read plus one. Log order decides who owns the
//     partition: an entry that starts something (started) is valid only when no claim of another worker lies
//     between its writer's own claim and it.
//   - started (key: tick ID): attempt Attempt of the tick at work offset Offset is about to run. It is written,
//     acknowledged and confirmed (read back with no foreign claim before it) before the handler starts.
//   - renewed (key: tick ID): the worker that started attempt Attempt still runs it, under the lease it
//     renews with this entry. Valid only from the attempt's runner while no other worker has started the tick
//     since: a run goes on after its partition moved to another worker (a rebalance does not cut it), and the
//     partition's new owner waits for it, key by key.
//   - released (key: tick ID): the run was cut off (lease lost, or the worker lost its partition or ran out of
//     grace) and its process is known to be gone; the next owner may run it again at once.
//   - outcome (key: tick ID): the tick's final result (ok, failed, skipped_late, skipped_overlap,
//     dead_lettered, interrupted). Records written before the ledger existed have no "kind" and a "status":
//     they are outcomes.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// Version is the major version of ledger entries written by this build.
const Version = 1

// Entry kinds.
const (
	KindClaim    = "claim"
	KindStarted  = "started"
	KindReleased = "released"
	KindRenewed  = "renewed"
	KindOutcome  = "outcome"
)

// Outcome statuses.
const (
	StatusOK             = "ok"
	StatusFailed         = "failed"
	StatusSkippedLate    = "skipped_late"
	StatusSkippedOverlap = "skipped_overlap"
	StatusDeadLettered   = "dead_lettered"
	StatusInterrupted    = "interrupted"
	StatusCancelled      = "cancelled"
)

// ErrUnknownVersion is returned by Decode for an entry of another major version.
var ErrUnknownVersion = errors.New("unknown ledger entry version")

// Entry is one ledger record's value.
type Entry struct {
	V    int    `json:"v"`
	Kind string `json:"kind"`
	// ID is the tick ID (empty for a claim).
	ID       string     `json:"id,omitempty"`
	Schedule string     `json:"schedule,omitempty"`
	Slot     *time.Time `json:"slot,omitempty"`
	// Partition and Offset are the tick's work-topic coordinates (for a claim, Offset is the committed offset
	// the new owner starts from).
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// Fence is the writer's fencing token for the partition.
	Fence  int64  `json:"fence"`
	Worker string `json:"worker"`
	// Attempt is the attempt number (started, renewed, released), counted across owners.
	Attempt int `json:"attempt,omitempty"`
	// Attempts is how many attempts the tick took in total (outcome).
	Attempts int `json:"attempts,omitempty"`
	// Status is the outcome (outcome only).
	Status     string  `json:"status,omitempty"`
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	// Interrupted marks an outcome or start that follows an interrupted earlier run.
	Interrupted bool       `json:"interrupted,omitempty"`
	At          time.Time  `json:"at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	// LeaseMS is the lease the writer gives its running handlers: in a claim, for every run of its own; in a
	// started or renewed entry, for that run. A run that is not renewed ends within that long of its last proof.
	LeaseMS int64 `json:"lease_ms,omitempty"`
}

// ClaimKey is the record key of partition p's claims.
func ClaimKey(p int32) []byte { return []byte("~claim/" + strconv.Itoa(int(p))) }

// Encode returns e's JSON form, with V set.
func Encode(e Entry) []byte {
	e.V = Version
	b, err := json.Marshal(e)
	if err != nil { // cannot happen: every field marshals
		panic(fmt.Sprintf("ledger: encoding entry: %v", err))
	}
	return b
}

// Decode parses a ledger record value. An outcome written before the ledger existed (no kind, a status) decodes
// as an outcome.
func Decode(b []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return Entry{}, fmt.Errorf("decoding ledger entry: %w", errlimit.Wrap(err))
	}
	if e.Kind == "" && e.Status != "" {
		e.Kind, e.V = KindOutcome, max(e.V, Version)
	}
	if e.V != Version {
		return Entry{}, fmt.Errorf("decoding ledger entry: version %d: %w", e.V, ErrUnknownVersion)
	}
	switch e.Kind {
	case KindClaim:
	case KindStarted, KindReleased, KindOutcome, KindRenewed:
		if e.ID == "" {
			return Entry{}, fmt.Errorf("decoding ledger entry: %s without a tick id", e.Kind)
		}
		if e.Kind == KindOutcome && e.Status == "" {
			return Entry{}, errors.New("decoding ledger entry: outcome without a status")
		}
	default:
		return Entry{}, fmt.Errorf("decoding ledger entry: unknown kind %q", truncate(e.Kind, 32))
	}
	if e.Partition < 0 || e.Offset < 0 {
		return Entry{}, errors.New("decoding ledger entry: negative partition or offset")
	}
	return e, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// IsClaimKey reports whether key is a claim's key.
func IsClaimKey(key []byte) bool { return strings.HasPrefix(string(key), "~claim/") }
