// Package tickgrouptest runs a tickgroup.Handler in a unit test, without a broker: NewTick makes the Tick a
// worker would hand over (a first attempt by default; an interrupted re-run, a later attempt, a shard or a
// manual trigger by option), and Run calls the handler once as a worker's attempt does, a panic included.
//
//	err := tickgrouptest.Run(ctx, handler, tickgrouptest.NewTick("scan-orders", slot, tickgrouptest.Interrupted()))
//
// What a worker then does with the error (retry, dead-letter, record) is the worker's, and is not simulated.
package tickgrouptest

import (
	"context"
	"errors"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// WorkerID is the Worker of the ticks NewTick makes.
const WorkerID = "tickgrouptest"

// An Option sets a field of the Tick NewTick makes.
type Option func(*tickgroup.Tick)

// Attempt makes the tick's attempt n (from 1), as after n-1 failed attempts.
func Attempt(n int) Option { return func(t *tickgroup.Tick) { t.Attempt = n } }

// Interrupted marks the tick as run again after an earlier run was cut off (its worker crashed, froze or lost
// its lease mid-run): the handler must expect that run's effects. The attempt becomes 2 unless set higher.
func Interrupted() Option {
	return func(t *tickgroup.Tick) {
		t.Interrupted = true
		t.Attempt = max(t.Attempt, 2)
	}
}

// Shard makes the tick shard of shards (from 0); its ID carries the shard, as a worker's does.
func Shard(shard, shards int) Option {
	return func(t *tickgroup.Tick) { t.Shard, t.Shards = shard, shards }
}

// Payload sets the schedule's payload.
func Payload(p string) Option { return func(t *tickgroup.Tick) { t.Payload = p } }

// Trigger makes the tick a manual trigger's (Schedules.Trigger) rather than a scheduled slot's.
func Trigger() Option { return func(t *tickgroup.Tick) { t.Trigger = true } }

// Backfill makes the tick one of backfill id's (Schedules.Backfill): the past slot run again.
func Backfill(id string) Option {
	return func(t *tickgroup.Tick) { t.Backfill, t.BackfillID = true, id }
}

// Fence sets the fencing token of the tick's partition (1 unless set).
func Fence(token int64) Option { return func(t *tickgroup.Tick) { t.Fence = token } }

// Lease gives the run a lease that ends at until: Tick.Lease returns it, and Run's handler context ends then,
// as a worker's does when it cannot renew the lease.
func Lease(until time.Time) Option {
	return func(t *tickgroup.Tick) { t.Lease = func() time.Time { return until } }
}

// NewTick returns the tick of schedule's slot (UTC) as a worker hands it to a handler on its first attempt:
// its ID as the leader makes it, Attempt 1, Fence 1, Worker WorkerID, and no lease.
func NewTick(schedule string, slot time.Time, opts ...Option) tickgroup.Tick {
	t := tickgroup.Tick{Schedule: schedule, Slot: slot.UTC(), Shards: 1, Attempt: 1, Fence: 1, Worker: WorkerID,
		Lease: func() time.Time { return time.Time{} }}
	for _, o := range opts {
		o(&t)
	}
	t.Shards = max(t.Shards, 1)
	t.ID = tick.ID(t.Schedule, t.Slot, t.Shard, t.Shards)
	switch {
	case t.Backfill:
		t.ID = tick.BackfillID(t.Schedule, t.Slot, t.BackfillID, t.Shard, t.Shards)
	case t.Trigger:
		t.ID = tick.TriggerID(t.Schedule, t.Slot, "test", t.Shard, t.Shards)
	}
	return t
}

// Run calls h with t once, as a worker's attempt does: the handler's context also ends at the tick's lease,
// when it has one, and a panic is recovered and returned as a *tickgroup.PanicError (what the outcome record's
// error would hold). A nil error is a success; tickgroup.IsPermanent tells a failure a worker would not retry.
func Run(ctx context.Context, h tickgroup.Handler, t tickgroup.Tick) error {
	if t.Lease != nil {
		if until := t.Lease(); !until.IsZero() {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, until)
			defer cancel()
		}
	}
	call := worker.HandlerFunc(func(ctx context.Context, _ tick.Tick, _ worker.Attempt) error { return h(ctx, t) })
	err := worker.Call(ctx, call, tick.Tick{}, worker.Attempt{})
	if pe := (*worker.PanicError)(nil); errors.As(err, &pe) {
		return &tickgroup.PanicError{Value: pe.Value, Stack: pe.Stack}
	}
	return err
}
