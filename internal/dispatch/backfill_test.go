package dispatch

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// backfillTicks are the backfill ticks on the work topic, by ID (how many records each).
func (b *termBundle) backfillTicks(t *testing.T) (map[string]int, []tick.Tick) {
	t.Helper()
	n := map[string]int{}
	var order []tick.Tick
	for _, tk := range b.ticks(t) {
		if tk.Backfill != "" {
			n[tk.ID]++
			order = append(order, tk)
		}
	}
	return n, order
}

// progress is the newest backfill progress record of id (nil: none).
func (b *termBundle) progress(t *testing.T, id string) *backfill.Progress {
	t.Helper()
	var p *backfill.Progress
	if _, err := kafka.ReadStable(t.Context(), b.opts, b.names.BackfillProgress, 0, func(r *kgo.Record) error {
		if string(r.Key) == id && r.Attrs.IsTransactional() {
			x, err := backfill.DecodeProgress(r.Value, backfill.MaxSlots)
			if err != nil {
				return err
			}
			p = &x
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return p
}

// finish writes an ok outcome for each tick, where a worker would: the results partition of its work partition.
func (b *termBundle) finish(t *testing.T, ticks ...tick.Tick) {
	t.Helper()
	for _, tk := range ticks {
		slot := tk.Slot
		v := ledger.MarshalOutcome(ledger.Outcome{ID: tk.ID, Schedule: tk.Schedule, Slot: &slot, Status: "ok", Attempts: 1, FinishedAt: time.Now()})
		r := &kgo.Record{Topic: b.names.Results, Partition: tk.Partition(2), Key: []byte(tk.ID), Value: v}
		if err := b.cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTermWorksThroughABackfill: a leader emits a backfill's slots in order, at most max-running (2) without an
// outcome, with its progress in the same transactions; a second term taking over midway goes on from the
// committed progress, emitting no slot twice and skipping none, and ends the backfill done. The schedule is
// paused: a backfill runs anyway. An invalid request is dead-lettered once and does not stop the others.
func TestTermWorksThroughABackfill(t *testing.T) {
	t.Parallel()
	b := setupTerm(t)
	b.put(t, schedule.Spec{Name: "s", Every: schedule.Duration(time.Second), Shards: 2, Paused: true})
	now := time.Now().UTC().Truncate(time.Second)
	req := backfill.Request{ID: "b1", Schedule: "s", From: now.Add(-time.Hour), To: now, Reprocess: backfill.ReprocessAll, MaxRunning: 2, CreatedAt: now}
	for i := range 5 {
		req.Slots = append(req.Slots, now.Add(-time.Hour+time.Duration(i)*time.Minute))
	}
	v, err := backfill.EncodeRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.cl.ProduceSync(t.Context(),
		&kgo.Record{Topic: b.names.Backfills, Key: []byte("bad"), Value: []byte(`{"v":1,"id":"bad","slots":[]}`)},
		&kgo.Record{Topic: b.names.Backfills, Key: []byte("b1"), Value: v}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	// Term 1: two slots (4 ticks: 2 shards), and no more until they have outcomes.
	ctx, stop := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- b.d.Lead(ctx, leader.Term{Number: 1}) }()
	var first []tick.Tick
	kafkatest.Eventually(t, 20*time.Second, "the first two slots", func() bool {
		_, first = b.backfillTicks(t)
		return len(first) >= 4
	})
	if p := b.progress(t, "b1"); p == nil || p.Next != 2 || len(p.Running) != 2 || p.Shards != 2 {
		t.Fatalf("progress after the first emission: %+v", p)
	}
	if _, now := b.backfillTicks(t); len(now) != 4 {
		t.Fatalf("%d backfill ticks before any outcome, want 4 (max-running 2 slots x 2 shards)", len(now))
	}
	var slot0 []tick.Tick
	for _, tk := range first {
		if tk.Slot.Equal(req.Slots[0]) {
			slot0 = append(slot0, tk)
		}
	}
	b.finish(t, slot0...) // its two shards
	kafkatest.Eventually(t, 20*time.Second, "slot 2 after slot 0's outcomes", func() bool {
		n, _ := b.backfillTicks(t)
		return len(n) >= 6
	})
	stop()
	if err := <-errs; err != nil {
		t.Fatalf("term 1: %v", err)
	}

	// Term 2: slots 1 and 2 are running (from the committed progress); their outcomes release the rest.
	ctx, stop = context.WithCancel(context.Background())
	defer stop()
	go func() { errs <- b.d.Lead(ctx, leader.Term{Number: 2}) }()
	kafkatest.Eventually(t, 20*time.Second, "the backfill done", func() bool {
		_, all := b.backfillTicks(t)
		b.finish(t, all...) // again and again: an outcome read twice counts once
		p := b.progress(t, "b1")
		return p != nil && p.Ended == backfill.EndDone
	})
	n, all := b.backfillTicks(t)
	if len(n) != 10 || len(all) != 10 {
		t.Fatalf("%d backfill ticks in %d records, want 10 (5 slots x 2 shards) each once", len(n), len(all))
	}
	for _, slot := range req.Slots {
		for shard := range 2 {
			if id := tick.BackfillID("s", slot, "b1", shard, 2); n[id] != 1 {
				t.Errorf("tick %s: %d records, want 1", id, n[id])
			}
		}
	}
	for _, tk := range all {
		if !tk.Trigger || tk.NotBefore != nil || tk.Deadline != nil {
			t.Errorf("tick %s: want a trigger with no instant and no deadline", tk.ID)
		}
	}
	if !strings.Contains(b.logs.String(), "backfill record refused") {
		t.Errorf("the invalid request was not logged:\n%s", b.logs.String())
	}
	dead := 0
	if _, err := kafka.ReadStable(t.Context(), b.opts, b.names.DLQ, 0, func(r *kgo.Record) error {
		if string(r.Key) == "bad" {
			dead++
		}
		return nil
	}); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if dead != 1 {
		t.Errorf("the invalid request was dead-lettered %d times, want once", dead)
	}
}
