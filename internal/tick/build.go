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
	// Overlap is the schedule's overlap policy (OverlapQueue, OverlapSkip, or empty for the default).
	Overlap string
	// Metrics is set for a schedule with metrics of its own (Tick.Metrics).
	Metrics bool
	// Timeout and MaxAttempts are the schedule's execution settings (Tick.TimeoutMS, Tick.MaxAttempts); 0 leaves
	// them to the worker.
	Timeout     time.Duration
	MaxAttempts int
	// StartBy and FinishBy are the schedule's watched deadlines (Tick.StartByMS, Tick.FinishByMS), for its
	// scheduled ticks; 0: none.
	StartBy, FinishBy time.Duration
	// Gate, when set, is why the schedule's gate holds the slot back (Tick.Gate): set per slot by the leader.
	Gate string
	// Limit and Priority are the schedule's (Tick.Limit, Tick.Priority).
	Limit    string
	Priority int
}

// AppendSlot appends to dst the ticks of slot, one per shard, emitted at emittedAt. notBefore, when not zero,
// is the slot's due instant (Tick.NotBefore): ticks emitted ahead of their slot carry it.
func (s Source) AppendSlot(dst []Tick, slot, notBefore, emittedAt time.Time) []Tick {
	shards := max(s.Shards, 1)
	for shard := range shards {
		t, deadline := s.fill(New(s.Schedule, slot, shard, shards), slot, emittedAt)
		if !deadline.IsZero() {
			t.Deadline = &deadline
		}
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
		t, deadline := s.fill(t, at, at)
		if !deadline.IsZero() {
			t.Deadline = &deadline
		}
		out = append(out, t)
	}
	return out
}

// Backfill returns the ticks of backfill id for slot, one per shard: marked Trigger and Backfill, with IDs that
// can never collide with a scheduled slot's, a trigger's or another backfill's. A backfill tick has no deadline
// (its slot is past) and starts at once.
func (s Source) Backfill(slot, emittedAt time.Time, id string) []Tick {
	shards := max(s.Shards, 1)
	out := make([]Tick, 0, shards)
	for shard := range shards {
		t := New(s.Schedule, slot, shard, shards)
		t.ID = BackfillID(s.Schedule, slot, id, shard, shards)
		t.Trigger, t.Backfill = true, id
		t, _ = s.fill(t, slot, emittedAt)
		out = append(out, t)
	}
	return out
}

// fill returns t with what it takes from s, and its deadline (zero for none) for the caller to point it to: a
// pointer set here would put every deadline on the heap.
func (s Source) fill(t Tick, base, emittedAt time.Time) (Tick, time.Time) {
	t.Payload = s.Payload
	t.ScheduleVersion = s.Version
	t.LeaderEpoch = s.LeaderEpoch
	t.EmittedAt = emittedAt
	if !t.Trigger {
		t.Overlap = s.Overlap
	}
	t.Metrics = s.Metrics
	t.TimeoutMS = s.Timeout.Milliseconds()
	t.MaxAttempts = s.MaxAttempts
	if !t.Trigger {
		t.StartByMS, t.FinishByMS = s.StartBy.Milliseconds(), s.FinishBy.Milliseconds()
	}
	t.Limit, t.Priority = s.Limit, s.Priority
	if s.Limit != "" {
		t.V = VersionLimited
	}
	if s.Gate != "" && !t.Trigger {
		t.Gate, t.V = s.Gate, VersionGated
	}
	if s.Deadline > 0 {
		return t, base.Add(s.Deadline)
	}
	return t, time.Time{}
}

// Partition is the work-topic partition of t among partitions: its limit's (LimitPartition) when it has one,
// else its schedule's and shard's (the function Partition).
func (t Tick) Partition(partitions int) int32 {
	if t.Limit != "" {
		return LimitPartition(t.Limit, partitions)
	}
	return Partition(t.Schedule, t.Shard, partitions)
}

// SchedulePartitions returns the work partitions among partitions that hold the ticks of schedule's shards (of
// shards) when they count, or counted, against the limits named (empty names are skipped): the schedule's own
// partitions and each limit's, for a reader of its records across changes of its limit.
func SchedulePartitions(schedule string, shards int, limits []string, partitions int) []int32 {
	var out []int32
	add := func(p int32) {
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	for shard := range max(shards, 1) {
		add(Partition(schedule, shard, partitions))
	}
	for _, l := range limits {
		if l != "" {
			add(LimitPartition(l, partitions))
		}
	}
	return out
}

// Writer appends the records of scheduled ticks, the leader's hot path: each tick's ID, its record key, and its
// JSON, the record value. They are the bytes ID and AppendEncode give for the tick AppendSlot builds
// (TestWriterIsAppendSlot), written without building a Tick: no allocation per tick, and the instants that the
// ticks of a transaction share are formatted once (see Stamp). A Writer is not safe for concurrent use.
type Writer struct{ st stamps }

// stamps keeps the last instant written in each time field of a tick.
type stamps struct{ slot, deadline, notBefore, emitted Stamp }

// AppendID appends ID(schedule, slot, shard, shards) to dst.
func (w *Writer) AppendID(dst []byte, schedule string, slot time.Time, shard, shards int) []byte {
	return appendID(dst, &w.st.slot, schedule, slot, shard, shards)
}

// AppendTick appends the JSON of shard's tick of slot (AppendSlot's, with notBefore and emittedAt), whose ID is
// id (AppendID's), run at instant at: the slot itself, or the instant a calendar's move policy runs it at, from
// which its deadline counts. It reports false, having appended nothing, for a tick AppendEncode would hand to
// json.Marshal (a time in a year outside 0-9999, or with a zone offset of 24 hours or more).
func (w *Writer) AppendTick(dst []byte, s Source, id []byte, slot, at, notBefore, emittedAt time.Time, shard int) ([]byte, bool) {
	t, deadline := s.fill(Tick{V: Version, Schedule: s.Schedule, Slot: slot.UTC(), Shard: shard, Shards: max(s.Shards, 1)}, at, emittedAt)
	if !deadline.IsZero() {
		t.Deadline = &deadline
	}
	if !notBefore.IsZero() {
		nb := notBefore.UTC()
		t.NotBefore = &nb
	}
	b, ok := appendTick(dst, &t, id, &w.st)
	if !ok {
		return dst, false
	}
	return b, true
}
