package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
