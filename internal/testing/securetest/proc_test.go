package securetest

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/child"
)

// proc is a running ticker or worker binary.
type proc struct {
	t    *testing.T
	name string
	ps   *child.Process
	out  child.Log
}

// childEnv is the environment of the binaries under test: nothing of this process's (no credentials).
var childEnv = []string{"PATH=/usr/bin:/bin"}

// start runs bin (ticker or worker) with args; it is killed at the end of the test if still running.
func start(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: bin + " " + args[0]}
	ps, err := child.Start(p.name, append([]string{filepath.Join(binDir, bin)}, args...), child.Options{Env: childEnv, Output: &p.out})
	if err != nil {
		t.Fatal(err)
	}
	p.ps = ps
	t.Cleanup(func() {
		ps.Kill()
		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, p.out.String())
		}
	})
	return p
}

// runCmd runs bin to its end (within a minute) and returns its output and exit code.
func runCmd(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, bin), args...)
	cmd.Env = childEnv
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	default:
		t.Fatalf("%s %v: %v", bin, args, err)
		return "", 0
	}
}

// exited waits up to d for the process to end and returns its exit code: -1 if it still runs, -2 if a signal
// ended it.
func (p *proc) exited(d time.Duration) int {
	if !p.ps.Wait(d) {
		return -1
	}
	if code := child.ExitCode(p.ps.Err()); code >= 0 {
		return code
	}
	return -2
}

// waitOutput waits up to d for a line of output containing all of subs and returns it ("" on timeout or if
// the process ends first without such a line).
func (p *proc) waitOutput(d time.Duration, subs ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return p.out.WaitLine(ctx, p.ps.Done(), subs...)
}

// stop sends SIGTERM and returns the exit code (it kills the process after 20 s).
func (p *proc) stop() int {
	if err := p.ps.Stop(20 * time.Second); errors.Is(err, child.ErrKilled) {
		p.t.Error(err)
	}
	return p.exited(5 * time.Second)
}
