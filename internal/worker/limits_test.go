package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// produce writes ticks to work partition p.
func (b *testBundle) produce(t *testing.T, p int32, ticks ...tick.Tick) {
	t.Helper()
	var recs []*kgo.Record
	for _, tk := range ticks {
		v, err := tick.Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: b.names.Work, Partition: p, Key: []byte(tk.ID), Value: v})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := b.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing ticks: %v", err)
	}
}

// heldTicks returns ticks of schedule due at now+dues[i], their slots as far apart as their instants, with the
// overlap policy.
func heldTicks(schedule, overlap string, now time.Time, dues ...time.Duration) []tick.Tick {
	out := make([]tick.Tick, len(dues))
	for i, d := range dues {
		tk := tick.New(schedule, now.Add(-time.Hour+d), 0, 1)
		nb := now.Add(d)
		tk.NotBefore, tk.Overlap = &nb, overlap
		out[i] = tk
	}
	return out
}

// TestLaneDefaultOverlapCollapsesOverruns: with the default overlap policy, the ticks that fell due while the
// run before them was still going, past its period, are skipped but for the newest; with queue they all run;
// ticks that were late for another reason all run: those due before the first run began (as after a failover),
// and those that fall due while a backlog of runs shorter than the period drains.
//
// The ticks are written once the worker has run the catch-up ones (it is in its group), due from then on, 2 s
// apart: a first run that starts up to a second late still begins before its successor is due.
func TestLaneDefaultOverlapCollapsesOverruns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	catchup, _ := b.produceTicks(t, 1, "catchup", 3) // due a day ago, all at once
	var until sync.Map                               // tick ID -> when its run returns (default: at once)
	until.Store(catchup[0].ID, 300*time.Millisecond)
	rec := newRecorder()
	cfg := b.config("w1")
	cfg.Concurrency = 8
	b.start(t, cfg, rec.handler(func(ctx context.Context, tk tick.Tick, _ Attempt) error {
		d, _ := until.Load(tk.ID)
		var end time.Time
		switch d := d.(type) {
		case time.Duration:
			end = time.Now().Add(d)
		case time.Time:
			end = d
		}
		select {
		case <-time.After(time.Until(end)):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}), Deps{})
	ran := func(id string) bool {
		for _, c := range rec.snapshot() {
			if c.ID == id {
				return true
			}
		}
		return false
	}
	kafkatest.Eventually(t, 30*time.Second, "the catch-up ticks to run", func() bool { return ran(catchup[2].ID) })

	// The first run of each lasts until the third tick is due; the fourth is due later.
	now := time.Now().UTC()
	dues := []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second, 9 * time.Second}
	def := heldTicks("default", "", now, dues...)
	queue := heldTicks("queue", tick.OverlapQueue, now, dues...)
	until.Store(def[0].ID, now.Add(dues[2]+300*time.Millisecond))
	until.Store(queue[0].ID, now.Add(dues[2]+300*time.Millisecond))
	b.produce(t, 0, def...)
	b.produce(t, 1, queue...)
	kafkatest.Eventually(t, 30*time.Second, "the last ticks to run", func() bool { return ran(def[3].ID) && ran(queue[3].ID) })

	// Nine ticks due (2.7 s of 300 ms runs on a 1 s period), and two that fall due while they drain; the first
	// of those two is reached after the second is due.
	var spread []time.Duration
	for s := -8; s <= 2; s++ {
		spread = append(spread, time.Duration(s)*time.Second)
	}
	backlog := heldTicks("backlog", "", time.Now().UTC(), spread...)
	for _, tk := range backlog {
		until.Store(tk.ID, 300*time.Millisecond)
	}
	b.produce(t, 1, backlog...)
	kafkatest.Eventually(t, 30*time.Second, "the backlog to drain", func() bool { return ran(backlog[len(backlog)-1].ID) })

	runs := map[string]int{}
	for _, c := range rec.snapshot() {
		runs[c.ID]++
	}
	want := func(tk tick.Tick, n int) {
		t.Helper()
		if runs[tk.ID] != n {
			t.Errorf("%s ran %d times, want %d", tk.ID, runs[tk.ID], n)
		}
	}
	want(def[0], 1)
	want(def[1], 0) // due during the first run, and the third was due too when it could start
	want(def[2], 1) // the newest due one
	want(def[3], 1)
	for _, tk := range append(append(queue, catchup...), backlog...) {
		want(tk, 1)
	}
	if outs := b.outcomesOf(t, 0, def[1].ID, "w1"); len(outs) != 1 || outs[0].Status != StatusSkippedOverlap {
		t.Errorf("outcomes of %s: %+v, want one skipped_overlap", def[1].ID, outs)
	}
}

// TestLaneScheduleLimitsOverrideWorkers: a tick's timeout and max_attempts (its schedule's) win over the
// worker's, both ways; without them the worker's apply. The durations are seconds apart, so that each bound
// below tells one timeout from the other with seconds to spare on a loaded machine.
func TestLaneScheduleLimitsOverrideWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mk := func(name string, timeoutMS int64, attempts int) tick.Tick {
		tk := tick.New(name, base, 0, 1)
		tk.TimeoutMS, tk.MaxAttempts = timeoutMS, attempts
		return tk
	}
	short := mk("short", 200, 1)    // the schedule's 200 ms beats the worker's 3 s; one attempt, not three
	long := mk("long", 8000, 0)     // the schedule's 8 s beats the worker's 3 s: the 4 s job finishes
	plain := mk("plain", 0, 2)      // the worker's 3 s; two attempts
	hostile := mk("hostile", -1, 0) // out of range: the worker's settings
	b.produce(t, 0, short, long)
	b.produce(t, 1, plain, hostile)

	rec := newRecorder()
	cfg := b.config("w1")
	cfg.Timeout = 3 * time.Second
	cfg.Concurrency = 8
	b.start(t, cfg, rec.handler(func(ctx context.Context, tk tick.Tick, _ Attempt) error {
		d := time.Hour
		if tk.Schedule == "long" {
			d = 4 * time.Second
		}
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}), Deps{})
	kafkatest.Eventually(t, time.Minute, "every tick's outcome", func() bool {
		for i, tk := range []tick.Tick{short, long, plain, hostile} {
			if len(b.outcomesOf(t, int32(i/2), tk.ID, "w1")) == 0 {
				return false
			}
		}
		return true
	})
	calls := map[string][]call{}
	for _, c := range rec.snapshot() {
		calls[c.ID] = append(calls[c.ID], c)
	}
	for _, c := range []struct {
		tk       tick.Tick
		p        int32
		attempts int
		status   string
		took     time.Duration // each attempt, within [took/2, took+2s]
	}{
		{short, 0, 1, StatusDeadLettered, 200 * time.Millisecond},
		{long, 0, 1, StatusOK, 4 * time.Second},
		{plain, 1, 2, StatusDeadLettered, 3 * time.Second},
		{hostile, 1, 3, StatusDeadLettered, 3 * time.Second},
	} {
		outs := b.outcomesOf(t, c.p, c.tk.ID, "w1")
		if len(outs) != 1 || outs[0].Status != c.status || outs[0].Attempts != c.attempts {
			t.Errorf("%s: outcomes %+v, want one %s after %d attempts", c.tk.ID, outs, c.status, c.attempts)
		}
		if len(calls[c.tk.ID]) != c.attempts {
			t.Errorf("%s: %d calls, want %d", c.tk.ID, len(calls[c.tk.ID]), c.attempts)
		}
		for _, cl := range calls[c.tk.ID] {
			if d := cl.End.Sub(cl.Start); d < c.took/2 || d > c.took+2*time.Second {
				t.Errorf("%s: an attempt took %s, want about %s", c.tk.ID, d, c.took)
			}
		}
	}
}
