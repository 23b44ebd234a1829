package e2e

import (
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestTickerStandbysJoining: standbys joining the group do not move leadership (cooperative-sticky keeps
// partition 0 with its owner) and do not delay emission.
func TestTickerStandbysJoining(t *testing.T) {
	f := newFleet(t)
	f.cli("init")
	f.cli("schedule", "put", "beat", "--every", "1s", "--catchup", "all")
	ticks := f.collect()
	a := f.ticker("a")
	leaderOf(t, 30*time.Second, a)
	kafkatest.Eventually(t, 20*time.Second, "3 ticks", func() bool { return len(ticks.of("beat")) >= 3 })
	joined := time.Now()
	standbys := []*proc{f.ticker("b"), f.ticker("c")}
	kafkatest.Eventually(t, 20*time.Second, "5 ticks after the standbys joined", func() bool { return emittedAfter(ticks.of("beat"), joined) >= 5 })
	if leaderOf(t, 10*time.Second, append(standbys, a)...) != a {
		t.Error("leadership moved when standbys joined")
	}
	if got := a.metric("tickgroup_leader_changes_total"); got != 1 {
		t.Errorf("the leader started %v terms, want 1", got)
	}
	worst := time.Duration(0)
	for _, s := range ticks.of("beat") {
		worst = max(worst, s.tick.EmittedAt.Sub(s.tick.Slot))
	}
	t.Logf("worst emission delay while two standbys joined: %v", worst.Round(time.Millisecond))
	if worst > time.Second {
		t.Errorf("a slot was emitted %v late while standbys joined", worst)
	}
	settleAndCheck(t, ticks)
}
