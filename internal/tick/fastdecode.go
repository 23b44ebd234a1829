package tick

import (
	"strconv"

	"github.com/tickgroup/tickgroup/internal/jsonfast"
)

// decodeFast reads a tick in the form Encode writes: one JSON object of known fields, each at most once. It
// reports false for anything else (an unknown or differently cased key, a duplicate, null, a fraction, an
// escape it does not take, trailing data), and Decode then reads it with encoding/json, which gives the same
// tick for every input accepted here (FuzzDecodeFast). A worker decodes every tick it fetches, so
// encoding/json's reflection weighs on its work per tick (docs/benchmarks.md, "Figures behind code
// comments").
func decodeFast(b []byte) (Tick, bool) {
	var t Tick
	d := jsonfast.NewScanner(b)
	ok := d.Fields(fastFields, func(bit uint32) bool { return field(d, bit, &t) })
	return t, ok
}

// The fields decodeFast knows, one bit each.
const (
	fV uint32 = 1 << iota
	fID
	fSchedule
	fSlot
	fShard
	fShards
	fPayload
	fDeadline
	fNotBefore
	fTrigger
	fOverlap
	fMetrics
	fTimeoutMS
	fMaxAttempts
	fScheduleVersion
	fLeaderEpoch
	fEmittedAt
	fBackfill
	fLimit
	fPriority
)

var fastFields = map[string]uint32{
	"v": fV, "id": fID, "schedule": fSchedule, "slot": fSlot, "shard": fShard, "shards": fShards,
	"payload": fPayload, "deadline": fDeadline, "not_before": fNotBefore, "trigger": fTrigger, "overlap": fOverlap,
	"metrics": fMetrics, "timeout_ms": fTimeoutMS, "max_attempts": fMaxAttempts,
	"schedule_version": fScheduleVersion, "leader_epoch": fLeaderEpoch, "emitted_at": fEmittedAt,
	"backfill": fBackfill, "limit": fLimit, "priority": fPriority,
}

// field reads the value of the field bit into t.
func field(d *jsonfast.Scanner, bit uint32, t *Tick) bool {
	switch bit {
	case fV, fShard, fShards, fMaxAttempts, fPriority:
		n, ok := d.Int(strconv.IntSize)
		switch bit {
		case fPriority:
			t.Priority = int(n)
		case fV:
			t.V = int(n)
		case fShard:
			t.Shard = int(n)
		case fShards:
			t.Shards = int(n)
		default:
			t.MaxAttempts = int(n)
		}
		return ok
	case fTimeoutMS, fScheduleVersion, fLeaderEpoch:
		n, ok := d.Int(64)
		switch bit {
		case fTimeoutMS:
			t.TimeoutMS = n
		case fScheduleVersion:
			t.ScheduleVersion = n
		default:
			t.LeaderEpoch = n
		}
		return ok
	case fTrigger, fMetrics:
		x, ok := d.Bool()
		if bit == fTrigger {
			t.Trigger = x
		} else {
			t.Metrics = x
		}
		return ok
	case fSlot, fEmittedAt, fDeadline, fNotBefore:
		x, ok := d.Time()
		switch bit {
		case fSlot:
			t.Slot = x
		case fEmittedAt:
			t.EmittedAt = x
		case fDeadline:
			t.Deadline = &x
		default:
			t.NotBefore = &x
		}
		return ok
	}
	s, ok := d.Text()
	switch bit {
	case fID:
		t.ID = s
	case fSchedule:
		t.Schedule = s
	case fPayload:
		t.Payload = s
	case fBackfill:
		t.Backfill = s
	case fLimit:
		t.Limit = s
	default:
		t.Overlap = s
	}
	return ok
}
