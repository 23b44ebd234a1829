package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/tickgroup/tickgroup/internal/child"
)

// stopTimeout bounds how long a child may take to stop after SIGTERM before it is killed.
const stopTimeout = 15 * time.Second

// justStarted is how soon after its start a child may die of the SIGTERM that stops it and still count as
// stopped cleanly: a Go program handles the signal within milliseconds of its start.
const justStarted = 2 * time.Second

// signaledBy reports whether the child ended by sig.
func signaledBy(ee *exec.ExitError, sig syscall.Signal) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// proc is one supervised child process (a ticker replica or a worker). It runs in its own process group, so a
// Ctrl-C in the terminal reaches only this program, which then stops the children in order; its output goes to
// its log file, which a restart appends to.
type proc struct {
	name        string
	argv        []string
	logPath     string
	metricsAddr string
	scr         *screen

	// restartc asks Run to stop the child, call whileStopped, and start it again.
	restartc chan restartRequest
	// started is when the child was last started (Run's goroutine only).
	started time.Time
}

type restartRequest struct {
	whileStopped func(context.Context)
	done         chan error // the error of the stop; sent before the child starts again
}

func newProc(name string, argv []string, logPath, metricsAddr string, scr *screen) *proc {
	return &proc{name: name, argv: argv, logPath: logPath, metricsAddr: metricsAddr, scr: scr, restartc: make(chan restartRequest)}
}

// Run starts the child and keeps it running until ctx ends, then stops it: SIGTERM, and SIGKILL after
// stopTimeout. A child that exits on its own is an error (its log tells why): the demo would be silently wrong
// without it. It returns nil when the child stopped cleanly (exit status 0) after ctx ended.
func (p *proc) Run(ctx context.Context) error {
	first := true
	for {
		c, err := p.start(first)
		if err != nil {
			return err
		}
		if !first {
			p.scr.event("START", colorDim, "%s restarted (pid %d); it rejoins the group as a follower", p.name, c.Pid())
		}
		first = false
		select {
		case <-c.Done():
			if ctx.Err() != nil {
				return nil
			}
			err := c.Err()
			p.scr.event("EXIT", colorRed, "%s exited on its own (%s); stopping everything (see %s)", p.name, child.ExitText(err), p.logPath)
			return fmt.Errorf("%s exited on its own (%v); last lines of %s:\n%s", p.name, child.ExitText(err), p.logPath, tail(p.logPath, 12))
		case <-ctx.Done():
			took, err := p.stop(c)
			if err != nil {
				return err
			}
			p.scr.event("STOP", colorDim, "%s stopped (exit 0) in %s", p.name, took.Round(time.Millisecond))
			return nil
		case req := <-p.restartc:
			took, err := p.stop(c)
			if err != nil {
				req.done <- err
				return err
			}
			p.scr.event("HANDOFF", colorYellow, "%s stopped cleanly in %s (it left the group on its way out)", p.name, took.Round(time.Millisecond))
			req.whileStopped(ctx)
			req.done <- nil
			if ctx.Err() != nil {
				// The run ended during the handoff: the child has already stopped, and cleanly.
				p.scr.event("STOP", colorDim, "%s stopped (exit 0) in %s for the handoff; not restarted, the run is ending", p.name, took.Round(time.Millisecond))
				return nil
			}
		}
	}
}

// restart stops the child, calls whileStopped, and starts the child again. It returns the error of the stop.
func (p *proc) restart(ctx context.Context, whileStopped func(context.Context)) error {
	req := restartRequest{whileStopped: whileStopped, done: make(chan error, 1)}
	select {
	case p.restartc <- req:
	case <-ctx.Done():
		return nil
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return nil
	}
}

// start starts the child with its output appended to its log file (truncated first when truncate), in a
// process group of its own, which gets SIGTERM when this program dies.
func (p *proc) start(truncate bool) (*child.Process, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if truncate {
		flags |= os.O_TRUNC
	}
	logFile, err := os.OpenFile(p.logPath, flags, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", p.name, err)
	}
	defer logFile.Close() // the child has its own descriptor
	fmt.Fprintf(logFile, "--- tickgroup-dev %s: starting %s: %s\n", time.Now().Format(time.RFC3339), p.name, strings.Join(p.argv, " "))
	p.started = time.Now()
	return child.Start(p.name, p.argv, child.Options{Env: childEnv(), Output: logFile, Group: true, ParentDeath: syscall.SIGTERM})
}

// stop stops the child's process group: SIGTERM, then SIGKILL after stopTimeout. A stop is clean with exit
// status 0 within the timeout, or when the SIGTERM itself ended a child started less than justStarted before:
// one stopped as it started (the run ended right after a handoff's restart) has no handler for it yet.
func (p *proc) stop(c *child.Process) (time.Duration, error) {
	start := time.Now()
	err := c.Stop(stopTimeout)
	var ee *exec.ExitError
	switch {
	case errors.Is(err, child.ErrKilled):
		return time.Since(start), fmt.Errorf("%s did not stop within %s of SIGTERM and was killed (%s); see %s", p.name, stopTimeout, child.ExitText(c.Err()), p.logPath)
	case errors.As(err, &ee) && start.Sub(p.started) < justStarted && signaledBy(ee, syscall.SIGTERM):
		return time.Since(start), nil
	case err != nil:
		return time.Since(start), fmt.Errorf("%s stopped with %s; see %s", p.name, child.ExitText(err), p.logPath)
	}
	return time.Since(start), nil
}

// childEnv is this process's environment without TICKGROUP_* variables: the children get every setting as a
// flag, and a TICKGROUP_SASL_MECHANISM meant for a real cluster must not break the development run.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TICKGROUP_") {
			env = append(env, kv)
		}
	}
	return env
}

// tail returns the last n lines of the file at path, indented.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "    (" + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + string(bytes.Join(lines, []byte("\n    ")))
}
