package tickgroup

import (
	"context"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// Tick is one run of one tick: one slot of one schedule, for one shard, as a Handler gets it.
type Tick struct {
	// ID is the tick's identity, <schedule>@<slot in RFC 3339 UTC>[#<shard>]: the key to make external effects
	// idempotent on, since a tick whose run was cut off runs again.
	ID       string
	Schedule string
	// Slot is the instant the tick stands for (UTC); a manual trigger's is the instant it was requested, a
	// backfill's the past slot it runs again.
	Slot time.Time
	// Shard of Shards: a schedule with shards fans each slot out to that many ticks.
	Shard, Shards int
	Payload       string
	// Trigger is set for a tick requested by hand (Schedules.Trigger) rather than by the schedule.
	Trigger bool
	// Backfill is set for a tick of a backfill (Schedules.Backfill): a past slot run again, maybe long after it;
	// BackfillID names the backfill. Its ID ends with ~backfill-<BackfillID> and never equals the slot's
	// scheduled tick's: an effect keyed on the slot rather than the ID runs again, which is what a backfill is for.
	Backfill   bool
	BackfillID string

	// Attempt counts the runs of this tick from 1, across workers.
	Attempt int
	// Fence is the fencing token of the tick's work partition: it strictly increases every time the partition
	// changes owner. A downstream store that refuses a token lower than the highest it has seen shuts out a
	// zombie worker.
	Fence int64
	// Interrupted reports that an earlier run of this tick was cut off (its worker crashed, froze or lost its
	// lease mid-run) and may have had some of its effects.
	Interrupted bool
	// Worker is the ID of the worker running it.
	Worker string
	// Lease returns the end of the run's lease, the time until which the worker may go on running it (renewed
	// while it can prove it still owns the tick): a handler past it must stop at once, as the context it got
	// then ends. It returns the zero time when the run has no lease.
	Lease func() time.Time

	record tick.Tick
	output func(string)
}

// RecordOutput keeps the tail of output in the attempt's outcome record (Outcome.Output), when the worker
// records output (WorkerConfig.RecordOutput, worker run --record-output N); otherwise it does nothing. The exec
// handler calls it with the program's standard output and error. A later call replaces an earlier one. Output
// may hold secrets: the results topic is read by every operator.
func (t Tick) RecordOutput(output string) {
	if t.output != nil {
		t.output(output)
	}
}

// JSON returns the tick's record as the leader wrote it to the work topic (JSON; see the README's record
// formats), for a handler that passes it on. For a Tick not made by a Worker (a handler's test), it encodes the
// fields of t.
func (t Tick) JSON() ([]byte, error) {
	r := t.record
	if r.ID == "" {
		r = tick.Tick{V: tick.Version, ID: t.ID, Schedule: t.Schedule, Slot: t.Slot.UTC(), Shard: t.Shard, Shards: max(t.Shards, 1),
			Payload: t.Payload, Trigger: t.Trigger || t.Backfill, Backfill: t.BackfillID}
	}
	return tick.Encode(r)
}

// Handler runs one tick. A nil error is success. An error marked with Permanent goes to the dead-letter topic at
// once; any other is retried with backoff until the schedule's (or the worker's) attempts run out.
//
// A panic in the handler is a failed attempt, not the end of the worker: the worker recovers it, logs it with its
// stack, counts it (tickgroup_worker_handler_panics_total) and keeps its value and stack in the outcome record's
// error ("handler panicked: ..."), then retries the tick and dead-letters it like any failure. A panic whose value
// is an error marked with Permanent is permanent. The worker cannot recover a panic in a goroutine the handler
// starts itself: that still ends the process.
//
// ctx ends when the attempt times out (the schedule's timeout, or the worker's), when the run's lease runs out,
// or when the worker stops and its grace period is over; a handler must return promptly then.
type Handler func(ctx context.Context, t Tick) error

// Permanent marks err as a failure that retrying cannot fix: the tick goes to the dead-letter topic at once.
// Permanent(nil) is nil.
func Permanent(err error) error { return worker.Permanent(err) }

// IsPermanent reports whether err (or an error it wraps) was marked with Permanent.
func IsPermanent(err error) bool { return worker.IsPermanent(err) }

// newTick is the Tick of one attempt.
func newTick(t tick.Tick, a worker.Attempt) Tick {
	lease := a.Lease
	if lease == nil {
		lease = func() time.Time { return time.Time{} }
	}
	return Tick{
		ID: t.ID, Schedule: t.Schedule, Slot: t.Slot, Shard: t.Shard, Shards: max(t.Shards, 1), Payload: t.Payload,
		output: a.Output, Trigger: t.Trigger && t.Backfill == "", Backfill: t.Backfill != "", BackfillID: t.Backfill, Attempt: a.N, Fence: a.Fence, Interrupted: a.Interrupted, Worker: a.Worker, Lease: lease,
		record: t,
	}
}

// handle adapts h to the worker's handler.
func (h Handler) handle() worker.Handler {
	return worker.HandlerFunc(func(ctx context.Context, t tick.Tick, a worker.Attempt) error {
		return h(ctx, newTick(t, a))
	})
}
