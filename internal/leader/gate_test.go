package leader_test

import (
	"testing"

	"github.com/tickgroup/tickgroup/internal/leader"
)

// After refuses until its channel closes, waking a waiter then; from then on it is the next gate, refusals and
// changes alike.
func TestAfter(t *testing.T) {
	loaded := make(chan struct{})
	clock := newGate("clock off")
	g := leader.After(loaded, "schedules not loaded", clock)
	if why := g.Refusal(); why != "schedules not loaded" {
		t.Errorf("before: %q", why)
	}
	changed := g.Changed()
	close(loaded)
	if !closed(changed)() {
		t.Fatal("the load did not wake a waiter")
	}
	if why := g.Refusal(); why != "clock off" {
		t.Errorf("loaded, the clock off: %q", why)
	}
	changed = g.Changed()
	clock.set("")
	if !closed(changed)() {
		t.Fatal("the next gate's change did not wake a waiter")
	}
	if why := g.Refusal(); why != "" {
		t.Errorf("loaded, the clock on: %q", why)
	}
	if why := leader.After(loaded, "x", nil).Refusal(); why != "" {
		t.Errorf("loaded, no next gate: %q", why)
	}
}
