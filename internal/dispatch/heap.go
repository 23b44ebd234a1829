package dispatch

import "container/heap"

// due is one schedule's next wake-up. Entries are never removed from the middle of the heap: a schedule that
// changes gets a new generation, and entries of older generations are dropped when they surface.
//
// An entry is 24 bytes (a heap holds one per schedule): the instant as Unix nanoseconds, and the item by pointer.
type due struct {
	at  int64 // Unix nanoseconds
	it  *item
	gen uint32
}

type dueHeap []due

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (h *dueHeap) push(d due) { heap.Push(h, d) }
func (h *dueHeap) pop() due   { return heap.Pop(h).(due) }
func (h dueHeap) peek() (due, bool) {
	if len(h) == 0 {
		return due{}, false
	}
	return h[0], true
}
