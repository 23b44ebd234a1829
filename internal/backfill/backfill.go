package backfill

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Version is the major version of the records written by this build.
const Version = 1

// Limits of a request.
const (
	// MaxSlots is the most slots one backfill runs: its request record (about 32 bytes a slot) stays well within
	// Kafka's default record size. A longer range is split into several backfills.
	MaxSlots = 10_000
	// MaxRunning bounds Request.MaxRunning.
	MaxRunning = 100
	// MaxReason bounds the free text of a request or cancellation.
	MaxReason = schedule.MaxReasonLen
	// MaxAhead is how far after its reader's clock a request may say it was created: a writer's clock may be a
	// little ahead, but a request from the future would stay under way for as long as it pleases (a leader waits
	// for the schedule of a request younger than a minute).
	MaxAhead = 5 * time.Minute
)

// Reprocess says which slots of the range a backfill runs again.
type Reprocess string

// The Reprocess choices.
const (
	// ReprocessNone runs only the slots that have no outcome: the slots that never ran.
	ReprocessNone Reprocess = "none"
	// ReprocessFailed runs the slots whose last outcome is not ok, or that have none.
	ReprocessFailed Reprocess = "failed"
	// ReprocessAll runs every slot of the range.
	ReprocessAll Reprocess = "all"
)

// ParseReprocess returns the Reprocess named s ("" is ReprocessNone).
func ParseReprocess(s string) (Reprocess, error) {
	switch r := Reprocess(s); r {
	case "":
		return ReprocessNone, nil
	case ReprocessNone, ReprocessFailed, ReprocessAll:
		return r, nil
	}
	return "", fmt.Errorf("reprocess %s: want none, failed or all", errlimit.Quote(s))
}

// Request is a backfill as its client asks for it (the value of the record keyed by its ID).
type Request struct {
	V        int    `json:"v"`
	ID       string `json:"id"`
	Schedule string `json:"schedule"`
	// From and To are the range asked for: the slots at or after From and before To.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Reprocess is what the client decided the slots by; Skipped counts the slots of the range it left out.
	Reprocess Reprocess `json:"reprocess"`
	Skipped   int       `json:"skipped"`
	// Slots are the slots to run, in increasing order.
	Slots []time.Time `json:"slots"`
	// MaxRunning is how many of the slots may be emitted without an outcome at once.
	MaxRunning int `json:"max_running"`
	// ScheduleVersion is the schedule's version the slots were computed from.
	ScheduleVersion int64     `json:"schedule_version"`
	CreatedAt       time.Time `json:"created_at"`
	By              string    `json:"by,omitempty"`
	Reason          string    `json:"reason,omitempty"`
}

// Progress is how far the leader has brought a backfill (the value of its record on the progress topic, keyed by the ID).
type Progress struct {
	V  int    `json:"v"`
	ID string `json:"id"`
	// Request identifies the request the progress is of (RequestHash of its record's value): a request written
	// again under the same ID with other content is refused rather than mixed with this one's progress; the same
	// content written again (a leader's restatement) is the same request.
	Request string `json:"request"`
	// Next is how many of the request's slots are emitted (Slots[:Next]).
	Next int `json:"next"`
	// Running are the indices, below Next, of the slots emitted without an outcome yet.
	Running []int `json:"running,omitempty"`
	// Shards is how many ticks each slot has, and Pool the worker pool they go to: the schedule's when the
	// backfill started, kept for all its slots.
	Shards int    `json:"shards"`
	Pool   string `json:"pool,omitempty"`
	// Since is when the oldest of the Running slots was emitted: their outcomes are read from then on.
	Since time.Time `json:"since,omitzero"`
	// Ended says why the backfill ended (an End constant); empty while it runs.
	Ended string    `json:"ended,omitempty"`
	At    time.Time `json:"at"`
}

// Why a backfill ended (Progress.Ended).
const (
	EndDone      = "done"
	EndCancelled = "cancelled"
	EndDeleted   = "schedule deleted"
	EndRefused   = "refused"
)

// Cancel is a request to stop a backfill (the value of the record keyed ID.cancel).
type Cancel struct {
	V      int       `json:"v"`
	ID     string    `json:"id"`
	At     time.Time `json:"at"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// cancelSuffix ends the key of a cancellation record.
const cancelSuffix = ".cancel"

// CancelKey is the key of the cancellation of backfill id.
func CancelKey(id string) string { return id + cancelSuffix }

// NewID returns a fresh backfill ID: the creation instant and 4 random bytes, so that IDs sort by creation.
func NewID(now time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return now.UTC().Format("20060102t150405") + "-" + hex.EncodeToString(b)
}

// ValidID reports whether id can be a backfill's ID: 1-64 characters of [a-z0-9-].
func ValidID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Slots returns the slots of s in [from, to), at most limit+1 of them (so that a caller sees the range is too
// long). The slots are the definition's whatever its pause: a backfill runs past slots a pause left out too.
// A schedule that excludes calendars has as slots those its calendars (found by cals, as they are now) leave
// (calendar.Apply), as the leader's: under skip its slots on the days they do not exclude, under a move policy
// the slots of the runs whose instants are in the range, in order of slot; excluded counts the others of the
// range (at most 1,000,000). A calendar it excludes that cals does not find is an error: its days would run.
func Slots(spec schedule.Spec, from, to time.Time, limit int, cals func(string) (*calendar.Calendar, bool)) (slots []time.Time, excluded int, err error) {
	spec.Paused, spec.PausedUntil, spec.PauseReason = false, nil, ""
	raw, err := spec.Compile()
	if err != nil {
		return nil, 0, err
	}
	s := raw
	if len(spec.Exclude) > 0 {
		if cals == nil {
			cals = calendar.Getter(nil)
		}
		var missing []string
		if s, missing = calendar.Apply(raw, cals); len(missing) > 0 {
			return nil, 0, fmt.Errorf("schedule %s excludes %s, which the namespace does not have: the slots of the days it excludes are unknown",
				errlimit.Quote(spec.Name), strings.Join(missing, ", "))
		}
	}
	end := to
	for at := s.Next(from.Add(-time.Nanosecond)); !at.IsZero() && at.Before(to) && len(slots) <= limit; at = s.Next(at) {
		slots = append(slots, s.SlotOf(at)) // under a move policy, the run at `at` is its slot's
		end = at
	}
	if s == raw {
		return slots, 0, nil
	}
	if len(slots) <= limit {
		end = to
	}
	// Under a move policy the runs of the range are those whose instant is in it, named by their slots, which
	// need not be in order (a run moved to the previous business day comes before the slot it is): a backfill
	// lists them in order of slot.
	slices.SortFunc(slots, time.Time.Compare)
	// The excluded slots of the range (of the part listed, when it is too long), counted up to maxExcluded: a
	// slot of the definition that is no run's (skipped, or merged into another run under a move policy).
	kept := make(map[int64]bool, len(slots))
	for _, sl := range slots {
		kept[sl.Unix()] = true
	}
	for at := raw.Next(from.Add(-time.Nanosecond)); !at.IsZero() && at.Before(end) && excluded < maxExcluded; at = raw.Next(at) {
		if !kept[at.Unix()] {
			excluded++
		}
	}
	return slots, excluded, nil
}

// maxExcluded bounds the count of excluded slots Slots makes (a 1s schedule's excluded week is 604,800 slots).
const maxExcluded = 1_000_000

// Validate checks a request as a reader must before acting on it: anyone with Write on the topic can write one.
func (r *Request) Validate() error {
	switch {
	case r.V != Version:
		return fmt.Errorf("backfill request: version %d, want %d", r.V, Version)
	case !ValidID(r.ID):
		return fmt.Errorf("backfill request: id %s: want 1-64 characters of a-z, 0-9 and -", errlimit.Quote(r.ID))
	case !schedule.ValidName(r.Schedule):
		return fmt.Errorf("backfill request %s: schedule %s: not a schedule's name", r.ID, errlimit.Quote(r.Schedule))
	case len(r.Slots) == 0 || len(r.Slots) > MaxSlots:
		return fmt.Errorf("backfill request %s: %d slots, want 1 to %d", r.ID, len(r.Slots), MaxSlots)
	case r.MaxRunning < 1 || r.MaxRunning > MaxRunning:
		return fmt.Errorf("backfill request %s: max_running %d, want 1 to %d", r.ID, r.MaxRunning, MaxRunning)
	case !freeText(r.Reason) || !freeText(r.By):
		return fmt.Errorf("backfill request %s: reason or by longer than %d bytes, or not printable text", r.ID, MaxReason)
	}
	for i, s := range r.Slots {
		if s.IsZero() || s.Year() < 1970 || s.Year() > 9999 {
			return fmt.Errorf("backfill request %s: slot %d out of range", r.ID, i)
		}
		if i > 0 && !s.After(r.Slots[i-1]) {
			return fmt.Errorf("backfill request %s: slots not in increasing order at %d", r.ID, i)
		}
		if r.CreatedAt.IsZero() || s.After(r.CreatedAt) {
			return fmt.Errorf("backfill request %s: slot %s is not in the past of the request", r.ID, s.Format(time.RFC3339))
		}
	}
	return nil
}

// freeText reports whether s is a request's free text: at most MaxReason bytes of printable text (shown in
// terminals and pages).
func freeText(s string) bool { return len(s) <= MaxReason && schedule.Printable(s) }

// checkCreated refuses a request created more than MaxAhead after now, its reader's time.
func (r *Request) checkCreated(now time.Time) error {
	if r.CreatedAt.After(now.Add(MaxAhead)) {
		return fmt.Errorf("backfill request %s: created at %s, in the future", r.ID, r.CreatedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// EncodeRequest returns the record value of r, after validating it.
func EncodeRequest(r Request) ([]byte, error) {
	r.V = Version
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// DecodeRequest parses and validates a request record's value.
func DecodeRequest(key string, b []byte) (Request, error) {
	var r Request
	if err := json.Unmarshal(b, &r); err != nil {
		return Request{}, fmt.Errorf("backfill request %s: %w", errlimit.Quote(key), errlimit.Wrap(err))
	}
	for i := range r.Slots {
		r.Slots[i] = r.Slots[i].UTC()
	}
	if err := r.Validate(); err != nil {
		return Request{}, err
	}
	if r.ID != key {
		return Request{}, fmt.Errorf("backfill request %s under key %s", r.ID, errlimit.Quote(key))
	}
	return r, nil
}

// EncodeProgress returns the record value of p.
func EncodeProgress(p Progress) []byte {
	p.V = Version
	b, _ := json.Marshal(p) // nothing in a Progress can fail to encode
	return b
}

// DecodeProgress parses a progress record's value; max is the request's slot count.
func DecodeProgress(b []byte, slots int) (Progress, error) {
	var p Progress
	if err := json.Unmarshal(b, &p); err != nil {
		return Progress{}, fmt.Errorf("backfill progress: %w", errlimit.Wrap(err))
	}
	if p.V != Version || p.Next < 0 || p.Next > slots || len(p.Running) > MaxRunning || p.Shards < 0 || p.Shards > schedule.MaxShards {
		return Progress{}, fmt.Errorf("backfill progress of %s: out of range", errlimit.Quote(p.ID))
	}
	for j, i := range p.Running {
		if i < 0 || i >= p.Next || j > 0 && i <= p.Running[j-1] {
			return Progress{}, fmt.Errorf("backfill progress of %s: running slot %d not emitted, or not in order", errlimit.Quote(p.ID), i)
		}
	}
	return p, nil
}

// EncodeCancel returns the record value of c.
func EncodeCancel(c Cancel) ([]byte, error) {
	c.V = Version
	if !ValidID(c.ID) || len(c.Reason) > MaxReason || len(c.By) > MaxReason {
		return nil, fmt.Errorf("backfill cancel: id %s or its reason is not valid", errlimit.Quote(c.ID))
	}
	return json.Marshal(c)
}

// DecodeCancel parses a cancellation record's value.
func DecodeCancel(key string, b []byte) (Cancel, error) {
	var c Cancel
	if err := json.Unmarshal(b, &c); err != nil {
		return Cancel{}, fmt.Errorf("backfill cancel %s: %w", errlimit.Quote(key), errlimit.Wrap(err))
	}
	if c.V != Version || CancelKey(c.ID) != key {
		return Cancel{}, fmt.Errorf("backfill cancel %s: version or id does not match", errlimit.Quote(key))
	}
	return c, nil
}

// KeyKind splits a record key of the backfills topic into the backfill's ID and the record's kind: "request" or
// "cancel".
func KeyKind(key string) (id, kind string) {
	if strings.HasSuffix(key, cancelSuffix) {
		return strings.TrimSuffix(key, cancelSuffix), "cancel"
	}
	return key, "request"
}

// RequestHash identifies a request by its record's value (Progress.Request).
func RequestHash(value []byte) string {
	h := sha256.Sum256(value)
	return hex.EncodeToString(h[:16])
}
