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

// The queue yields every entry in order through any mix of pushes and pops, from a start appended in bulk or
// empty, and when the two heaps change places.
func TestDueQueueOrder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var q dueQueue
		var model []int64 // the entries in the queue
		if round%2 == 0 {
			for range r.IntN(300) {
				at := r.Int64N(100)
				q.cur = append(q.cur, due{at: at})
				model = append(model, at)
			}
			q.cur.init()
		}
		last := int64(-1 << 62)
		for range 2000 {
			if len(model) == 0 || r.IntN(3) == 0 {
				// Mostly later than what was popped, as a re-armed schedule is; sometimes earlier, as a changed one.
				at := last + r.Int64N(50)
				if r.IntN(10) == 0 {
					at = last - r.Int64N(50)
				}
				q.push(due{at: at})
				model = append(model, at)
				continue
			}
			slices.Sort(model)
			d, ok := q.peek()
			if !ok || d.at != model[0] {
				t.Fatalf("round %d: peek = %d, %v; want %d", round, d.at, ok, model[0])
			}
			if p := q.pop(); p.at != model[0] {
				t.Fatalf("round %d: pop = %d, want %d", round, p.at, model[0])
			}
			last, model = model[0], model[1:]
		}
		for len(model) > 0 {
			slices.Sort(model)
			if p := q.pop(); p.at != model[0] {
				t.Fatalf("round %d, draining: pop = %d, want %d", round, p.at, model[0])
			}
			model = model[1:]
		}
		if _, ok := q.peek(); ok {
			t.Fatalf("round %d: peek on an empty queue reports an entry", round)
		}
	}
}
