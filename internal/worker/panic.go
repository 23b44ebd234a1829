package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Sizes of what a recovered panic keeps: the outcome record's error holds at most 2 KiB (errString), so the
// value is cut first and the stack fills the rest.
const (
	maxPanicValue = 512
	maxPanicStack = 4 << 10
)

// PanicError is a panic recovered from a handler: the attempt failed with it. It is retried and dead-lettered
// like any other failure; when the panic's value is an error, PanicError wraps it, so a panic with an error marked
// Permanent is permanent too.
type PanicError struct {
	// Value is what the handler passed to panic.
	Value any
	// Stack is the panicking goroutine's stack from the frame that panicked, at most 4 KiB.
	Stack []byte
}

// Error reads "handler panicked: VALUE" followed by the stack.
func (e *PanicError) Error() string {
	v := fmt.Sprint(e.Value)
	if len(v) > maxPanicValue {
		v = errlimit.Cut(v, maxPanicValue) + "..."
	}
	return "handler panicked: " + v + "\n" + string(e.Stack)
}

// Unwrap returns the panic's value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Call runs h for one attempt and turns a panic into a *PanicError, as a worker does. It cannot recover a
// panic in a goroutine that h starts.
func Call(ctx context.Context, h Handler, t tick.Tick, a Attempt) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: panicStack(debug.Stack())}
		}
	}()
	return h.Handle(ctx, t, a)
}

// handle runs the handler for one attempt; a panic is the attempt's failure, logged with its stack and counted.
func (w *Worker) handle(ctx context.Context, t tick.Tick, a Attempt) error {
	err := Call(ctx, w.handler, t, a)
	if pe := (*PanicError)(nil); errors.As(err, &pe) {
		w.m.panics.Inc()
		w.logger.Error("handler panicked: the attempt failed", "tick_id", t.ID, "attempt", a.N,
			"panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	return err
}

// panicStack cuts the runtime's own frames (debug.Stack, the deferred function, runtime.gopanic) from the top of
// a stack taken in a deferred recover: it starts at the frame that panicked. It keeps at most maxPanicStack
// bytes, ending on a whole line.
func panicStack(stack []byte) []byte {
	// The goroutine header, then two lines per frame. The frame that called panic follows "panic(...)".
	if i := bytes.Index(stack, []byte("\npanic(")); i >= 0 {
		rest := stack[i+1:]
		// Skip panic's two lines (the call and its file:line).
		for range 2 {
			if j := bytes.IndexByte(rest, '\n'); j >= 0 {
				rest = rest[j+1:]
			}
		}
		stack = rest
	}
	if len(stack) > maxPanicStack {
		stack = stack[:maxPanicStack]
		if j := bytes.LastIndexByte(stack, '\n'); j > 0 {
			stack = stack[:j+1]
		}
	}
	return bytes.TrimRight(stack, "\n")
}
