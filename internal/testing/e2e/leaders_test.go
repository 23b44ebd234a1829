package e2e

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// ledBy returns which live replica leads each ticker-topic partition (from tickgroup_leading), and how many
// replicas claim each.
func ledBy(procs []*proc) (map[string]*proc, map[string]int) {
	by, claims := map[string]*proc{}, map[string]int{}
	for _, p := range procs {
		select {
		case <-p.ps.Done():
			continue
		default:
		}
		for k, v := range p.series("tickgroup_leading") {
			if v == 1 {
				by[k] = p
				claims[k]++
			}
		}
	}
	return by, claims
}

// waitLeaders waits until each of the k partitions is led by exactly one of procs.
func waitLeaders(t *testing.T, d time.Duration, k int, procs []*proc) map[string]*proc {
	t.Helper()
	var by map[string]*proc
	kafkatest.Eventually(t, d, fmt.Sprintf("each of %d partitions led once", k), func() bool {
		var claims map[string]int
		by, claims = ledBy(procs)
		if len(by) != k {
			return false
		}
		for _, n := range claims {
			if n != 1 {
				return false
			}
		}
		return true
	})
	return by
}

// TestTickerThreeLeaders: a namespace with three leaders (ticker init --leaders 3) on three replicas. Each
// partition is led once; kill -9 of a replica and a replica frozen past its session (SIGSTOP, then SIGCONT) move
// its partitions to the others; every slot of every schedule is emitted exactly once throughout, and ticker
// status shows the three leaders.
func TestTickerThreeLeaders(t *testing.T) {
	f := newFleet(t)
	f.cli("init", "--leaders", "3")
	var names []string
	per := map[int32]int{}
	for i := 0; len(names) < 9 || len(per) < 3; i++ {
		n := fmt.Sprintf("s%02d", i)
		names = append(names, n)
		per[kafka.LeaderOf(n, 3)]++
	}
	for _, n := range names {
		f.cli("schedule", "put", n, "--every", "1s", "--catchup", "all")
	}
	t.Logf("%d schedules over 3 leaders: %v", len(names), per)
	ticks := f.collect()
	replicas := []*proc{f.ticker("a"), f.ticker("b"), f.ticker("c")}
	by := waitLeaders(t, 60*time.Second, 3, replicas)
	kafkatest.Eventually(t, 30*time.Second, "ticks of every schedule", func() bool {
		for _, n := range names {
			if len(ticks.of(n)) < 3 {
				return false
			}
		}
		return true
	})

	// ticker status reads the leaders off the ticker group's assignment, which the replicas' own logs can run
	// ahead of: a cooperative rebalance revokes a partition in one generation and assigns it in the next.
	waitFor(t, 30*time.Second, "ticker status to show 3 leaders of 3", func() (bool, string) {
		var st struct {
			LeaderCount int `json:"leader_count"`
			Leaders     []struct {
				Partition int32 `json:"partition"`
			} `json:"leaders"`
		}
		if err := json.Unmarshal([]byte(f.cli("status", "--json")), &st); err != nil {
			t.Fatal(err)
		}
		return st.LeaderCount == 3 && len(st.Leaders) == 3, fmt.Sprintf("%d leaders of %d", len(st.Leaders), st.LeaderCount)
	})

	// kill -9 of the replica leading partition 1; the others take its partitions; it comes back.
	victim := by["1"]
	victim.signal(syscall.SIGKILL)
	<-victim.ps.Done()
	live := without(replicas, victim)
	waitLeaders(t, 30*time.Second, 3, live)
	t.Logf("kill -9 of %s: its partitions moved", victim.name)
	back := f.ticker(victim.name + "2")
	live = append(live, back)

	// Freeze the replica that leads partition 2 past its session (3 s), then wake it.
	by = waitLeaders(t, 30*time.Second, 3, live)
	frozen := by["2"]
	frozen.signal(syscall.SIGSTOP)
	time.Sleep(8 * time.Second)
	frozen.signal(syscall.SIGCONT)
	waitLeaders(t, 30*time.Second, 3, live)
	t.Logf("SIGSTOP of %s for 8 s: partitions led once each again", frozen.name)

	// Settle, then count every slot of every schedule.
	settle := map[string]int{}
	for _, n := range names {
		settle[n] = len(ticks.of(n)) + 5
	}
	kafkatest.Eventually(t, 40*time.Second, "5 more ticks of every schedule", func() bool {
		for _, n := range names {
			if len(ticks.of(n)) < settle[n] {
				return false
			}
		}
		return true
	})
	sort.Strings(names)
	total := 0
	for _, n := range names {
		total += checkSequence(t, ticks.of(n), time.Second)
	}
	t.Logf("%d slots of %d schedules, each once (%s)", total, len(names), strings.Join(names, " "))
}
