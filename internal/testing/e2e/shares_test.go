package e2e

import (
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestE2EMigrateToShares: a namespace of three leaders made and run by the previous release, before the
// schedule shares (each replica holds every schedule), moves to them while it ticks. Each replica in turn is
// stopped (SIGTERM) and started on this build; the first of them to lead partition 0 copies the schedules into
// their shares, and every replica of this build then reads only the shares of the leaders it runs
// (tickgroup_schedules_sharded). A replica killed (-9) afterwards hands its leaders over on the shares. Every slot
// of every schedule is emitted exactly once throughout, and a schedule written after the move runs.
func TestE2EMigrateToShares(t *testing.T) {
	countOnly(t)
	f := newFleet(t)
	oldTicker, _ := previousBuild(t, previousRelease) // the upgrade test's build
	if out, err := exec.Command(oldTicker, "init", "--leaders", "3", "--brokers", f.brokers, "--namespace", f.ns).CombinedOutput(); err != nil {
		t.Fatalf("ticker init of %s: %v\n%s", previousRelease, err, out)
	}
	names := spreadNames(9, 3)
	for _, n := range names {
		f.cli("schedule", "put", n, "--every", "1s", "--catchup", "all")
	}
	ticks := f.collect()
	more := func(what string, n int) {
		t.Helper()
		want := map[string]int{}
		for _, name := range names {
			want[name] = len(ticks.of(name)) + n
		}
		kafkatest.Eventually(t, 40*time.Second, what, func() bool {
			for _, name := range names {
				if len(ticks.of(name)) < want[name] {
					return false
				}
			}
			return true
		})
	}
	replicas := make([]*proc, 3)
	for i, name := range []string{"a", "b", "c"} {
		replicas[i] = f.start(name, oldTicker, "run", "--session-timeout", "3s", "--heartbeat-interval", "250ms", "--instance", name)
	}
	waitLeaders(t, 60*time.Second, 3, replicas)
	more("ticks of every schedule on the previous release", 3)

	for i, p := range replicas {
		p.signal(syscall.SIGTERM)
		if err := p.wait(t, 30*time.Second); err != nil {
			t.Errorf("%s: stopped with %v", p.name, err)
		}
		replicas[i] = f.ticker(p.name + "2")
		waitLeaders(t, 30*time.Second, 3, replicas)
		more(fmt.Sprintf("ticks after %s moved to this build", p.name), 2)
	}
	kafkatest.Eventually(t, 60*time.Second, "every replica on the shares", func() bool {
		for _, p := range replicas {
			if p.series("tickgroup_schedules_sharded")[""] != 1 {
				return false
			}
		}
		return true
	})
	t.Log("every replica reads the shares")
	// A schedule written now reaches its leader through leader 0's copy.
	f.cli("schedule", "put", "late", "--every", "1s", "--catchup", "all")
	names = append(names, "late")
	more("ticks of a schedule written on the shares", 2)

	by := waitLeaders(t, 30*time.Second, 3, replicas)
	victim := by["1"]
	victim.signal(syscall.SIGKILL)
	<-victim.ps.Done()
	waitLeaders(t, 30*time.Second, 3, without(replicas, victim))
	more("ticks after the kill -9 on the shares", 5)

	total := 0
	for _, n := range names {
		total += checkSequence(t, ticks.of(n), time.Second)
	}
	t.Logf("%d slots of %d schedules, each once", total, len(names))
}

// spreadNames returns at least n schedule names, with some of each of the leaders.
func spreadNames(n, leaders int) []string {
	var names []string
	per := map[int32]int{}
	for i := 0; len(names) < n || len(per) < leaders; i++ {
		name := fmt.Sprintf("s%02d", i)
		names = append(names, name)
		per[kafka.LeaderOf(name, leaders)]++
	}
	return names
}
