package tick

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// Cancellations. The leader emits ticks ahead of their slot, so a schedule that is paused or deleted can have
// ticks on the work topic that must no longer run. A Cancel record says so: the leader writes it to every work
// partition, in a transaction of its term, when it sees the change, and a worker remembers it while it holds
// ticks for their instant (only a cancel written in a transaction counts: internal/cancel.Genuine).
//
// A Cancel of schedule S cancels each scheduled tick of S emitted under a version older than Before whose start
// instant (StartAt) is after After, and, when Until is set, whose slot is before Until. Manual triggers are never cancelled. A cancelled tick is recorded with the
// outcome "cancelled". Cancels only ever take ticks away; they never make a slot run twice.
//
// A cancel record is keyed CancelKeyPrefix + schedule and carries the header HeaderKind = KindCancel. A reader
// that does not know cancels (a worker from before them) sees an unreadable tick and dead-letters it.
type Cancel struct {
	V        int    `json:"v"`
	Kind     string `json:"kind"`
	Schedule string `json:"schedule"`
	// Before is the schedule version (schedules-topic offset) of the pause or deletion: ticks emitted under an
	// older version are cancelled.
	Before int64 `json:"before_version"`
	// After is the instant of the change: ticks that start at or before it are left to run.
	After time.Time `json:"after"`
	// Reason is "paused" or "deleted".
	Reason string `json:"reason"`
	// Until, when set, is the end of a pause (PausedUntil): ticks whose slot is at or after it are left to run.
	// A reader from before this field cancels them too (the safe side: a slot it cancels is not run, none runs
	// twice); the leader writes it only for a pause with an end.
	Until time.Time `json:"until,omitzero"`
}

// Cancel reasons.
const (
	ReasonPaused  = "paused"
	ReasonDeleted = "deleted"
)

// HeaderKind is the header that marks a work-topic record that is not a tick; KindCancel its value for a Cancel.
const (
	HeaderKind      = "tickgroup-kind"
	KindCancel      = "cancel"
	CancelKeyPrefix = "~cancel/"
)

// Applies reports whether c cancels t.
func (c Cancel) Applies(t Tick) bool {
	return !t.Trigger && t.Schedule == c.Schedule && t.ScheduleVersion < c.Before && t.StartAt().After(c.After) &&
		(c.Until.IsZero() || t.Slot.Before(c.Until))
}

// EncodeCancel returns the JSON of c.
func EncodeCancel(c Cancel) []byte {
	c.V, c.Kind = Version, KindCancel
	b, _ := json.Marshal(c) // plain fields always marshal
	return b
}

// DecodeCancel parses the value of a cancel record.
func DecodeCancel(b []byte) (Cancel, error) {
	var c Cancel
	if err := json.Unmarshal(b, &c); err != nil {
		return Cancel{}, fmt.Errorf("decoding cancel: %w", errlimit.Wrap(err))
	}
	switch {
	case c.V != Version:
		return Cancel{}, fmt.Errorf("decoding cancel: version %d: %w", c.V, ErrUnknownVersion)
	case c.Kind != KindCancel:
		return Cancel{}, fmt.Errorf("decoding cancel: kind %s", errlimit.Quote(c.Kind))
	case c.Schedule == "":
		return Cancel{}, errors.New("decoding cancel: missing schedule")
	case c.After.IsZero():
		return Cancel{}, errors.New("decoding cancel: missing after")
	}
	return c, nil
}
