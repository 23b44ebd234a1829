//go:build !linux

package command

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/tickgroup/tickgroup"
)

// direct is a program the worker runs itself, in its own process group. Outside Linux there is no supervisor
// (it needs a child subreaper and Linux's wait semantics): the group still gets SIGTERM and SIGKILL on
// cancellation and SIGKILL after the program exits, but it survives a worker killed by SIGKILL, and the lease
// is not enforced.
type direct struct{ cmd *exec.Cmd }

// supervisorSlot is empty: there is no supervisor to hold.
type supervisorSlot struct{}

func (h *Handler) startProcess(path string, env []string, stdin, out *os.File, _ func() int64, _ string) (process, error) {
	cmd := &exec.Cmd{
		Path:        path,
		Args:        h.argv,
		Env:         env,
		Stdin:       stdin,
		Stdout:      out,
		Stderr:      out,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, tickgroup.Permanent(fmt.Errorf("starting %s: %w", h.argv[0], err))
	}
	return direct{cmd}, nil
}

func (p direct) pid() int   { return p.cmd.Process.Pid }
func (p direct) terminate() { _ = syscall.Kill(-p.pid(), syscall.SIGTERM) }
func (p direct) kill()      { _ = syscall.Kill(-p.pid(), syscall.SIGKILL) }

// wait reaps the program, then kills what is left of its group. Without waitid(WNOWAIT) that last signal
// could, in theory, reach a new group that reuses the pid.
func (p direct) wait() (syscall.WaitStatus, bool, error) {
	_ = p.cmd.Wait()
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws, false, nil
}

// Close does nothing outside Linux: there is no supervisor.
func (h *Handler) Close() error { return nil }
