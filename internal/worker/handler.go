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
// ctx ends when the attempt times out, when the run's lease cannot be renewed in time (a frozen worker, or one cut
// off from the broker for longer than its lease), when another worker took the tick over, or when the shutdown
// grace period runs out; a handler must return promptly then. A rebalance, or the loss of the group membership,
// does not end it. The tick's ID is the idempotency key:
// a tick can run more than once (at-least-once), so handlers with external side effects should deduplicate on it.
//
// A nil error is success. An error wrapped with Permanent is not retried. Any other error is retried with
// backoff until the attempts run out. A panic is recovered and fails the attempt with a *PanicError (Call).
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
	// Lease, when not nil, returns the end of the run's lease: the time until which the worker may go on running
	// the tick, renewed while it can prove that it still owns the tick's partition. A handler past it must stop
	// at once: the partition's next owner may start the tick again. The exec handler (package command) hands it
	// to its supervisor process, which kills the program's process group when it passes, even when the worker
	// itself is frozen. Nil, or a zero time, for an attempt without a lease (a handler called outside a worker).
	Lease func() time.Time
	// Output, when not nil, takes the attempt's output (its tail is kept in the outcome record: the worker runs
	// with Config.RecordOutput). A handler may call it once, with all of its output; a later call replaces it.
	Output func(string)
	// again is set on the second and later attempts of one delivery (a retry): its start counts against its
	// limit's rate on its own (pick admitted the first).
	again bool
	// handlerStarts, when not nil, is called just before the handler starts (the attempt leaves the Run's
	// starting set).
	handlerStarts func()
	// ran is when the handler ran (set by Worker.attempt; zero when it never started).
	ran span
	// watch is told when the first attempt's handler starts (deadlines.go); nil: nothing watched.
	watch *watch
}

// span is when a handler ran: from its start to its return. A tick's run, for its overlap policy, is the span
// of its handler's attempts (see lane.handledLocked): the time spent recording them in the ledger, which an
// outage of the broker stretches, is not running.
type span struct{ from, to time.Time }

// add extends s by o.
func (s *span) add(o span) {
	if o.from.IsZero() {
		return
	}
	if s.from.IsZero() {
		s.from = o.from
	}
	s.to = o.to
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t tick.Tick, a Attempt) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, t tick.Tick, a Attempt) error {
	return f(ctx, t, a)
}

// lease is a run's lease (Attempt.Lease): the lane extends it with each renewal.
type lease struct{ unixNano atomic.Int64 }

// Deadline returns the lease's current end, the zero time before it is set.
func (l *lease) Deadline() time.Time {
	if n := l.unixNano.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

func (l *lease) extend(until time.Time) { l.unixNano.Store(until.UnixNano()) }

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
