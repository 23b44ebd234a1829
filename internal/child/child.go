// Package child runs a ticker or worker binary (or any program) as a child process of a test, a benchmark or
// the development runner: started with its output going to a writer, signalled, stopped (SIGTERM, then SIGKILL
// after a grace period) and waited for with a bound. Log keeps a child's output in memory and wakes whoever
// waits for a line the moment it is written.
package child

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

// Options are how a child starts.
type Options struct {
	// Env is the child's whole environment; nil: this process's.
	Env []string
	// Output receives the child's stdout and stderr; nil: discarded.
	Output io.Writer
	// Group runs the child in a process group of its own, which every signal then reaches (the child's own
	// children too).
	Group bool
	// ParentDeath, when not 0, is the signal the child gets when this process dies, even by kill -9 (Linux
	// only; elsewhere only this process's own clean-up stops its children). Linux sends it when the OS thread
	// that started the child ends, which for Go is the process's end unless a goroutine locked that thread
	// (runtime.LockOSThread) and returned: the callers start children from goroutines that lock no thread.
	ParentDeath syscall.Signal
	// Exited, when not nil, is called once the child has exited, before Done is closed (to close Output).
	Exited func(error)
}

// Process is one started child.
type Process struct {
	Name string

	cmd       *exec.Cmd
	group     bool
	done      chan struct{}
	err       error // of Wait, once done is closed
	signalled atomic.Bool
}

// Start starts argv[0] with the arguments argv[1:].
func Start(name string, argv []string, o Options) (*Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("starting %s: no program", name)
	}
	cmd := exec.Command(argv[0], argv[1:]...) //nolint:gosec // the binaries a test or tool built or was given
	cmd.Env = o.Env
	if o.Output != nil {
		cmd.Stdout, cmd.Stderr = o.Output, o.Output
	}
	cmd.SysProcAttr = procAttr(o)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, group: o.Group, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if o.Exited != nil {
			o.Exited(err)
		}
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the child has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Running reports whether the child has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Err is the child's exit error (nil: exit status 0). Valid once Done is closed.
func (p *Process) Err() error { return p.err }

// ExitCode is the child's exit status: -1 while it runs or when a signal ended it.
func (p *Process) ExitCode() int {
	if p.Running() {
		return -1
	}
	return ExitCode(p.err)
}

// Signal sends sig to the child (to its group when it has one of its own). Signalled reports it afterwards: an
// exit the caller did not cause is a crash. The error is the kernel's, for a child that has exited for example.
func (p *Process) Signal(sig syscall.Signal) error {
	p.signalled.Store(true)
	if p.group {
		return syscall.Kill(-p.cmd.Process.Pid, sig)
	}
	return p.cmd.Process.Signal(sig)
}

// Signalled reports whether Signal (or Stop, or Kill) was called.
func (p *Process) Signalled() bool { return p.signalled.Load() }

// Wait waits up to d for the child to exit and reports whether it did.
func (p *Process) Wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}

// ErrKilled is Stop's error for a child that outlived its grace period.
var ErrKilled = errors.New("did not stop in time after SIGTERM and was killed")

// Stop sends SIGTERM and waits up to grace for the child to exit, then kills it. It returns the exit error, or
// ErrKilled when the child had to be killed.
func (p *Process) Stop(grace time.Duration) error {
	_ = p.Signal(syscall.SIGTERM)
	if p.Wait(grace) {
		return p.err
	}
	p.Kill()
	return fmt.Errorf("%s: %w (grace %s; %s)", p.Name, ErrKilled, grace, ExitText(p.err))
}

// Kill kills the child (a stopped one too: SIGCONT first) and waits for it. A child with a group of its own has
// the whole group killed, even when the child itself has exited already.
func (p *Process) Kill() {
	if p.group || p.Running() {
		_ = p.Signal(syscall.SIGCONT)
		_ = p.Signal(syscall.SIGKILL)
	}
	<-p.done
}

// ExitCode is the exit status in err, the error of an exited child: 0 for nil, -1 for a child a signal ended
// or an error that is not an exit.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// ExitText describes err, the error of an exited child, as "exit status 1" or "signal: killed".
func ExitText(err error) string {
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ProcessState.String()
	}
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// FreeAddr returns a 127.0.0.1 address with a port free a moment ago, for a child's --metrics-addr.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
