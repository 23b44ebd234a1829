// Package tick is tickgroup's wire contract: the record the leader writes to the work topic for every schedule slot
// (and shard), its key, and how it is encoded.
//
// A tick's key is its ID, <schedule>@<slot in RFC 3339 UTC>[#<shard>], for example scan@2026-11-29T14:00:30Z#3.
// The value is JSON with a major version in field "v". Readers ignore unknown fields, so minor additions are
// compatible; a record with another major version is refused with ErrUnknownVersion (workers send it to the
// dead-letter topic). Any Kafka client can read the records, for example kcat or kafka-console-consumer.
package tick

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/jsonfast"
)

// Version is the major version of the tick encoding written by this build for a tick without a limit.
const Version = 1

// VersionLimited is the major version of a tick that counts against a limit (Tick.Limit). Releases from before
// limits refuse it as an unknown version (they dead-letter it), so a worker that cannot keep a limit's bound
// never runs a limited tick: it says so instead of breaking the bound silently.
const VersionLimited = 2

// VersionGated is the major version of a tick that its schedule's gate skips (Tick.Gate): a worker records it
// as skipped_gate without running it. Releases from before gates refuse it as an unknown version (they
// dead-letter it), so none of them runs a slot the gate held back.
const VersionGated = 3

// Overlap policies (Tick.Overlap).
const (
	OverlapQueue = "queue"
	OverlapSkip  = "skip"
)

// ErrUnknownVersion is returned by Decode for a record whose major version this build cannot read.
var ErrUnknownVersion = errors.New("unknown tick version")

// triggerMarker separates a manual trigger's suffix from its instant. Scheduled IDs never contain it, so a manual
// trigger can never collide with (or be deduplicated against) a scheduled slot.
const triggerMarker = "~trigger-"

// backfillMarker separates a backfill tick's suffix (its backfill's ID) from its slot, as triggerMarker does a
// trigger's: a backfill tick never collides with a scheduled slot, a trigger or another backfill's tick.
const backfillMarker = "~backfill-"

// Tick is one unit of work: one slot of one schedule, for one shard.
type Tick struct {
	V        int       `json:"v"`
	ID       string    `json:"id"`
	Schedule string    `json:"schedule"`
	Slot     time.Time `json:"slot"`
	Shard    int       `json:"shard"`
	Shards   int       `json:"shards"`
	Payload  string    `json:"payload,omitempty"`
	// Deadline, when set, is the latest instant at which a worker may start the tick; later it is skipped
	// (recorded as skipped_late).
	Deadline *time.Time `json:"deadline,omitempty"`
	// NotBefore, when set, is the instant the tick starts: its slot's due instant (the slot plus the schedule's
	// jitter). The leader emits ticks ahead of it (ticker run --lead), and a worker holds each one until then.
	// Absent (a manual trigger, or a tick of a leader from before emission ahead): the tick starts at once.
	NotBefore *time.Time `json:"not_before,omitempty"`
	// Trigger is true for a tick requested by hand (ticker schedule trigger) rather than by the schedule.
	Trigger bool `json:"trigger,omitempty"`
	// Backfill is the ID of the backfill (ticker schedule backfill) that emitted the tick, for one of the past
	// slots it runs again; empty for every other tick. A backfill tick is also marked Trigger: it runs out of the
	// schedule's order as a trigger does, is never cancelled, and is not one of the schedule's slots to a reader
	// (a release from before backfills reads it as a trigger).
	Backfill string `json:"backfill,omitempty"`
	// Overlap is the schedule's overlap policy: OverlapQueue (every tick runs, in order), OverlapSkip (a tick
	// does not start when a newer tick of the same schedule and shard is already due), or empty, the default:
	// skip for a tick that fell due while the run before it was going, queue otherwise. Workers from before the
	// default read empty as queue.
	Overlap string `json:"overlap,omitempty"`
	// Metrics is set when the schedule opts in to metrics of its own (metrics: true): the workers then export
	// its start delay with a schedule label.
	Metrics bool `json:"metrics,omitempty"`
	// TimeoutMS bounds one attempt, in milliseconds; MaxAttempts is how many attempts a worker makes before the
	// dead-letter topic. 0 (absent) leaves each to the worker's flags; workers ignore values out of range.
	TimeoutMS   int64 `json:"timeout_ms,omitempty"`
	MaxAttempts int   `json:"max_attempts,omitempty"`
	// StartByMS and FinishByMS are the schedule's watched deadlines (start_by, finish_by), in milliseconds from
	// the tick's StartAt: a run not started, or not finished, by then is a breach, which the worker records
	// (ledger.Breach). Scheduled ticks only; 0 (absent): none. Earlier workers ignore them.
	StartByMS  int64 `json:"start_by_ms,omitempty"`
	FinishByMS int64 `json:"finish_by_ms,omitempty"`
	// Gate, when set, says why the schedule's gate (schedule.Spec.Requires) holds this slot back: the worker
	// records the tick as skipped_gate, with Gate as its error, and does not run it. A gated tick is written
	// with VersionGated.
	Gate string `json:"gate,omitempty"`
	// Limit names the limit the tick counts against (at most N runs at once, at most R starts per window, across
	// the pool's workers); empty: none. A limited tick is written with VersionLimited, and on the limit's
	// partition (Partition), so that every tick of a limit meets at one owner.
	Limit string `json:"limit,omitempty"`
	// Priority orders the ticks held by their limit: the higher first (1 to 5; 0 is the default, 3).
	Priority        int       `json:"priority,omitempty"`
	ScheduleVersion int64     `json:"schedule_version"`
	LeaderEpoch     int64     `json:"leader_epoch"`
	EmittedAt       time.Time `json:"emitted_at"`
}

// ID returns the ID of the tick of schedule at slot for shard (of shards). The shard suffix is present only when
// the schedule has more than one shard, so a one-shard schedule's IDs read naturally.
func ID(schedule string, slot time.Time, shard, shards int) string {
	var buf [256]byte // the string is the one allocation for names of up to about 200 bytes
	return string(appendID(buf[:0], &Stamp{}, schedule, slot, shard, shards))
}

// appendID appends ID(schedule, slot, shard, shards) to dst, writing the slot through st.
func appendID(dst []byte, st *Stamp, schedule string, slot time.Time, shard, shards int) []byte {
	dst = append(dst, schedule...)
	dst = append(dst, '@')
	dst = st.appendText(dst, slot.UTC())
	if shards > 1 {
		dst = append(dst, '#')
		dst = strconv.AppendInt(dst, int64(shard), 10)
	}
	return dst
}

// TriggerID returns the ID of a manual trigger of schedule at instant at. nonce makes two triggers in the same
// instant distinct.
func TriggerID(schedule string, at time.Time, nonce string, shard, shards int) string {
	id := schedule + "@" + at.UTC().Format(time.RFC3339Nano) + triggerMarker + nonce
	if shards > 1 {
		id += "#" + strconv.Itoa(shard)
	}
	return id
}

// BackfillID returns the ID of the tick of backfill backfill for slot of schedule.
func BackfillID(schedule string, slot time.Time, backfill string, shard, shards int) string {
	id := schedule + "@" + slot.UTC().Format(time.RFC3339Nano) + backfillMarker + backfill
	if shards > 1 {
		id += "#" + strconv.Itoa(shard)
	}
	return id
}

// IsBackfillID reports whether id is the ID of a backfill tick (BackfillID) and returns its backfill's ID.
func IsBackfillID(id string) (string, bool) {
	i := strings.LastIndex(id, backfillMarker)
	if i < 0 {
		return "", false
	}
	rest := id[i+len(backfillMarker):]
	if j := strings.IndexByte(rest, '#'); j >= 0 {
		rest = rest[:j]
	}
	return rest, rest != ""
}

// StartAt is when the tick is meant to start: NotBefore, or the slot for a tick without one, except a backfill's
// tick, which is meant to start when its leader emitted it (its slot is long past): its start delay and the work
// lag it makes measure the workers, not the age of the slot.
func (t Tick) StartAt() time.Time {
	switch {
	case t.NotBefore != nil:
		return *t.NotBefore
	case t.Backfill != "" && !t.EmittedAt.IsZero():
		return t.EmittedAt
	}
	return t.Slot
}

// New returns the scheduled tick of one slot and shard.
func New(schedule string, slot time.Time, shard, shards int) Tick {
	return Tick{
		V:        Version,
		ID:       ID(schedule, slot, shard, shards),
		Schedule: schedule,
		Slot:     slot.UTC(),
		Shard:    shard,
		Shards:   max(shards, 1),
	}
}

// Partition returns the work-topic partition of a schedule's shard: crc32(schedule) + shard, modulo the partition
// count. One schedule's ticks of one shard therefore always share a partition (and run in order), and the shards
// of one slot land on distinct partitions as long as shards <= partitions: the partitions are the exclusive
// integer identities of "N processors, each holding one identity, with standbys": crc32(id) % N.
func Partition(schedule string, shard int, partitions int) int32 {
	return PartitionOf([]byte(schedule), shard, partitions)
}

// PartitionOf is Partition from the schedule name's bytes.
func PartitionOf(schedule []byte, shard int, partitions int) int32 {
	return PartitionOfHash(NameHash(schedule), shard, partitions)
}

// LimitPartition is the work-topic partition of every tick of the limit named limit: crc32(limit) modulo the
// partition count. All the ticks of one limit, of every schedule and shard naming it, meet on it, so that one
// owner (the partition's worker, fenced by the ledger) sees every run of the limit.
func LimitPartition(limit string, partitions int) int32 {
	return PartitionOfHash(NameHash([]byte(limit)), 0, partitions)
}

// NameHash is the hash of a schedule's name that Partition takes: crc32 (IEEE).
func NameHash(schedule []byte) uint32 { return crc32.ChecksumIEEE(schedule) }

// PartitionOfHash is Partition from NameHash of the schedule's name (a leader keeps it with the schedule).
func PartitionOfHash(h uint32, shard int, partitions int) int32 {
	if partitions <= 0 {
		return 0
	}
	return int32((uint64(h) + uint64(shard)) % uint64(partitions))
}

// version is the major version a tick is written with.
func version(t *Tick) int {
	switch {
	case t.Gate != "":
		return VersionGated
	case t.Limit != "":
		return VersionLimited
	}
	return Version
}

// AppendEncode appends the JSON form of t (what Encode returns) to dst.
func AppendEncode(dst []byte, t Tick) ([]byte, error) {
	if t.V == 0 || t.Limit != "" || t.Gate != "" {
		t.V = version(&t)
	}
	if b, ok := appendTick(dst, &t, nil, nil); ok {
		return b, nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return dst, fmt.Errorf("encoding tick %s: %w", t.ID, err)
	}
	return append(dst, b...), nil
}

// Encode returns the JSON form of t.
func Encode(t Tick) ([]byte, error) {
	if t.V == 0 || t.Limit != "" {
		t.V = version(&t)
	}
	if b, ok := appendTick(make([]byte, 0, 256+len(t.Payload)), &t, nil, nil); ok {
		return b, nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encoding tick %s: %w", t.ID, err)
	}
	return b, nil
}

// Decode parses a tick record value. It fails with ErrUnknownVersion for another major version and with a
// descriptive error for anything that is not a well-formed tick.
func Decode(b []byte) (Tick, error) {
	t, ok := decodeFast(b)
	if !ok {
		t = Tick{}
		if err := json.Unmarshal(b, &t); err != nil {
			return Tick{}, fmt.Errorf("decoding tick: %w", errlimit.Wrap(err))
		}
	}
	if t.V != Version && t.V != VersionLimited && t.V != VersionGated {
		return Tick{}, fmt.Errorf("decoding tick: version %d: %w", t.V, ErrUnknownVersion)
	}
	switch {
	case t.ID == "":
		return Tick{}, errors.New("decoding tick: missing id")
	case t.Schedule == "":
		return Tick{}, errors.New("decoding tick: missing schedule")
	case t.Slot.IsZero():
		return Tick{}, errors.New("decoding tick: missing slot")
	case !strings.HasPrefix(t.ID, t.Schedule+"@"):
		return Tick{}, fmt.Errorf("decoding tick: id %s does not belong to schedule %s", errlimit.Quote(t.ID), errlimit.Quote(t.Schedule))
	}
	if t.Shards < 1 {
		t.Shards = 1
	}
	return t, nil
}

// appendTick appends the JSON of t, the bytes json.Marshal writes for it (TestEncodeIsMarshal), without
// reflection: a leader encodes one per schedule per slot, a million a minute on a large fleet. It reports false
// for what it does not write itself (a time json.Marshal refuses), for Encode to hand to json.Marshal.
//
// id, when not nil, is written in place of t.ID (a Writer has it in its record's key already), and st, when not
// nil, keeps the instants written last (see Writer).
func appendTick(b []byte, t *Tick, id []byte, st *stamps) ([]byte, bool) {
	if st == nil {
		st = &stamps{}
	}
	ok := true
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(t.V), 10)
	b = append(b, `,"id":`...)
	if id != nil {
		b = jsonfast.AppendString(b, id)
	} else {
		b = jsonfast.AppendString(b, t.ID)
	}
	b = append(b, `,"schedule":`...)
	b = jsonfast.AppendString(b, t.Schedule)
	b = append(b, `,"slot":`...)
	b, ok = st.slot.appendJSON(b, t.Slot, ok)
	b = append(b, `,"shard":`...)
	b = strconv.AppendInt(b, int64(t.Shard), 10)
	b = append(b, `,"shards":`...)
	b = strconv.AppendInt(b, int64(t.Shards), 10)
	if t.Payload != "" {
		b = append(b, `,"payload":`...)
		b = jsonfast.AppendString(b, t.Payload)
	}
	if t.Deadline != nil {
		b = append(b, `,"deadline":`...)
		b, ok = st.deadline.appendJSON(b, *t.Deadline, ok)
	}
	if t.NotBefore != nil {
		b = append(b, `,"not_before":`...)
		b, ok = st.notBefore.appendJSON(b, *t.NotBefore, ok)
	}
	if t.Trigger {
		b = append(b, `,"trigger":true`...)
	}
	if t.Backfill != "" {
		b = append(b, `,"backfill":`...)
		b = jsonfast.AppendString(b, t.Backfill)
	}
	if t.Overlap != "" {
		b = append(b, `,"overlap":`...)
		b = jsonfast.AppendString(b, t.Overlap)
	}
	if t.Metrics {
		b = append(b, `,"metrics":true`...)
	}
	if t.TimeoutMS != 0 {
		b = append(b, `,"timeout_ms":`...)
		b = strconv.AppendInt(b, t.TimeoutMS, 10)
	}
	if t.MaxAttempts != 0 {
		b = append(b, `,"max_attempts":`...)
		b = strconv.AppendInt(b, int64(t.MaxAttempts), 10)
	}
	if t.StartByMS != 0 {
		b = append(b, `,"start_by_ms":`...)
		b = strconv.AppendInt(b, t.StartByMS, 10)
	}
	if t.FinishByMS != 0 {
		b = append(b, `,"finish_by_ms":`...)
		b = strconv.AppendInt(b, t.FinishByMS, 10)
	}
	if t.Gate != "" {
		b = append(b, `,"gate":`...)
		b = jsonfast.AppendString(b, t.Gate)
	}
	if t.Limit != "" {
		b = append(b, `,"limit":`...)
		b = jsonfast.AppendString(b, t.Limit)
	}
	if t.Priority != 0 {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, int64(t.Priority), 10)
	}
	b = append(b, `,"schedule_version":`...)
	b = strconv.AppendInt(b, t.ScheduleVersion, 10)
	b = append(b, `,"leader_epoch":`...)
	b = strconv.AppendInt(b, t.LeaderEpoch, 10)
	b = append(b, `,"emitted_at":`...)
	b, ok = st.emitted.appendJSON(b, t.EmittedAt, ok)
	return append(b, '}'), ok
}
