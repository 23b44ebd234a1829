package worker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestLaneBatchesLedgerUnderLoad: with many keys ready at once, starts and outcomes share batch records; every
// tick still has exactly one start and one outcome in the ledger, each once, and runs once.
func TestLaneBatchesLedgerUnderLoad(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const schedules, each = 40, 5
	var all []tick.Tick
	for s := range schedules {
		ticks, _ := b.produceTicks(t, 0, fmt.Sprintf("batch%02d", s), each)
		all = append(all, ticks...)
	}
	cfg := b.config("w1")
	cfg.Concurrency = 64
	rec := newRecorder()
	b.start(t, cfg, rec.handler(func(context.Context, tick.Tick, Attempt) error {
		time.Sleep(time.Millisecond)
		return nil
	}), Deps{})
	kafkatest.Eventually(t, 30*time.Second, "every tick to run", func() bool { return rec.count() >= len(all) })
	kafkatest.Eventually(t, 10*time.Second, "every outcome", func() bool {
		return len(b.entries(t, 0, ledger.KindOutcome, "")) >= len(all)
	})

	batched := 0
	starts, outcomes := map[string]int{}, map[string]int{}
	for _, r := range b.readLedger(t, 0) {
		if r.Err != nil {
			t.Fatalf("ledger offset %d does not decode: %v", r.Offset, r.Err)
		}
		if e, _ := ledger.Decode(r.Value); e.Kind == ledger.KindBatch {
			batched++
		}
		switch r.Entry.Kind {
		case ledger.KindStarted:
			starts[r.Entry.ID]++
		case ledger.KindOutcome:
			outcomes[r.Entry.ID]++
		}
	}
	if batched == 0 {
		t.Errorf("no batch record among the ledger entries of %d ticks run 64 at a time", len(all))
	}
	runs := map[string]int{}
	for _, c := range rec.snapshot() {
		runs[c.ID]++
	}
	for _, tk := range all {
		if starts[tk.ID] != 1 || outcomes[tk.ID] != 1 || runs[tk.ID] != 1 {
			t.Errorf("%s: %d starts, %d outcomes, %d runs; want 1 each", tk.ID, starts[tk.ID], outcomes[tk.ID], runs[tk.ID])
		}
	}
	t.Logf("%d ticks, %d entries in batch records", len(all), batched)
}

// TestLaneReadsBatchedLedgerOnTakeover: a new owner that reads a ledger whose entries are in batch records
// (outcomes of two ticks, the start of a third that never finished) skips the finished ticks and runs the
// interrupted one again, marked so, after the former owner's lease.
func TestLaneReadsBatchedLedgerOnTakeover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const oldLease = 300 * time.Millisecond
	b.formerOwner(t, 0, oldLease)
	ticks, offsets := b.produceTicks(t, 0, "bt", 4)
	outcome := func(i int) []byte {
		slot := ticks[i].Slot
		return ledger.Encode(ledger.Entry{Kind: ledger.KindOutcome, ID: ticks[i].ID, Schedule: ticks[i].Schedule, Slot: &slot,
			Partition: 0, Offset: offsets[i], Fence: 1, Worker: "old-worker", Attempts: 1, Status: ledger.StatusOK})
	}
	started := ledger.Encode(startedEntry(ledger.KindStarted, ticks[2], 0, offsets[2], 1))
	b.writeRaw(t, 0, ledger.BatchKey(0, "old-worker", "1"),
		ledger.AppendBatch(nil, 0, "old-worker", time.Now(), [][]byte{outcome(0), started, outcome(1)}))

	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the commit to pass all four ticks", func() bool { return b.committed(t, 0).At == offsets[3]+1 })
	calls := rec.snapshot()
	if got, want := ids(calls), ticks[2].ID+" "+ticks[3].ID; got != want && got != ticks[3].ID+" "+ticks[2].ID {
		t.Fatalf("handler ran %q, want %q (the unfinished ticks, once each)", got, want)
	}
	for _, c := range calls {
		if c.ID == ticks[2].ID && (!c.Attempt.Interrupted || c.Attempt.N != 2) {
			t.Errorf("the interrupted tick ran as %+v, want attempt 2, interrupted", c.Attempt)
		}
	}
}
