package tick

import "time"

// Source is what a tick takes from its schedule: the one place that turns a schedule's slot (or a manual
// trigger) into the ticks of its shards, for the leader and for `ticker schedule trigger` alike.
type Source struct {
	Schedule string
	// Shards is the number of ticks per slot; 0 means 1.
	Shards int
	// Payload is copied into every tick.
	Payload string
	// Version is the schedule's version (the offset of its record in the schedules topic).
	Version int64
	// Deadline, when positive, makes each tick expire that long after its slot (or trigger instant).
	Deadline time.Duration
	// LeaderEpoch is the producer epoch of the leader term that emits the ticks (0 for a trigger).
	LeaderEpoch int64
	// Overlap is the schedule's overlap policy (OverlapQueue or OverlapSkip; empty means queue).
	Overlap string
}

// AppendSlot appends to dst the ticks of slot, one per shard, emitted at emittedAt. notBefore, when not zero,
// is the slot's due instant (Tick.NotBefore): ticks emitted ahead of their slot carry it.
func (s Source) AppendSlot(dst []Tick, slot, notBefore, emittedAt time.Time) []Tick {
	shards := max(s.Shards, 1)
	for shard := range shards {
		t := s.fill(New(s.Schedule, slot, shard, shards), slot, emittedAt)
		if !notBefore.IsZero() {
			nb := notBefore.UTC()
			t.NotBefore = &nb
		}
		dst = append(dst, t)
	}
	return dst
}

// Trigger returns the ticks of a manual trigger at instant at, one per shard. Their IDs carry nonce and can never
// collide with a scheduled slot's; their slot is at and they are marked Trigger.
func (s Source) Trigger(at time.Time, nonce string) []Tick {
	shards := max(s.Shards, 1)
	out := make([]Tick, 0, shards)
	for shard := range shards {
		t := New(s.Schedule, at, shard, shards)
		t.ID = TriggerID(s.Schedule, at, nonce, shard, shards)
		t.Trigger = true
		out = append(out, s.fill(t, at, at))
	}
	return out
}

func (s Source) fill(t Tick, base, emittedAt time.Time) Tick {
	t.Payload = s.Payload
	t.ScheduleVersion = s.Version
	t.LeaderEpoch = s.LeaderEpoch
	t.EmittedAt = emittedAt
	if s.Overlap == OverlapSkip && !t.Trigger {
		t.Overlap = OverlapSkip
	}
	if s.Deadline > 0 {
		dl := base.Add(s.Deadline)
		t.Deadline = &dl
	}
	return t
}

// Partition is the work-topic partition of t among partitions (see the function Partition).
func (t Tick) Partition(partitions int) int32 { return Partition(t.Schedule, t.Shard, partitions) }
