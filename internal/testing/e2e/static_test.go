package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// Static membership of the ticker group (--instance-id): a leader killed with kill -9 and restarted with the same
// instance ID takes leadership back at once, well within its 20 s session timeout; a second process with the
// same ID fences the older one, which exits 1; a graceful stop of a static leader hands over at once. Every slot
// is emitted once throughout.
func TestTickerStaticMembership(t *testing.T) {
	f := newFleet(t)
	f.cli("init")
	f.cli("schedule", "put", "beat", "--every", "1s")
	ticks := f.collect()
	static := func(name string, extra ...string) *proc {
		return f.ticker(name, append([]string{"--instance-id", "ticker-static", "--session-timeout", "20s"}, extra...)...)
	}
	a := static("a")
	leaderOf(t, 30*time.Second, a)
	b := f.ticker("b", "--session-timeout", "20s")
	kafkatest.Eventually(t, 20*time.Second, "3 ticks", func() bool { return len(ticks.of("beat")) >= 3 })

	a.signal(syscall.SIGKILL)
	killed := time.Now()
	// a2 heartbeats seldom, so that when a3 takes its instance ID below, a2 often learns it from its producer,
	// fenced by a3's term, before a heartbeat says FENCED_INSTANCE_ID (the order a loaded machine produces; it
	// once left a2 running and fenced a3 instead), and otherwise from the heartbeat.
	a2 := static("a2", "--heartbeat-interval", "5s")
	if l := leaderOf(t, 15*time.Second, a2, b); l != a2 {
		t.Fatalf("after the restart %s leads, want the restarted static member a2", l.name)
	}
	var first time.Time
	kafkatest.Eventually(t, 15*time.Second, "a tick after the restart", func() bool {
		for _, s := range ticks.of("beat") {
			if s.tick.EmittedAt.After(killed) {
				first = s.tick.EmittedAt
				return true
			}
		}
		return false
	})
	t.Logf("kill -9 and restart of the static leader: first emission %s after the kill (session timeout 20s)", first.Sub(killed).Round(time.Millisecond))
	if took := first.Sub(killed); took > 10*time.Second {
		t.Errorf("the restarted static leader emitted %s after the kill, want well within the 20s session", took)
	}

	a3 := static("a3") // the same instance ID again: the group fences a2
	if err := a2.wait(t, 40*time.Second); exitCode(err) != 1 {
		t.Errorf("the fenced replica exited with %v, want status 1", err)
	}
	if !a2.logContains("another replica joined the group with this instance ID") {
		t.Errorf("the fenced replica's log does not say it was fenced")
	}
	if l := leaderOf(t, 30*time.Second, a3, b); l != a3 {
		t.Fatalf("after the duplicate instance ID %s leads, want a3, which took over a2's membership", l.name)
	}

	stopped := time.Now()
	a3.signal(syscall.SIGTERM)
	if err := a3.wait(t, 30*time.Second); err != nil {
		t.Errorf("static replica stopped with %v, want a clean exit", err)
	}
	leaderOf(t, 15*time.Second, b)
	if took := time.Since(stopped); took > 10*time.Second {
		t.Errorf("leadership moved %s after the static leader's graceful stop, want well within the 20s session", took)
	}
	settleAndCheck(t, ticks)
}
