package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// beat emits one tick of schedule name every interval until ctx ends, and returns the IDs emitted.
func (e *env) beat(ctx context.Context, name string, interval time.Duration) <-chan []string {
	out := make(chan []string, 1)
	prod := e.producer()
	go func() {
		var ids []string
		defer func() { out <- ids }()
		slot := time.Now().Truncate(interval)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			slot = slot.Add(interval)
			x := tick.New(name, slot, 0, 1)
			if err := e.tryEmit(prod, e.tickRecord(x)); err != nil {
				e.t.Errorf("emitting %s: %v", x.ID, err) // not Fatal: this is not the test's goroutine
				return
			}
			ids = append(ids, x.ID)
		}
	}()
	return out
}

// Static membership: a worker killed and restarted with the same --instance-id within the session timeout runs
// ticks again at once (no wait for the session to expire); two processes with one instance ID never both run
// (the older one exits 1); a static member's graceful stop hands its partitions over at once.
func TestE2EStaticMembership(t *testing.T) {
	e := setup(t)
	flags := []string{"--exec", handlerBin, "--session-timeout", "20s", "--lease", "1s"}
	ctx, cancel := context.WithCancel(context.Background())
	beats := e.beat(ctx, "static", 250*time.Millisecond)
	ranBy := func(worker string, after time.Time) bool {
		for _, xs := range e.executions() {
			for _, x := range xs {
				if x.worker == worker && x.start.After(after) {
					return true
				}
			}
		}
		return false
	}

	a := e.start(nil, append(flags, "--instance-id", "static-1")...)
	waitFor(t, 40*time.Second, "the static worker running ticks", func() (bool, string) { return ranBy(a.name, time.Time{}), "" })
	e.kill9(a)
	restarted := time.Now()
	a2 := e.start(nil, append(flags, "--instance-id", "static-1")...)
	waitFor(t, 15*time.Second, "the restarted static worker running ticks (well within the 20s session)", func() (bool, string) {
		return ranBy(a2.name, restarted), ""
	})
	back := time.Since(restarted)
	t.Logf("restarted static member ran a tick %s after its restart (session timeout 20s)", back.Round(time.Millisecond))

	// A second process with the same instance ID fences the older one, which stops with exit status 1.
	dup := e.start(nil, append(flags, "--instance-id", "static-1")...)
	select {
	case <-a2.ps.Done():
	case <-time.After(40 * time.Second):
		t.Fatalf("the older static-1 process still runs 40s after a second one joined with its instance ID")
	}
	if code := exitCode(a2.ps.Err()); code != 1 {
		t.Errorf("fenced worker exited with %d, want 1", code)
	}
	if !a2.logContains("fenced") {
		t.Errorf("fenced worker's log does not say it was fenced")
	}
	fencedAt := time.Now()
	waitFor(t, 30*time.Second, "the newer static-1 process running ticks", func() (bool, string) { return ranBy(dup.name, fencedAt), "" })

	// A graceful stop of a static member leaves the group: a plain worker takes over at once.
	plain := e.start(nil, flags...)
	e.waitGroupStable(2)
	e.stop(dup)
	stoppedAt := time.Now()
	e.waitGroupStable(1)
	if took := time.Since(stoppedAt); took > 10*time.Second {
		t.Errorf("partitions of the stopped static member moved after %s, want well within the 20s session", took)
	}
	cancel()
	ids := <-beats
	e.waitAllOK(ids, 60*time.Second)
	e.stop(plain)
}
