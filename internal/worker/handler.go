package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// Handler executes one tick. It is called once per attempt; a carries the attempt's number (counted across every
// worker that ever ran the tick, from the execution ledger), the fencing token of the tick's partition and whether
// an earlier run was interrupted.
//
// ctx ends when the attempt times out, when the tick's partition is revoked from or lost by this worker, or when
// the shutdown grace period runs out; a handler must return promptly then. The tick's ID is the idempotency key:
// a tick can run more than once (at-least-once), so handlers with external side effects should deduplicate on it.
//
// A nil error is success. An error wrapped with Permanent is not retried. Any other error is retried with
// backoff until the attempts run out.
type Handler interface {
	Handle(ctx context.Context, t tick.Tick, a Attempt) error
}

// Attempt describes one run of a tick's handler.
type Attempt struct {
	// N counts the attempts of the tick from 1, across owners: a tick whose earlier run was interrupted by a
	// crash continues the count.
	N int
	// Fence is the fencing token of the tick's work partition: it strictly increases every time the partition
	// changes owner. A downstream store that refuses a token lower than the highest it has seen shuts out a
	// zombie worker.
	Fence int64
	// Interrupted reports that an earlier run of this tick was cut off (its worker crashed, froze or lost the
	// partition mid-run) and may have had some of its effects.
	Interrupted bool
	// Worker is the ID of the worker running the attempt.
	Worker string
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t tick.Tick, a Attempt) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, t tick.Tick, a Attempt) error {
	return f(ctx, t, a)
}

// lease is the time until which the running attempt's worker may go on running it: the lane renews it while it
// can prove that it still owns the tick's partition. A handler whose lease runs out must stop at once: the
// partition's next owner may start the tick again after the lease. The exec handler hands the lease to its
// supervisor process, which kills the handler's process group when the lease runs out (even when the worker
// itself is frozen) or when the worker dies.
type lease struct{ unixNano atomic.Int64 }

// Deadline returns the lease's current end.
func (l *lease) Deadline() time.Time { return time.Unix(0, l.unixNano.Load()) }

func (l *lease) extend(until time.Time) { l.unixNano.Store(until.UnixNano()) }

type leaseKey struct{}

func withLease(ctx context.Context, l *lease) context.Context {
	return context.WithValue(ctx, leaseKey{}, l)
}

// leaseFrom returns the attempt's lease, or nil when the attempt has none (a handler called outside a worker).
func leaseFrom(ctx context.Context) *lease {
	l, _ := ctx.Value(leaseKey{}).(*lease)
	return l
}

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent marks err as a failure that retrying cannot fix: the tick goes to the dead-letter topic at once.
// Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err (or an error it wraps) was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
