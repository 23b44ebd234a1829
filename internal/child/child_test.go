package child

import (
	"syscall"
	"testing"
	"time"
)

func TestStopAndExitCodes(t *testing.T) {
	var out Log
	p, err := Start("sh", []string{"/bin/sh", "-c", "echo up; exec sleep 60"}, Options{Output: &out, Group: true})
	if err != nil {
		t.Fatal(err)
	}
	if line := out.WaitLine(t.Context(), p.Done(), "up"); line != "up" {
		t.Fatalf("output %q", out.String())
	}
	if p.ExitCode() != -1 || !p.Running() {
		t.Fatal("running child has an exit code")
	}
	if err := p.Stop(10 * time.Second); ExitText(err) != "signal: terminated" {
		t.Fatalf("Stop = %v", err)
	}
	if !p.Signalled() || p.Running() {
		t.Fatal("not signalled or still running")
	}

	q, err := Start("false", []string{"/bin/sh", "-c", "exit 3"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !q.Wait(10*time.Second) || q.ExitCode() != 3 || q.Signalled() {
		t.Fatalf("exit code %d, signalled %v", q.ExitCode(), q.Signalled())
	}

	r, err := Start("frozen", []string{"/bin/sh", "-c", "exec sleep 60"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Signal(syscall.SIGSTOP)
	r.Kill() // a stopped child too
	if r.Running() {
		t.Fatal("Kill returned before the child exited")
	}
}
