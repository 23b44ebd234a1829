//go:build linux

package command

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/supervisor"
)

// supervised is a program run by the handler's supervisor (package supervisor): its group dies with the worker,
// at the end of its lease when the worker is frozen, and at the end of the run.
type supervised struct{ r *supervisor.Run }

// supervisorSlot holds the handler's supervisor, started on first use.
type supervisorSlot struct {
	mu     sync.Mutex
	sup    *supervisor.Supervisor
	closed bool
}

func (p supervised) pid() int   { return p.r.Pid() }
func (p supervised) terminate() { _ = p.r.Terminate() }
func (p supervised) kill()      { _ = p.r.Kill() }
func (p supervised) wait() (syscall.WaitStatus, bool, error) {
	e := p.r.Wait()
	return e.Status, e.LeaseExpired, e.Err
}

// startProcess asks the supervisor, started on first use and again should it die, to run the program.
func (h *Handler) startProcess(path string, env []string, stdin, out *os.File, lease func() int64, marker string) (process, error) {
	s, err := h.supervisor()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", h.argv[0], err)
	}
	spec := supervisor.Spec{Path: path, Args: h.argv, Env: env, Stdin: stdin, Output: out, Marker: marker, Lease: lease}
	r, err := s.Start(spec)
	var se *supervisor.StartError
	switch {
	case errors.As(err, &se) && se.LeaseExpired:
		return nil, fmt.Errorf("running %s: %s", h.argv[0], se.Reason)
	case errors.As(err, &se):
		// A program that cannot start will not start on a retry either.
		return nil, tickgroup.Permanent(fmt.Errorf("starting %s: %s", h.argv[0], se.Reason))
	case err != nil:
		return nil, fmt.Errorf("starting %s: %w", h.argv[0], err)
	}
	return supervised{r}, nil
}

func (h *Handler) supervisor() (*supervisor.Supervisor, error) {
	h.slot.mu.Lock()
	defer h.slot.mu.Unlock()
	if h.slot.closed {
		return nil, errors.New("the exec handler is closed")
	}
	if h.slot.sup != nil && h.slot.sup.Err() == nil {
		return h.slot.sup, nil
	}
	if h.slot.sup != nil {
		h.logger.Warn("exec supervisor gone; starting another", "error", h.slot.sup.Err())
	}
	s, err := supervisor.Start()
	if err != nil {
		return nil, err
	}
	if w := s.Warning(); w != "" {
		h.logger.Warn("exec supervisor: " + w)
	}
	h.slot.sup = s
	return s, nil
}

// Close stops the handler's supervisor, killing any program still running, and waits for it.
func (h *Handler) Close() error {
	h.slot.mu.Lock()
	defer h.slot.mu.Unlock()
	h.slot.closed = true
	if h.slot.sup == nil {
		return nil
	}
	return h.slot.sup.Close()
}
