//go:build !linux

package worker

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// group is a program running in its own process group. Outside Linux there is no supervisor (it needs a
// parent-death signal): the group still gets SIGTERM and SIGKILL on cancellation and SIGKILL after the program
// exits, but it survives a worker killed by SIGKILL, and the lease is not enforced.
type group struct {
	cmd       *exec.Cmd
	pgid, pid int
	err       error
}

func startGroup(path string, argv, env []string, stdin, out *os.File, _ *lease) (*group, error) {
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         env,
		Stdin:       stdin,
		Stdout:      out,
		Stderr:      out,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, Permanent(fmt.Errorf("starting %s: %w", argv[0], err))
	}
	return &group{cmd: cmd, pgid: cmd.Process.Pid, pid: cmd.Process.Pid}, nil
}

// awaitExit waits for the program and reaps it: without waitid(WNOWAIT) a signal sent to the group afterwards
// could, in theory, reach a new group that reuses the pid.
func (g *group) awaitExit()           { g.err = g.cmd.Wait() }
func (g *group) kill(<-chan struct{}) { _ = syscall.Kill(-g.pgid, syscall.SIGKILL) }
func (g *group) wait() error          { return g.err }
func (g *group) leaseExpired() bool   { return false }
