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

// dueQueue is the planner's queue: two heaps, the entries it started with (or took over last) and the entries
// pushed since. peek and pop take the earlier of the two tops; when the first heap is empty the second takes its
// place, and the emptied one (its array kept) takes the pushes.
//
// One heap would do, but many schedules due at one instant make it pay for every pop: the last entry, moved to
// the root, is a schedule re-armed for its next slot, and it sinks through every level of the heap, mostly in
// cache misses. Here the entries of the
// slot stay in a heap of their own, whose last entry is tied with the root: a pop costs two comparisons. Schedules
// spread over their interval cost what one heap did: a pop from a heap of the same size, a push that stays at
// the bottom. The price is a second array, of up to 24 bytes a schedule.
type dueQueue struct {
	cur, next dueHeap
}

// push adds d.
func (q *dueQueue) push(d due) { q.next.push(d) }

// peek returns the earliest entry.
func (q *dueQueue) peek() (due, bool) {
	a, okA := q.cur.peek()
	b, okB := q.next.peek()
	if !okA || (okB && b.at < a.at) {
		return b, okB
	}
	return a, true
}

// pop removes and returns the earliest entry; the queue must not be empty.
func (q *dueQueue) pop() due {
	if len(q.cur) == 0 { // only in a queue that began empty (no bulk start): every entry is in next
		q.cur, q.next = q.next, q.cur
	}
	if len(q.next) > 0 && q.next[0].at < q.cur[0].at {
		return q.next.pop()
	}
	d := q.cur.pop()
	if len(q.cur) == 0 {
		q.cur, q.next = q.next, q.cur
	}
	return d
}
