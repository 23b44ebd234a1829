package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestPipelineUnderKills runs the whole system: three tickers and two workers executing a `shards: 2` schedule
// through an exec handler. The leader and a worker are killed with SIGKILL mid-run. Every slot and shard is
// emitted exactly once, and every emitted tick is executed; a tick runs twice only when its worker died with it
// in flight, which the test reports.
func TestPipelineUnderKills(t *testing.T) {
	countOnly(t)
	f := newFleet(t)
	f.cli("init", "--work-partitions", "4")
	f.cli("schedule", "put", "scan", "--every", "1s", "--shards", "2", "--catchup", "all")
	log := filepath.Join(t.TempDir(), "executions.log")
	// The worker runs this program without a shell; the program itself is a shell, by the test's choice.
	handler := `sh -c 'echo "$TICK_ID $TICK_ATTEMPT" >> ` + log + `'`
	startWorker := func(name string) *proc {
		return f.start(name, "worker", "run", "--exec", handler, "--worker-id", name, "--start", "earliest", "--session-timeout", "3s")
	}
	ticks := f.collect()
	workers := []*proc{startWorker("w1"), startWorker("w2")}
	tickers := []*proc{f.ticker("a"), f.ticker("b"), f.ticker("c")}
	lead := leaderOf(t, 30*time.Second, tickers...)
	kafkatest.Eventually(t, 30*time.Second, "6 ticks executed", func() bool { return len(executions(t, log)) >= 6 })

	lead.signal(syscall.SIGKILL)
	workers[0].signal(syscall.SIGKILL)
	killed := time.Now()
	leaderOf(t, 20*time.Second, without(tickers, lead)...)
	startWorker("w1-restarted")
	kafkatest.Eventually(t, 30*time.Second, "16 ticks emitted after the kills", func() bool { return emittedAfter(ticks.of("scan"), killed) >= 16 })

	// Stop emitting, then wait until every emitted tick ran.
	for _, p := range tickers {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range tickers {
		_ = p.wait(t, 30*time.Second)
	}
	time.Sleep(time.Second) // the last commit's markers reach the collector
	emitted := ticks.of("scan")
	kafkatest.Eventually(t, 60*time.Second, "every emitted tick executed", func() bool {
		ran := executions(t, log)
		for _, s := range emitted {
			if ran[s.tick.ID] == 0 {
				return false
			}
		}
		return true
	})

	// Emission: every slot and shard once.
	counts := slotCounts(emitted)
	first, last := emitted[0].tick.Slot, emitted[0].tick.Slot
	for _, s := range emitted {
		first, last = minTime(first, s.tick.Slot), maxTime(last, s.tick.Slot)
	}
	slots := 0
	for slot := first; !slot.After(last); slot = slot.Add(time.Second) {
		slots++
		for shard := range 2 {
			if id := tick.ID("scan", slot, shard, 2); counts[id] != 1 {
				t.Errorf("%s emitted %d times", id, counts[id])
			}
		}
	}
	// Execution: every tick at least once; report the re-executions.
	ran := executions(t, log)
	again := 0
	for id, n := range ran {
		if counts[id] == 0 {
			t.Errorf("executed %s, which was never emitted", id)
		}
		if n > 1 {
			again++
			t.Logf("%s ran %d times (in flight when w1 was killed, or on a partition that moved)", id, n)
		}
	}
	t.Logf("%d slots x 2 shards emitted once each; %d ticks executed, %d of them more than once", slots, len(ran), again)
	if again > 4 {
		t.Errorf("%d ticks ran more than once; only ticks in flight at the kill may", again)
	}
}

// executions counts the handler's runs per tick ID.
func executions(t *testing.T, path string) map[string]int {
	t.Helper()
	out := map[string]int{}
	fh, err := os.Open(path)
	if os.IsNotExist(err) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if id, _, ok := strings.Cut(sc.Text(), " "); ok {
			out[id]++
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
