package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/store"
)

// The leader state on the ticker topic is checked, not trusted: each case below writes something hostile to
// <ns>.ticker, kills the leader, and counts every slot of the schedule on the work topic.

func (f *fleet) writeTicker(t *testing.T, key string, value []byte) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: f.ns + ".ticker", Partition: 0, Key: []byte(key), Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A tombstone for a running schedule's state, written just before a failover: the new leader recovers the last
// slot from the work topic instead of emitting from the schedule's change time again.
func TestStateTombstoneDuringFailover(t *testing.T) {
	ticks, replicas, lead := beatFleet(t, 6)
	f := fleetOf(replicas[0])
	f.writeTicker(t, "beat", nil)
	lead.signal(syscall.SIGKILL)
	next := leaderOf(t, 20*time.Second, without(replicas, lead)...)
	settleAndCheck(t, ticks)
	if n := next.metric("tickgroup_leader_state_recovered_total"); n != 1 {
		t.Errorf("tickgroup_leader_state_recovered_total = %v on the new leader, want 1", n)
	}
}

// A state record with a last slot in the year 2999 would stop the schedule for good: it is refused, counted and
// recovered; the schedule keeps ticking, every slot once.
func TestStateFromTheFuture(t *testing.T) {
	ticks, replicas, lead := beatFleet(t, 6)
	f := fleetOf(replicas[0])
	far := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	f.writeTicker(t, "beat", leaderstate.EncodeState(leaderstate.State{LastSlot: far, ScheduleVersion: 0}))
	lead.signal(syscall.SIGKILL)
	next := leaderOf(t, 20*time.Second, without(replicas, lead)...)
	settleAndCheck(t, ticks)
	if n := next.metric(`tickgroup_leader_state_refused_total{reason="future"}`); n != 1 {
		t.Errorf("refused (future) = %v on the new leader, want 1", n)
	}
}

// A foreign transaction left open on the ticker topic pins its last stable offset below newer state. The new
// leader waits for it (the broker aborts it at its 8 s timeout) and then reads the whole state: no slot twice.
func TestStateForeignOpenTransaction(t *testing.T) {
	ticks, replicas, lead := beatFleet(t, 4)
	f := fleetOf(replicas[0])
	foreign, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(f.ns+".intruder"), kgo.TransactionTimeout(8*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := foreign.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := foreign.ProduceSync(ctx, &kgo.Record{Topic: f.ns + ".ticker", Partition: 0, Key: []byte("intruder"), Value: []byte("{}")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	time.Sleep(3 * time.Second) // the leader commits newer state above the open transaction
	lead.signal(syscall.SIGKILL)
	next := leaderOf(t, 40*time.Second, without(replicas, lead)...)
	kafkatest.Eventually(t, 30*time.Second, "the new leader to report the wait", func() bool {
		return next.logContains("open transaction of another producer")
	})
	settleAndCheck(t, ticks)
	t.Logf("foreign transaction opened %s before the kill; the new leader waited for it", time.Since(opened).Round(time.Second))
}

// fleetOf recovers the fleet of a process (the harness keeps one per test).
func fleetOf(p *proc) *fleet { return p.fleet }

// Garbage written as the newest record of a running schedule's key on <ns>.schedules: the replicas keep the last
// valid definition, the leader restates it and dead-letters the garbage exactly once (3 replicas), a replica
// started afterwards still knows the schedule, and every slot is emitted once throughout.
func TestScheduleRecordRepaired(t *testing.T) {
	ticks, replicas, _ := beatFleet(t, 4)
	f := fleetOf(replicas[0])
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(f.brokers, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: f.ns + ".schedules", Partition: 0, Key: []byte("beat"), Value: []byte("{garbage")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	opts, err := kafka.Config{Brokers: strings.Split(f.brokers, ","), Namespace: f.ns}.Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 20*time.Second, "the leader's repair", func() bool {
		entries, broken, err := store.Load(ctx, opts, f.ns+".schedules")
		_, ok := entries["beat"]
		return err == nil && ok && len(broken) == 0
	})
	late := f.ticker("late") // a replica that reads the repaired topic from scratch
	kafkatest.Eventually(t, 20*time.Second, "the new replica loaded", func() bool { return late.metric("tickgroup_schedules") == 1 })
	if out := f.cli("schedule", "get", "beat"); !strings.Contains(out, `"every": "1s"`) && !strings.Contains(out, `"every":"1s"`) {
		t.Errorf("schedule get beat after the repair = %s", out)
	}
	settleAndCheck(t, ticks)
	dead := 0
	for _, r := range readAll(t, strings.Split(f.brokers, ","), f.ns+".dlq") {
		if string(r.Key) == "beat" {
			dead++
		}
	}
	if dead != 1 {
		t.Errorf("the garbage record was dead-lettered %d times by a fleet of 3, want once", dead)
	}
}
