package securetest

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a running ticker or worker binary.
type proc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // of Wait, once done is closed
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs bin (ticker or worker) with args; it is killed at the end of the test if still running.
func start(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	p := &proc{t: t, name: bin + " " + args[0], cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
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
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
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

// exited waits up to d for the process to end and returns its exit code, or -1 if it still runs.
func (p *proc) exited(d time.Duration) int {
	select {
	case <-p.done:
	case <-time.After(d):
		return -1
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -2
	}
	return 0
}

// waitOutput waits up to d for a line of output containing all of subs and returns it ("" on timeout or if
// the process ends first without such a line).
func (p *proc) waitOutput(d time.Duration, subs ...string) string {
	deadline := time.Now().Add(d)
	for {
		ended := false
		select {
		case <-p.done:
			ended = true
		default:
		}
		for line := range strings.Lines(p.out.String()) {
			ok := true
			for _, s := range subs {
				ok = ok && strings.Contains(line, s)
			}
			if ok {
				return strings.TrimSpace(line)
			}
		}
		if ended || time.Now().After(deadline) {
			return ""
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and returns the exit code (it kills the process after 20 s).
func (p *proc) stop() int {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.exited(20 * time.Second); code != -1 {
		return code
	}
	_ = p.cmd.Process.Kill()
	p.t.Errorf("%s did not stop within 20 s of SIGTERM", p.name)
	return p.exited(5 * time.Second)
}
