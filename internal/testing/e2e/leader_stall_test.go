package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/dispatch"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// faultEnv is dispatch.FaultHoldCommitsEnv, which exists only in a build with the tag tickgroup_fault.
const faultEnv = "TICKGROUP_TEST_FAULT_HOLD_COMMITS"

// faultTicker builds, once per test binary, a ticker with the test-only fault hooks (-tags tickgroup_fault) and
// returns its path.
func faultTicker(t *testing.T) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	path := filepath.Join(bin, "ticker-fault")
	if !builtOK["ticker-fault"] {
		out, err := exec.Command("go", "build", "-tags", "tickgroup_fault", "-o", path, "github.com/tickgroup/tickgroup/cmd/ticker").CombinedOutput()
		if err != nil {
			t.Fatalf("building the ticker with -tags tickgroup_fault: %v\n%s", err, out)
		}
		builtOK["ticker-fault"] = true
	}
	return path
}

// TestTickerLeaderStallGivesWay: the leader's transactions stop committing while its group membership lives (the
// test-only fault holds every EndTxn of replica a, as a transaction coordinator that no longer answers it would).
// Within the stall timeout (half of --lead: 5 s) a gives leadership up, another replica leads and emits, before
// the slots of the stall are due; every slot is committed once. Then a is alone and still stalled: it leads again
// after its backoff, stalls and gives way again, and once its commits go through it emits, every slot still once.
func TestTickerLeaderStallGivesWay(t *testing.T) {
	f := newFleet(t)
	fault := filepath.Join(t.TempDir(), "hold") // a's commits are held while this file exists
	f.cli("init")
	f.cli("schedule", "put", "beat", "--every", "1s", "--catchup", "all")
	ticks := f.collect()
	a := f.startEnv("a", faultTicker(t), []string{faultEnv + "=" + fault},
		"run", "--session-timeout", "3s", "--heartbeat-interval", "250ms", "--instance", "a")
	leaderOf(t, 30*time.Second, a)
	b, c := f.ticker("b"), f.ticker("c")
	for _, p := range []*proc{b, c} {
		kafkatest.Eventually(t, 30*time.Second, p.name+" in the group", func() bool { return httpStatus(p, "/-/ready") == 200 })
	}
	kafkatest.Eventually(t, 20*time.Second, "3 ticks from a", func() bool { return len(ticks.of("beat")) >= 3 })
	if l := leaderOf(t, 10*time.Second, a, b, c); l != a {
		t.Fatalf("%s leads, want a", l.name)
	}

	if err := os.WriteFile(fault, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	a.waitLog(t, "test fault: holding the transaction's end", 10*time.Second)
	held := time.Now()
	a.waitLog(t, "giving up leadership", 3*dispatch.StallTimeout(dispatch.DefaultLead))
	gaveUp := time.Since(held)
	kafkatest.Eventually(t, 20*time.Second, "b or c to lead", func() bool {
		return b.metric("tickgroup_leader") == 1 || c.metric("tickgroup_leader") == 1
	})
	if next := leaderOf(t, 20*time.Second, a, b, c); next == a {
		t.Fatal("a leads again although b and c were in the group")
	}
	next := leaderOf(t, 5*time.Second, b, c)
	kafkatest.Eventually(t, 20*time.Second, "ticks emitted by "+next.name, func() bool { return emittedAfter(ticks.of("beat"), held) >= 3 })
	var first time.Time
	late := 0
	for _, s := range ticks.of("beat") {
		if e := s.tick.EmittedAt; e.After(held) {
			if first.IsZero() || e.Before(first) {
				first = e
			}
			if s.tick.NotBefore != nil && e.After(*s.tick.NotBefore) {
				late++
			}
		}
	}
	took := first.Sub(held)
	t.Logf("a held its commit; it gave leadership up after %v, and %s emitted %v after the hold began (stall timeout %v, lead %v)",
		gaveUp.Round(time.Millisecond), next.name, took.Round(time.Millisecond), dispatch.StallTimeout(dispatch.DefaultLead), dispatch.DefaultLead)
	// The stall timeout plus a handover must fit in the lead: the ticks of the slots due during the stall were
	// then committed before their instants.
	if took > dispatch.DefaultLead {
		t.Errorf("%s emitted %v after a's commits stopped, want within the lead (%v)", next.name, took, dispatch.DefaultLead)
	}
	if late > 0 {
		t.Errorf("%d ticks emitted after their instant since the stall", late)
	}
	if n := a.metric("tickgroup_leader_stalled_total"); n != 1 {
		t.Errorf("a: tickgroup_leader_stalled_total = %v, want 1", n)
	}
	checkSequence(t, ticks.of("beat"), time.Second)

	// Alone and still stalled, a leads again (after its rejoin backoff), stalls again and gives way again; once
	// its commits go through, it emits every slot the stall held back.
	b.signal(syscall.SIGTERM)
	c.signal(syscall.SIGTERM)
	_ = b.wait(t, 30*time.Second)
	_ = c.wait(t, 30*time.Second)
	kafkatest.Eventually(t, 60*time.Second, "a to stall again, alone", func() bool { return a.metric("tickgroup_leader_stalled_total") >= 2 })
	if err := os.Remove(fault); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	kafkatest.Eventually(t, 60*time.Second, "a to emit once its commits go through", func() bool { return emittedAfter(ticks.of("beat"), healed) >= 3 })
	t.Logf("alone, a stalled %v times in all, then emitted again", a.metric("tickgroup_leader_stalled_total"))
	checkSequence(t, ticks.of("beat"), time.Second)
}
