// Package ledger is the execution ledger: the records a worker writes to <ns>.results for every tick it takes
// over, starts and finishes, and the fold that turns a results partition back into "what has happened to each
// tick of this work partition".
//
// The results topic has as many partitions as the work topic, and the entries of work partition p go to results
// partition p (modulo the results partition count), so a work partition's ledger is one ordered log. Five kinds
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
//     A release with Retry set says instead that attempt Attempt failed (its handler returned an error, its
//     process is gone) and that another attempt follows after a backoff: nothing runs the tick meanwhile, and
//     nothing was cut off, so when the partition moves during the backoff its next owner goes on at once with
//     the next attempt, not as an interrupted tick (unless the attempt itself followed an interruption:
//     Interrupted). Valid only from the runner of the tick's latest attempt while it runs, like a renewal (or,
//     when the start is gone from the log, from the partition's owner of the time, like a release); a renewal
//     after it shows the run alive and undoes it. (A build that does not know Retry reads a release:
//     the tick counts as interrupted, the safe side.)
//     A release with Unstarted set says that attempt Attempt's handler never started: its runner wrote the
//     start and then could not confirm it (the broker went away, the lane lost its partition) or gave the run
//     up before the handler's instant, and it knows that nothing ran. The fold then forgets the attempt, as if
//     it had never been started: the tick is not interrupted by it, and its next start is the same attempt.
//     Valid only from the runner of the tick's latest attempt while it runs, like a renewal; otherwise ignored.
//     (A build that does not know Unstarted reads a release: the tick counts as interrupted, the safe side.)
//   - outcome (key: tick ID): the tick's final result (ok, failed, skipped_late, skipped_overlap,
//     dead_lettered, interrupted). Records written before the ledger existed have no "kind" and a "status":
//     they are outcomes.
//
// A worker that has several entries for one partition ready at once writes them as one batch record (key
// "~batch/<p>/<worker>/<nonce>", unique, so that compaction never drops it for another record's sake; retention
// removes it): its entries count as if they had been written one after the other at the batch's offset, in
// their order. A batch holds no claim and no batch. Readers expand it with Entries.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	KindBatch    = "batch"
)

// MaxBatch is the most entries a batch may hold.
const MaxBatch = 1000

// Outcome statuses, the status field of an outcome entry.
const (
	// StatusOK: the handler succeeded.
	StatusOK = "ok"
	// StatusFailed: the handler failed permanently (a Permanent error, an HTTP 4xx); the tick is also in the
	// dead-letter topic with reason "permanent".
	StatusFailed = "failed"
	// StatusSkippedLate: the tick would have started after its deadline and did not run.
	StatusSkippedLate = "skipped_late"
	// StatusSkippedOverlap: the schedule's overlap policy is skip and a newer tick of the same schedule and
	// shard was already due when this one could start.
	StatusSkippedOverlap = "skipped_overlap"
	// StatusDeadLettered: every attempt failed, or the record was not a readable tick; it is in the
	// dead-letter topic.
	StatusDeadLettered = "dead_lettered"
	// StatusInterrupted: an earlier run was cut off and the worker's on-interrupted policy is skip: the tick is
	// not run again.
	StatusInterrupted = "interrupted"
	// StatusCancelled: the schedule was paused or deleted after the tick was emitted (ahead of its slot) and
	// before it started: it did not run.
	StatusCancelled = "cancelled"
	// StatusSkippedGate: the schedule requires another's slot (schedule.Spec.Requires) and that slot had not
	// succeeded when this one was due; the error says why. It did not run.
	StatusSkippedGate = "skipped_gate"
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
	// Interrupted marks an outcome, start or retry that follows an interrupted earlier run.
	Interrupted bool `json:"interrupted,omitempty"`
	// Retry marks a release that is not a cut: the attempt failed and another follows (see the package comment).
	Retry bool `json:"retry,omitempty"`
	// Unstarted marks a release of an attempt whose handler never started (see the package comment).
	Unstarted  bool       `json:"unstarted,omitempty"`
	At         time.Time  `json:"at"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// LeaseMS is the lease the writer gives its running handlers: in a claim, for every run of its own; in a
	// started or renewed entry, for that run. A run that is not renewed ends within that long of its last proof.
	LeaseMS int64 `json:"lease_ms,omitempty"`
	// Output is the tail of the last attempt's output, in an outcome of a worker that records it
	// (worker run --record-output); absent otherwise.
	Output string `json:"output,omitempty"`
	// Limit, in a started entry, names the limit the tick counts against (tick.Tick.Limit): a new owner of the
	// partition reads the starts of the limit's last window back from them (ReadLimitStarts).
	Limit string `json:"limit,omitempty"`
	// Entries are a batch's entries, in the order they count.
	Entries []Entry `json:"entries,omitempty"`
}

// Each returns the entries e stands for: a batch's entries, or e itself.
func (e Entry) Each() []Entry {
	if e.Kind == KindBatch {
		return e.Entries
	}
	return []Entry{e}
}

// Entries decodes a ledger record value into the entries it stands for (see Decode and Each).
func Entries(b []byte) ([]Entry, error) {
	e, err := Decode(b)
	if err != nil {
		return nil, err
	}
	return e.Each(), nil
}

// BatchKey is the record key of a batch of partition p's entries written by worker; nonce makes it unique.
func BatchKey(p int32, worker, nonce string) []byte {
	return []byte("~batch/" + strconv.Itoa(int(p)) + "/" + worker + "/" + nonce)
}

// IsBatchKey reports whether key is a batch's key.
func IsBatchKey(key []byte) bool { return strings.HasPrefix(string(key), "~batch/") }

// AppendBatch appends to dst the value of a batch record of partition p written by worker at at, whose
// entries are encoded (each one a value Encode, or a worker's outcome record, wrote).
func AppendBatch(dst []byte, p int32, worker string, at time.Time, encoded [][]byte) []byte {
	w, _ := json.Marshal(worker)
	ts, _ := at.UTC().MarshalJSON()
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = append(dst, `,"kind":"batch","partition":`...)
	dst = strconv.AppendInt(dst, int64(p), 10)
	dst = append(dst, `,"offset":0,"fence":0,"worker":`...)
	dst = append(dst, w...)
	dst = append(dst, `,"at":`...)
	dst = append(dst, ts...)
	dst = append(dst, `,"entries":[`...)
	for i, b := range encoded {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, b...)
	}
	return append(dst, "]}"...)
}

// ClaimKey is the record key of partition p's claims.
func ClaimKey(p int32) []byte { return []byte("~claim/" + strconv.Itoa(int(p))) }

// Encode returns e's JSON form, with V set.
func Encode(e Entry) []byte {
	e.V = Version
	if b, ok := appendEntry(make([]byte, 0, 320+len(e.Error)), &e); ok {
		return b
	}
	if e.Entries != nil {
		e.Entries = slices.Clone(e.Entries)
		for i := range e.Entries {
			e.Entries[i].V = Version
		}
	}
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
	if err := check(&e, true); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// check validates a decoded entry (a batch's entries too, when top is set).
func check(e *Entry, top bool) error {
	if e.Kind == "" && e.Status != "" {
		e.Kind, e.V = KindOutcome, max(e.V, Version)
	}
	if e.V != Version {
		return fmt.Errorf("decoding ledger entry: version %d: %w", e.V, ErrUnknownVersion)
	}
	if e.Kind != KindBatch && e.Entries != nil {
		return fmt.Errorf("decoding ledger entry: a %s with entries", truncate(e.Kind, 32))
	}
	switch e.Kind {
	case KindBatch:
		if !top {
			return errors.New("decoding ledger entry: a batch inside a batch")
		}
		if len(e.Entries) == 0 || len(e.Entries) > MaxBatch {
			return fmt.Errorf("decoding ledger entry: a batch of %d entries (1 to %d)", len(e.Entries), MaxBatch)
		}
		for i := range e.Entries {
			x := &e.Entries[i]
			if x.Kind == KindClaim {
				return errors.New("decoding ledger entry: a claim inside a batch")
			}
			if err := check(x, false); err != nil {
				return err
			}
			if x.Partition != e.Partition {
				return errors.New("decoding ledger entry: a batch entry of another partition")
			}
		}
	case KindClaim:
	case KindStarted, KindReleased, KindOutcome, KindRenewed:
		if e.ID == "" {
			return fmt.Errorf("decoding ledger entry: %s without a tick id", e.Kind)
		}
		if e.Kind == KindOutcome && e.Status == "" {
			return errors.New("decoding ledger entry: outcome without a status")
		}
	default:
		return fmt.Errorf("decoding ledger entry: unknown kind %q", truncate(e.Kind, 32))
	}
	if e.Partition < 0 || e.Offset < 0 {
		return errors.New("decoding ledger entry: negative partition or offset")
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return errlimit.Cut(s, n) + "..."
}

// IsClaimKey reports whether key is a claim's key.
func IsClaimKey(key []byte) bool { return strings.HasPrefix(string(key), "~claim/") }
