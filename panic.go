package tickgroup

import "github.com/tickgroup/tickgroup/internal/worker"

// PanicError is a handler's panic as a worker records it: the attempt failed with it, and the outcome record's
// error holds its text (Error). The tickgrouptest package returns it from a handler that panics.
type PanicError struct {
	// Value is what the handler passed to panic.
	Value any
	// Stack is the panicking goroutine's stack from the frame that panicked, at most 4 KiB.
	Stack []byte
}

// Error reads "handler panicked: VALUE" (the value cut at 512 bytes) followed by the stack.
func (e *PanicError) Error() string { return e.internal().Error() }

// Unwrap returns the panic's value when it is an error: a panic with an error marked with Permanent is
// permanent.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func (e *PanicError) internal() *worker.PanicError {
	return &worker.PanicError{Value: e.Value, Stack: e.Stack}
}
