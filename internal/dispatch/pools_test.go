package dispatch

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestTermRoutesPoolsAndSurvivesOneDown: each schedule's ticks go to its pool's work topic; a pool whose topics
// cannot be made ready (here: a replication factor the one-broker cluster cannot give) emits nothing, says so
// (tickgroup_pool_down, tickgroup_pool_waiting_schedules, an error log), and delays nothing else in the term.
// Once its topics exist, its schedule catches up (the default policy, all): every slot since the schedule was
// written is emitted, once.
func TestTermRoutesPoolsAndSurvivesOneDown(t *testing.T) {
	t.Parallel()
	b := setupTerm(t)
	if _, err := kafka.EnsurePoolTopics(t.Context(), kadm.NewClient(b.cl), b.names.Pool("ok"), kafka.TopicOptions{WorkPartitions: 3}); err != nil {
		t.Fatal(err)
	}
	reg := poolsDispatcher(t, b, 3*time.Second, 200*time.Millisecond)
	b.put(t, schedule.Spec{Name: "plain", Every: schedule.Duration(time.Second)})
	b.put(t, schedule.Spec{Name: "okjob", Every: schedule.Duration(time.Second), Pool: "ok"})
	put := time.Now()
	b.put(t, schedule.Spec{Name: "badjob", Every: schedule.Duration(time.Second), Pool: "bad"})
	b.lead(t)

	poolTicks := func(pool, want string) (out []tick.Tick) {
		for p := range int32(3) {
			if _, err := kafka.ReadStable(t.Context(), b.opts, b.names.Pool(pool).Work, p, func(r *kgo.Record) error {
				if tk, err := tick.Decode(r.Value); err == nil {
					if tk.Schedule != want {
						t.Errorf("pool %s holds a tick of %s", pool, tk.Schedule)
					}
					out = append(out, tk)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	okTicks := func() int { return len(poolTicks("ok", "okjob")) }
	kafkatest.Eventually(t, 20*time.Second, "3 ticks of plain and of okjob", func() bool {
		plain := 0
		for _, tk := range b.ticks(t) {
			if tk.Schedule != "plain" {
				t.Fatalf("the default pool holds a tick of %s", tk.Schedule)
			}
			plain++
		}
		return plain >= 3 && okTicks() >= 3
	})
	if got := gauge(t, reg, "tickgroup_pool_down"); got != 1 {
		t.Errorf("tickgroup_pool_down = %v, want 1 (pool bad)", got)
	}
	if !strings.Contains(b.logs.String(), "pool not ready") || !strings.Contains(b.logs.String(), "pool=bad") {
		t.Errorf("no error log naming pool bad:\n%s", b.logs.String())
	}
	if got := gauge(t, reg, "tickgroup_pool_waiting_schedules"); got != 1 {
		t.Errorf("tickgroup_pool_waiting_schedules = %v, want 1 (badjob)", got)
	}
	tds, err := kadm.NewClient(b.cl).ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if tds.Has(b.names.Pool("bad").Work) {
		t.Errorf("pool bad's work topic exists")
	}

	// Slots of badjob fall due while its pool is down (the lead emits the others ahead, for nothing to wait on)...
	// The sleep is the outage's length, not a wait for a condition: on a loaded machine it only lasts longer,
	// and more slots fall due, which the test counts all the same.
	time.Sleep(time.Until(put.Add(3 * time.Second)))
	// ...then the operator makes the pool (ticker init --pool bad): badjob catches up every slot since it was
	// written.
	if _, err := kafka.EnsurePoolTopics(t.Context(), kadm.NewClient(b.cl), b.names.Pool("bad"), kafka.TopicOptions{WorkPartitions: 3}); err != nil {
		t.Fatal(err)
	}
	ready := time.Now()
	var bad []tick.Tick
	kafkatest.Eventually(t, 20*time.Second, "badjob's slots up to the pool's return", func() bool {
		bad = poolTicks("bad", "badjob")
		return len(bad) > 0 && !bad[len(bad)-1].Slot.Before(ready.Truncate(time.Second))
	})
	slots := map[time.Time]int{}
	first := bad[0].Slot
	for _, tk := range bad {
		slots[tk.Slot]++
		if tk.Slot.Before(first) {
			first = tk.Slot
		}
	}
	if first.After(put.Add(2 * time.Second)) {
		t.Errorf("badjob's first slot emitted is %s, written at %s: the slots before were lost", first.Format("15:04:05.000"), put.Format("15:04:05.000"))
	}
	checked := 0
	for s := first; !s.After(ready.Truncate(time.Second)); s = s.Add(time.Second) {
		checked++
		if slots[s] != 1 {
			t.Errorf("badjob's slot %s emitted %d times, want once (caught up when its pool came back)", s.Format("15:04:05"), slots[s])
		}
	}
	if checked < 2 {
		t.Errorf("%d slots of badjob fell due while its pool was down, want at least 2 (the test proves nothing)", checked)
	}
	if got := gauge(t, reg, "tickgroup_pool_waiting_schedules"); got != 0 {
		t.Errorf("tickgroup_pool_waiting_schedules = %v once the pool is ready, want 0", got)
	}
	if got := gauge(t, reg, "tickgroup_pool_down"); got != 0 {
		t.Errorf("tickgroup_pool_down = %v once the pool is ready, want 0", got)
	}
}

// TestTermCatchesUpAPoolAloneOnceReady: when the only schedule of a term waits for its pool, nothing else wakes
// the term; the pool's return must arm the schedule at once, not at the next unrelated wake-up.
func TestTermCatchesUpAPoolAloneOnceReady(t *testing.T) {
	t.Parallel()
	b := setupTerm(t)
	reg := poolsDispatcher(t, b, time.Second, 100*time.Millisecond)
	b.put(t, schedule.Spec{Name: "alone", Every: schedule.Duration(time.Second), Pool: "late"})
	b.lead(t)
	kafkatest.Eventually(t, 10*time.Second, "the schedule to wait for its pool", func() bool {
		return gauge(t, reg, "tickgroup_pool_waiting_schedules") == 1 && gauge(t, reg, "tickgroup_pool_down") == 1
	})
	if _, err := kafka.EnsurePoolTopics(t.Context(), kadm.NewClient(b.cl), b.names.Pool("late"), kafka.TopicOptions{WorkPartitions: 3}); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 10*time.Second, "a tick of the schedule in its pool", func() bool {
		n := 0
		for p := range int32(3) {
			if _, err := kafka.ReadStable(t.Context(), b.opts, b.names.Pool("late").Work, p, func(r *kgo.Record) error {
				if _, err := tick.Decode(r.Value); err == nil {
					n++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return n > 0
	})
	if got := gauge(t, reg, "tickgroup_pool_waiting_schedules") + gauge(t, reg, "tickgroup_pool_down"); got != 0 {
		t.Errorf("pool gauges sum to %v once the pool is ready, want 0", got)
	}
}

// TestTermWaitingScheduleMovedToAReadyPool: a schedule that waits for its pool and is then moved to a pool that
// is ready runs there from the first slot not emitted, and no longer counts as waiting.
func TestTermWaitingScheduleMovedToAReadyPool(t *testing.T) {
	t.Parallel()
	b := setupTerm(t)
	reg := poolsDispatcher(t, b, time.Second, time.Hour)
	b.put(t, schedule.Spec{Name: "mover", Every: schedule.Duration(time.Second), Pool: "gone"})
	b.lead(t)
	kafkatest.Eventually(t, 10*time.Second, "the schedule to wait for its pool", func() bool {
		return gauge(t, reg, "tickgroup_pool_waiting_schedules") == 1
	})
	b.put(t, schedule.Spec{Name: "mover", Every: schedule.Duration(time.Second)}) // to the default pool
	kafkatest.Eventually(t, 10*time.Second, "a tick of the moved schedule in the default pool", func() bool {
		return len(b.ticks(t)) > 0
	})
	if got := gauge(t, reg, "tickgroup_pool_waiting_schedules"); got != 0 {
		t.Errorf("tickgroup_pool_waiting_schedules = %v after the move, want 0", got)
	}
}

// poolsDispatcher sets b's dispatcher to one whose pool topics ask for a replication factor the one-broker
// cluster cannot give (so a pool whose topics do not exist stays down), trying again every retry, with its
// metrics in the registry returned.
func poolsDispatcher(t *testing.T, b *termBundle, lead, retry time.Duration) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	d, err := New(Config{Names: b.names, Lead: lead, PoolTopics: kafka.TopicOptions{ReplicationFactor: 3}, PoolRetry: retry},
		b.opts, b.view, slog.New(slog.NewTextHandler(b.logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	b.d = d
	return reg
}
