package worker

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestLaneRunsPartitionInOrder: the ticks of one partition run in offset order and one at a time; the two
// partitions' lanes run side by side.
func TestLaneRunsPartitionInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20
	var want [testParts][]string
	for p := range int32(testParts) {
		ticks, _ := b.produceTicks(t, p, "order"+string(rune('a'+p)), n)
		for _, tk := range ticks {
			want[p] = append(want[p], tk.ID)
		}
	}
	partOf := map[string]int32{}
	for p := range want {
		for _, id := range want[p] {
			partOf[id] = int32(p)
		}
	}

	var (
		mu       sync.Mutex
		got      [testParts][]string
		inflight [testParts]atomic.Int32
		overlaps atomic.Int32
	)
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(func(_ context.Context, tk tick.Tick, _ Attempt) error {
		p := partOf[tk.ID]
		if inflight[p].Add(1) != 1 {
			overlaps.Add(1)
		}
		defer inflight[p].Add(-1)
		mu.Lock()
		got[p] = append(got[p], tk.ID)
		mu.Unlock()
		// A little work, so that a second call of the same lane, if there were one, would overlap this one.
		time.Sleep(2 * time.Millisecond)
		return nil
	}), Deps{})

	eventually(t, 20*time.Second, "every tick to run", func() bool { return rec.count() >= testParts*n })
	if c := overlaps.Load(); c != 0 {
		t.Errorf("%d calls overlapped another call of the same partition", c)
	}
	mu.Lock()
	defer mu.Unlock()
	for p := range testParts {
		if len(got[p]) != n {
			t.Fatalf("partition %d: %d calls, want %d", p, len(got[p]), n)
		}
		for i := range got[p] {
			if got[p][i] != want[p][i] {
				t.Fatalf("partition %d: call %d ran %s, want %s (offset order)\ngot  %v\nwant %v", p, i, got[p][i], want[p][i], got[p], want[p])
			}
		}
	}
}

// finishedTicksCase writes five ticks to partition 0 and outcome entries for two of them, lets prepare set up
// the group's commit, and checks that a worker runs exactly the other three and commits past all five.
func finishedTicksCase(t *testing.T, prepare func(b *testBundle)) {
	t.Helper()
	b := setup(t)
	ticks, offsets := b.produceTicks(t, 0, "fin", 5)
	finished := map[string]bool{ticks[1].ID: true, ticks[3].ID: true}
	for i, tk := range ticks {
		if finished[tk.ID] {
			slot := tk.Slot
			b.writeLedger(t, 0, ledger.Entry{Kind: ledger.KindOutcome, ID: tk.ID, Schedule: tk.Schedule, Slot: &slot,
				Partition: 0, Offset: offsets[i], Fence: 1, Worker: "old-worker", Attempts: 1, Status: ledger.StatusOK, At: time.Now().UTC()})
		}
	}
	prepare(b)
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{})

	eventually(t, 10*time.Second, "the commit to pass all five ticks", func() bool { return b.committed(t, 0).At == offsets[4]+1 })
	calls := rec.snapshot()
	var want []string
	for _, tk := range ticks {
		if !finished[tk.ID] {
			want = append(want, tk.ID)
		}
	}
	if got := ids(calls); got != strings.Join(want, " ") {
		t.Fatalf("handler ran %q, want %q (the ticks without an outcome, once each)", got, strings.Join(want, " "))
	}
	// The skipped ticks got no second outcome.
	for id := range finished {
		if n := len(b.entries(t, 0, ledger.KindOutcome, id)); n != 1 {
			t.Errorf("tick %s has %d outcome entries, want the 1 written before the worker started", id, n)
		}
	}
}

// TestLaneSkipsFinishedTicksWithoutLedgerPosition: a group committed by an older build (an offset without the
// ledger metadata) makes takeover read the whole ledger partition; the ticks it has outcomes for are skipped.
func TestLaneSkipsFinishedTicksWithoutLedgerPosition(t *testing.T) {
	t.Parallel()
	finishedTicksCase(t, func(b *testBundle) { b.commit(t, 0, 0, "") })
}

// TestLaneSkipsFinishedTicksOfNewGroup: the same for a group with no commit at all, started at the earliest
// offset.
func TestLaneSkipsFinishedTicksOfNewGroup(t *testing.T) {
	t.Parallel()
	finishedTicksCase(t, func(*testBundle) {})
}
