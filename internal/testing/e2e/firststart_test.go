package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestFirstStartLosesNoTick: a fleet started all at once, with the workers a little behind the tickers (5 s, a
// slow image pull), runs every tick with the workers' default start: the ticks committed before the first worker
// joined run too. The protection against a replay stays: ticks written an hour before the workers' group
// existed (an old work topic) never run.
func TestFirstStartLosesNoTick(t *testing.T) {
	f := newFleet(t)
	f.cli("init", "--work-partitions", "4")
	f.cli("schedule", "put", "beat", "--every", "1s")

	// An old topic's ticks: written (record timestamp) an hour ago, before the group of workers existed.
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	hourAgo := time.Now().Add(-time.Hour).Truncate(time.Second)
	var old []string
	for i := range 8 {
		tk := tick.New("old", hourAgo.Add(time.Duration(i)*time.Second), 0, 1)
		tk.EmittedAt = tk.Slot
		v, err := tick.Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: f.ns + ".work", Partition: int32(i % 4), Key: []byte(tk.ID), Value: v, Timestamp: tk.Slot}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		old = append(old, tk.ID)
	}
	cl.Close()

	ticks := f.collect()
	tickers := []*proc{f.ticker("a", "--work-lag-interval", "500ms"), f.ticker("b", "--work-lag-interval", "500ms")}
	started := time.Now()
	lead := leaderOf(t, 30*time.Second, tickers...)
	kafkatest.Eventually(t, 20*time.Second, "3 ticks before any worker", func() bool { return len(ticks.of("beat")) >= 3 })
	waitUntil(started.Add(5 * time.Second)) // the scenario: workers start 5 s after the tickers

	log := filepath.Join(t.TempDir(), "executions.log")
	handler := `sh -c 'echo "$TICK_ID $TICK_ATTEMPT" >> ` + log + `'`
	workersAt := time.Now()
	before := len(ticks.of("beat"))
	for _, name := range []string{"w1", "w2"} {
		f.start(name, "worker", "run", "--exec", handler, "--worker-id", name, "--session-timeout", "3s") // default --start
	}
	kafkatest.Eventually(t, 30*time.Second, "5 ticks emitted after the workers started", func() bool { return emittedAfter(ticks.of("beat"), workersAt) >= 5 })

	// The leader measures the workers' lag for the fleet: one series per work partition (the workers pinned a
	// start offset on all four), and small once they have caught up.
	var lag map[string]float64
	kafkatest.Eventually(t, 20*time.Second, "the leader's work lag: 4 partitions, each under 5 s", func() bool {
		lag = lead.series("tickgroup_work_lag_seconds")
		if len(lag) != 4 {
			return false
		}
		for _, v := range lag {
			if v >= 5 {
				return false
			}
		}
		return true
	})
	t.Logf("leader's tickgroup_work_lag_seconds by partition: %v; offsets: %v", lag, lead.series("tickgroup_work_lag_offsets"))
	if other := without(tickers, lead)[0]; len(other.series("tickgroup_work_lag_seconds")) != 0 {
		t.Errorf("%s, not leading, exports work lag series too", other.name)
	}

	for _, p := range tickers {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range tickers {
		_ = p.wait(t, 30*time.Second)
	}
	time.Sleep(time.Second) // the last commit's markers reach the collector
	emitted := ticks.of("beat")
	kafkatest.Eventually(t, 60*time.Second, "every emitted tick executed", func() bool {
		ran := executions(t, log)
		for _, s := range emitted {
			if ran[s.tick.ID] == 0 {
				return false
			}
		}
		return true
	})
	checkSequence(t, emitted, time.Second)
	ran := executions(t, log)
	for _, id := range old {
		if ran[id] > 0 {
			t.Errorf("%s, written an hour before the workers' group existed, ran", id)
		}
	}
	t.Logf("%d ticks emitted, %d of them before the first worker started (%v after the tickers); all executed; %d hour-old ticks not replayed",
		len(emitted), before, workersAt.Sub(started).Round(time.Millisecond), len(old))
	if before == 0 {
		t.Errorf("no tick was emitted before the workers started: the test shows nothing")
	}
}
