package dispatch

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The heap yields its entries in order, whether pushed one by one or appended and ordered by init.
func TestDueHeapOrder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, bulk := range []bool{false, true} {
		var h dueHeap
		var want []int64
		for range 1000 {
			at := r.Int64N(500) // duplicates too
			want = append(want, at)
			if bulk {
				h = append(h, due{at: at})
			} else {
				h.push(due{at: at})
			}
		}
		if bulk {
			h.init()
		}
		slices.Sort(want)
		var got []int64
		for len(h) > 0 {
			d, _ := h.peek()
			if p := h.pop(); p.at != d.at {
				t.Fatalf("pop = %d after peek = %d", p.at, d.at)
			}
			got = append(got, d.at)
		}
		if !slices.Equal(got, want) {
			t.Errorf("bulk %v: popped out of order", bulk)
		}
	}
}
