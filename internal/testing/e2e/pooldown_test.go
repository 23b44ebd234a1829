package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// A pool whose topics the leader cannot make loses none of its slots: its schedule waits while the pool is
// down, then catches up under its catch-up policy (all), each slot once, and the schedules of other pools go
// on meanwhile. The pool is made impossible on a real broker by a topic whose name collides with its work
// topic (Kafka refuses a name that differs from an existing one only in '.' and '_'), then made possible again
// by deleting that topic.
func TestE2EPoolDownWaitsThenCatchesUp(t *testing.T) {
	countOnly(t)
	f := newFleet(t)
	f.cli("init")
	f.cli("schedule", "put", "steady", "--every", "1s", "--catchup", "all")
	f.cli("schedule", "put", "late", "--every", "1s", "--pool", "late", "--catchup", "all") // makes the pool's topics

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// When the schedule was written: its record's time (the command may take seconds on a busy machine).
	opts, err := kafka.Config{Brokers: strings.Split(f.brokers, ","), Namespace: f.ns}.Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	entries, _, err := store.Load(ctx, opts, f.ns+".schedules")
	if err != nil {
		t.Fatal(err)
	}
	put := entries["late"].UpdatedAt
	adm := kafkatest.Admin(t)
	names := kafka.Config{Namespace: f.ns}.Names()
	pool := names.Pool("late")
	if _, err := adm.DeleteTopics(ctx, pool.Work, pool.Results, pool.DLQ); err != nil {
		t.Fatal(err)
	}
	collide := strings.ReplaceAll(pool.Work, ".", "_")
	waitFor(t, 60*time.Second, "the pool's topics deleted and a colliding topic made", func() (bool, string) {
		resp, err := adm.CreateTopic(ctx, 1, -1, nil, collide) // refused while the deleted work topic lingers
		if err == nil {
			err = resp.Err
		}
		return err == nil, fmt.Sprint(err)
	})

	steadyTicks := f.collect()
	a := f.ticker("a", "--pool-retry", "1s", "--lead", "1s")
	a.waitLog(t, "pool not ready", 60*time.Second)
	downAt := time.Now()
	// Five seconds of slots fall due while the pool is down, as the steady schedule's ticks show.
	waitFor(t, 60*time.Second, "the steady schedule's slots 5s past the pool's outage", func() (bool, string) {
		var last time.Time
		for _, s := range steadyTicks.of("steady") {
			if s.tick.Slot.After(last) {
				last = s.tick.Slot
			}
		}
		return last.After(downAt.Add(5*time.Second)) && time.Now().After(downAt.Add(5*time.Second)), last.Format(time.TimeOnly)
	})
	if _, err := adm.DeleteTopics(ctx, collide); err != nil {
		t.Fatal(err)
	}
	a.waitLog(t, "pool ready", 60*time.Second)
	readyAt := time.Now()
	t.Logf("pool down for %s", readyAt.Sub(downAt).Round(time.Millisecond))

	lateTicks := func() []seen {
		var out []seen
		for _, r := range readAll(t, strings.Split(f.brokers, ","), pool.Work) {
			if tk, err := tick.Decode(r.Value); err == nil && tk.Schedule == "late" {
				out = append(out, seen{tick: tk})
			}
		}
		return out
	}
	waitFor(t, 60*time.Second, "the late pool's schedule emitted past the pool's return", func() (bool, string) {
		var last time.Time
		for _, s := range lateTicks() {
			if s.tick.Slot.After(last) {
				last = s.tick.Slot
			}
		}
		return last.After(readyAt.Add(3 * time.Second)), last.Format(time.TimeOnly)
	})
	a.signal(syscall.SIGTERM)
	if err := a.wait(t, 30*time.Second); err != nil {
		t.Fatalf("ticker a after SIGTERM: %v", err)
	}

	late := lateTicks()
	if len(late) == 0 {
		t.Fatal("no tick of the late pool's schedule")
	}
	checkSequence(t, late, time.Second) // every slot from the first to the last, each once
	first := late[0].tick.Slot
	for _, s := range late {
		if s.tick.Slot.Before(first) {
			first = s.tick.Slot
		}
	}
	// The schedule's first slot is the first after it was written: none was lost to the pool's outage.
	if first.After(put.Add(2 * time.Second)) {
		t.Errorf("first slot of the late pool's schedule %s, written at %s: the slots in between were lost", first.Format(time.TimeOnly), put.Format(time.TimeOnly))
	}
	// The slots that fell due during the outage were emitted after it, as catch-up.
	caughtUp := 0
	for _, s := range late {
		if s.tick.Slot.After(downAt) && s.tick.Slot.Before(readyAt.Add(-time.Second)) && s.tick.EmittedAt.After(s.tick.Slot) {
			caughtUp++
		}
	}
	if caughtUp < 3 {
		t.Errorf("%d slots of the late pool's schedule emitted after they fell due during the outage, want the 3 or more of its %s", caughtUp, readyAt.Sub(downAt).Round(time.Second))
	}
	t.Logf("late pool: %d slots caught up after the outage", caughtUp)
	checkSequence(t, steadyTicks.of("steady"), time.Second)
}
