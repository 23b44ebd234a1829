package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/child"
)

// A run that ends while a child is stopped for a handoff says that the child stopped, cleanly, and does not
// start it again (TestDevRun once ended just then and found no stop line for the old leader).
func TestProcRunEndsDuringHandoff(t *testing.T) {
	t.Parallel()
	var out child.Log
	scr := &screen{w: &out}
	child := []string{"sh", "-c", `trap 'exit 0' TERM; echo up; while :; do sleep 0.05; done`}
	logPath := filepath.Join(t.TempDir(), "ticker-1.log")
	p := newProc("ticker-1", child, logPath, "", scr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for up := time.Now(); ; time.Sleep(10 * time.Millisecond) { // its SIGTERM trap is set once it says so
		if b, _ := os.ReadFile(logPath); strings.Contains(string(b), "\nup\n") {
			break
		}
		if time.Since(up) > 10*time.Second {
			t.Fatal("the child did not start")
		}
	}

	if err := p.restart(ctx, func(context.Context) { cancel() }); err != nil {
		t.Fatalf("restart: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the run ended")
	}
	got := out.String()
	for _, want := range []string{"ticker-1 stopped cleanly", "ticker-1 stopped (exit 0)", "not restarted"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "restarted (pid") {
		t.Errorf("the child was started again:\n%s", got)
	}
}

// A child stopped as it starts, before it could handle SIGTERM (the run ended right after a handoff's restart),
// dies of the signal: that is a clean stop (TestDevRun once failed on "ticker-1 stopped with signal:
// terminated"). sleep handles no signal at all.
func TestProcStopRightAfterStartIsClean(t *testing.T) {
	t.Parallel()
	p := newProc("ticker-1", []string{"sleep", "10"}, filepath.Join(t.TempDir(), "ticker-1.log"), "", &screen{w: &child.Log{}})
	c, err := p.start(true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.stop(c); err != nil {
		t.Fatalf("stop right after the start = %v, want nil", err)
	}
}
