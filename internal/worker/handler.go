package worker

import (
	"context"
	"errors"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// Handler executes one tick. It is called once per attempt, with attempt counting from 1 within one delivery of
// the tick to this process (see the package documentation for what that means after a crash).
//
// ctx ends when the attempt times out, when the tick's partition is revoked from or lost by this worker, or when
// the shutdown grace period runs out; a handler must return promptly then. The tick's ID is the idempotency key:
// a tick can run more than once (at-least-once), so handlers with external side effects should deduplicate on it.
//
// A nil error is success. An error wrapped with Permanent is not retried. Any other error is retried with
// backoff until the attempts run out.
type Handler interface {
	Handle(ctx context.Context, t tick.Tick, attempt int) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, t tick.Tick, attempt int) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, t tick.Tick, attempt int) error {
	return f(ctx, t, attempt)
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
