package schedule

import (
	"encoding/binary"
	"hash/fnv"
	"time"

	// Embedded zone database: the ticker runs from scratch images that have no /usr/share/zoneinfo, and a schedule
	// must not change meaning with the host it happens to run on.
	_ "time/tzdata"
)

// Schedule is a validated, compiled Spec. It is immutable and safe for concurrent use.
type Schedule struct {
	spec Spec
	// Interval schedules: slots are offset + k*every Unix seconds. every is 0 for cron schedules.
	every, offset int64
	cron          *cronSched
}

// Compile validates s (see Validate) and builds its Schedule.
func (s Spec) Compile() (*Schedule, error) {
	return s.compile()
}

// Spec returns the spec the schedule was compiled from.
func (s *Schedule) Spec() Spec {
	return s.spec.clone()
}

// Next returns the first slot strictly after `after`, in UTC, or the zero time if there is none (past End).
// Slots are whole seconds, never before Start and never after End.
func (s *Schedule) Next(after time.Time) time.Time {
	if s.spec.Start != nil && after.Before(*s.spec.Start) {
		// The first slot at or after Start.
		after = s.spec.Start.Add(-time.Nanosecond)
	}
	// Slots are whole seconds, so "after a" and "after a's whole second" are the same condition: Unix() floors.
	a := after.Unix()
	var slot int64
	if s.every > 0 {
		// Smallest offset + k*every > a, by arithmetic: O(1) whatever the distance from the epoch.
		k := floorDiv(a-s.offset, s.every) + 1
		slot = s.offset + k*s.every
	} else {
		var ok bool
		if slot, ok = s.cron.next(a); !ok {
			return time.Time{}
		}
	}
	t := time.Unix(slot, 0).UTC()
	if s.spec.End != nil && t.After(*s.spec.End) {
		return time.Time{}
	}
	return t
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Jitter returns how long after slot its ticks are emitted: a value in [0, Jitter) derived only from the
// schedule's name and the slot, so every replica (and a new leader re-emitting after failover) computes the same
// instant, and schedules sharing a slot spread out instead of firing together.
func (s *Schedule) Jitter(slot time.Time) time.Duration {
	j := uint64(s.spec.Jitter)
	if j == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(s.spec.Name))
	h.Write([]byte{0}) // separates the name from the slot, so ("a", x) and ("a\x00...", y) cannot meet
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(slot.Unix()))
	h.Write(b[:])
	return time.Duration(h.Sum64() % j)
}

// Due returns when the leader emits slot: slot + Jitter(slot).
func (s *Schedule) Due(slot time.Time) time.Time {
	return slot.Add(s.Jitter(slot))
}
