package dispatch

// due is one schedule's next wake-up. Entries are never removed from the middle of the heap: a schedule that
// changes gets a new generation, and entries of older generations are dropped when they surface.
//
// An entry is 24 bytes (a heap holds one per schedule): the instant as Unix nanoseconds, and the item by pointer.
type due struct {
	at  int64 // Unix nanoseconds
	it  *item
	gen uint32
}

// dueHeap is a binary min-heap of due by at. It is written out rather than built on container/heap, whose
// Push and Pop box every entry in an interface: an allocation per push, a million of them at a term's start.
type dueHeap []due

func (h *dueHeap) push(d due) {
	*h = append(*h, d)
	h.up(len(*h) - 1)
}

func (h *dueHeap) pop() due {
	old := *h
	n := len(old) - 1
	old[0], old[n] = old[n], old[0]
	d := old[n]
	*h = old[:n]
	h.down(0)
	return d
}

func (h dueHeap) peek() (due, bool) {
	if len(h) == 0 {
		return due{}, false
	}
	return h[0], true
}

// init orders entries appended without push, in O(n).
func (h dueHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h dueHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if h[parent].at <= h[i].at {
			return
		}
		h[parent], h[i] = h[i], h[parent]
		i = parent
	}
}

func (h dueHeap) down(i int) {
	n := len(h)
	for {
		least := i
		if l := 2*i + 1; l < n && h[l].at < h[least].at {
			least = l
		}
		if r := 2*i + 2; r < n && h[r].at < h[least].at {
			least = r
		}
		if least == i {
			return
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
}
