package schedule

import (
	"cmp"
	"encoding/binary"
	"hash/fnv"
	"time"

	// Embedded zone database: the ticker runs from scratch images that have no /usr/share/zoneinfo, and a schedule
	// must not change meaning with the host it happens to run on.
	_ "time/tzdata"
)

// Schedule is a validated, compiled Spec. It is immutable and safe for concurrent use.
//
// A leader holds one per schedule, a million of them on a large fleet, so it keeps the Spec's fields in compact
// form (80 bytes where the Spec alone takes 168): the enumerations as small integers, and the fields an interval
// schedule rarely sets (cron, zone, start, end, deadline) behind one pointer, nil when none is set. Spec rebuilds the Spec.
type Schedule struct {
	name, payload string
	// Interval schedules: slots are offset + k*every Unix seconds. every is 0 for cron schedules.
	every, offset    int64
	jitter           Duration
	shards           int32 // at most MaxShards
	catchupCap       int32 // CatchupMax, at most MaxCatchupMax
	catchup, overlap uint8 // indexes of catchups and overlaps
	paused, metrics  bool
	x                *rare
}

// rare holds the fields of a Spec that a plain interval schedule leaves unset.
type rare struct {
	deadline       Duration
	startBy        Duration
	finishBy       Duration
	after, when    string // a chain's upstream and outcome (Spec.After, When)
	requires       string // a gate's schedule and window (Spec.Requires, RequiresWithin)
	requiresWithin Duration
	timeout        Duration
	maxAttempts    int32
	pool           string
	cronExpr, tz   string
	cron           *cronSched
	start, end     *time.Time
	pausedUntil    *time.Time // with Spec().Paused: no slot before it (see start)
	pauseReason    string
	limit          string
	priority       int8
	exclude        []string // the caller's copy (Spec.clone)
	onExcluded     string
	skip           Skip // Skipping's: no part of the Spec
	move           Move // Moving's: no part of the Spec
}

// The enumerated fields as written, "" first (the default, kept as written so that Spec restates it as such).
var (
	catchups = [...]string{"", CatchupSkip, CatchupLatest, CatchupAll}
	overlaps = [...]string{"", OverlapQueue, OverlapSkip}
)

// start is the earliest slot: the later of Start and PausedUntil (a pause with an end emits nothing before it).
func (s *Schedule) start() *time.Time {
	if s.x == nil {
		return nil
	}
	if u := s.x.pausedUntil; u != nil && (s.x.start == nil || u.After(*s.x.start)) {
		return u
	}
	return s.x.start
}

func (s *Schedule) end() *time.Time {
	if s.x == nil {
		return nil
	}
	return s.x.end
}

func (s *Schedule) cron() *cronSched {
	if s.x == nil {
		return nil
	}
	return s.x.cron
}

// Compile validates s (see Validate) and builds its Schedule.
func (s Spec) Compile() (*Schedule, error) {
	return s.compile(false)
}

// Spec returns the spec the schedule was compiled from.
func (s *Schedule) Spec() Spec {
	sp := Spec{
		Name:       s.name,
		Every:      Duration(s.every) * Duration(time.Second),
		Offset:     Duration(s.offset) * Duration(time.Second),
		Jitter:     s.jitter,
		Shards:     int(s.shards),
		Payload:    s.payload,
		Catchup:    catchups[s.catchup],
		CatchupMax: int(s.catchupCap),
		Overlap:    overlaps[s.overlap],
		Paused:     s.paused,
		Metrics:    s.metrics,
	}
	if s.x != nil {
		sp.Cron, sp.TZ, sp.Start, sp.End, sp.Deadline = s.x.cronExpr, s.x.tz, s.x.start, s.x.end, s.x.deadline
		sp.StartBy, sp.FinishBy = s.x.startBy, s.x.finishBy
		sp.After, sp.When = s.x.after, s.x.when
		sp.Requires, sp.RequiresWithin = s.x.requires, s.x.requiresWithin
		sp.Timeout, sp.MaxAttempts, sp.Pool = s.x.timeout, int(s.x.maxAttempts), s.x.pool
		sp.PausedUntil, sp.PauseReason = s.x.pausedUntil, s.x.pauseReason
		sp.Limit, sp.Priority = s.x.limit, int(s.x.priority)
		sp.Exclude, sp.OnExcluded = s.x.exclude, s.x.onExcluded
		sp.Paused = sp.Paused || sp.PausedUntil != nil
	}
	return sp.clone()
}

// Name is the schedule's name (Spec().Name without the copy).
func (s *Schedule) Name() string { return s.name }

// Paused reports whether the schedule emits nothing until it is changed: Spec().Paused without an end
// (PausedUntil). A pause with an end emits from that end on, as a later Start would.
func (s *Schedule) Paused() bool { return s.paused }

// Pausing reports Spec().Paused, with an end or without, without the copy: a change to it cancels the ticks
// emitted ahead into the pause.
func (s *Schedule) Pausing() bool { return s.paused || s.x != nil && s.x.pausedUntil != nil }

// PausedUntil is Spec().PausedUntil without the copy (nil: none). The caller must not change it.
func (s *Schedule) PausedUntil() *time.Time {
	if s.x == nil {
		return nil
	}
	return s.x.pausedUntil
}

// Metrics reports Spec().Metrics without the copy.
func (s *Schedule) Metrics() bool { return s.metrics }

// Payload is Spec().Payload without the copy.
func (s *Schedule) Payload() string { return s.payload }

// Limit is Spec().Limit without the copy ("": none).
func (s *Schedule) Limit() string {
	if s.x == nil {
		return ""
	}
	return s.x.limit
}

// Priority is Spec().Priority without the copy (0: the default).
func (s *Schedule) Priority() int {
	if s.x == nil {
		return 0
	}
	return int(s.x.priority)
}

// Exclude is Spec().Exclude without the copy (nil: none). The caller must not change it.
func (s *Schedule) Exclude() []string {
	if s.x == nil {
		return nil
	}
	return s.x.exclude
}

// OnExcluded is Spec().OnExcluded without the copy ("": the default, skip).
func (s *Schedule) OnExcluded() string {
	if s.x == nil {
		return ""
	}
	return s.x.onExcluded
}

// Overlap is Spec().Overlap without the copy.
func (s *Schedule) Overlap() string { return overlaps[s.overlap] }

// After returns the upstream of a chain and the outcome it runs on (When, its default filled in); "" for a
// schedule with slots of its own.
func (s *Schedule) After() (upstream, when string) {
	if s.x == nil || s.x.after == "" {
		return "", ""
	}
	return s.x.after, cmp.Or(s.x.when, WhenSuccess)
}

// Requires returns the schedule a gate requires and its window (Spec.Requires, RequiresWithin); "" without a gate.
func (s *Schedule) Requires() (schedule string, within time.Duration) {
	if s.x == nil {
		return "", 0
	}
	return s.x.requires, time.Duration(s.x.requiresWithin)
}

// Watch returns Spec().StartBy and FinishBy without the copy (0: none).
func (s *Schedule) Watch() (startBy, finishBy time.Duration) {
	if s.x == nil {
		return 0, 0
	}
	return time.Duration(s.x.startBy), time.Duration(s.x.finishBy)
}

// Deadline is Spec().Deadline without the copy.
func (s *Schedule) Deadline() time.Duration {
	if s.x == nil {
		return 0
	}
	return time.Duration(s.x.deadline)
}

// Timeout is Spec().Timeout without the copy: 0 for the worker's.
func (s *Schedule) Timeout() time.Duration {
	if s.x == nil {
		return 0
	}
	return time.Duration(s.x.timeout)
}

// MaxAttempts is Spec().MaxAttempts without the copy: 0 for the worker's.
func (s *Schedule) MaxAttempts() int {
	if s.x == nil {
		return 0
	}
	return int(s.x.maxAttempts)
}

// Pool is the pool that runs the schedule's ticks: "" for the default pool (Spec().Pool empty or DefaultPool).
func (s *Schedule) Pool() string {
	if s.x == nil || s.x.pool == DefaultPool {
		return ""
	}
	return s.x.pool
}

// Shards is the number of ticks per slot: Spec().Shards, at least 1, without the copy.
func (s *Schedule) Shards() int { return max(int(s.shards), 1) }

// Jittered reports whether the schedule has a jitter: without one, Due(slot) is slot.
func (s *Schedule) Jittered() bool { return s.jitter != 0 }

// Next returns the first slot strictly after `after`, in UTC, or the zero time if there is none (past End).
// Slots are whole seconds, never before Start and never after End. A skipping schedule (Skipping) returns the
// first slot its Skip keeps, and the zero time when it keeps none within MaxSkip; a moving schedule (Moving)
// returns its next run's instant, whose identity is SlotOf.
func (s *Schedule) Next(after time.Time) time.Time {
	if s.x != nil {
		switch {
		case s.x.skip != nil:
			t, _ := s.nextKept(after)
			return t
		case s.x.move != nil:
			t, _ := s.x.move(after)
			return t
		}
	}
	return s.next(after)
}

// next is Next without the Skip: the definition's own slots.
func (s *Schedule) next(after time.Time) time.Time {
	if s.x != nil && s.x.after != "" {
		return time.Time{} // a chain has no slots of its own
	}
	if start := s.start(); start != nil && after.Before(*start) {
		// The first slot at or after Start.
		after = start.Add(-time.Nanosecond)
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
		if slot, ok = s.cron().next(a); !ok {
			return time.Time{}
		}
	}
	t := time.Unix(slot, 0).UTC()
	if end := s.end(); end != nil && t.After(*end) {
		return time.Time{}
	}
	return t
}

// Upcoming returns up to n slots strictly after `after`, in order (fewer past End): what the schedule's
// definition makes, whether it is paused or not (the caller decides what a pause means for them).
func (s *Schedule) Upcoming(after time.Time, n int) []time.Time {
	var out []time.Time
	for range n {
		next := s.Next(after)
		if next.IsZero() {
			break
		}
		out = append(out, next)
		after = next
	}
	return out
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
	j := uint64(s.jitter)
	if j == 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(s.name))
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
