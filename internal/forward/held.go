// Package forward is forward mode (worker run --forward): instead of running a handler, a worker forwards each
// tick, on its instant, to a topic of the user's, exactly once for a read_committed reader.
//
// Engine is the transactional loop: one kgo.GroupTransactSession, each batch of due records, their outcome
// records, dead letters and consumed offsets in one transaction. Held is what it keeps between two polls: the
// ticks polled and not yet forwarded, per work partition and in offset order, until their instant, with the
// offset each transaction may commit so that a crash or a rebalance delivers the held ones again; and the
// cancellations read on the way.
//
// Forward mode runs inside a worker (internal/worker), which is its Host: it shares the worker's group plumbing
// (start offsets, static membership, readiness, counters) and its records (the decision before a run, outcome
// records, dead letters) with the worker's lanes, so both engines record a tick the same way.
package forward

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Held is the records a forwarder has polled and not forwarded yet. It is safe for concurrent use (the group
// callbacks assign and release partitions while the loop polls).
type Held struct {
	forged func(p int32) // a cancel record that is not the leader's was polled from partition p

	mu      sync.Mutex
	parts   map[int32]bool     // the work partitions assigned
	held    map[int32][]record // per partition, in offset order
	cancels cancel.Set         // the cancellations read
}

// record is a record held, with the instant it is due.
type record struct {
	rec *kgo.Record
	at  time.Time
}

// New returns an empty Held; forged, when not nil, is called for each cancel record polled that was not
// written in a transaction (cancel.Genuine): it is not remembered, and is dead-lettered when its turn comes.
func New(forged func(p int32)) *Held {
	return &Held{forged: forged, parts: map[int32]bool{}, held: map[int32][]record{}}
}

// Assign adds partitions; what was held for them before is dropped (the session delivers from the committed
// offset). It returns how many partitions are assigned.
func (h *Held) Assign(ps []int32) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps {
		h.parts[p] = true
		delete(h.held, p)
	}
	return len(h.parts)
}

// Release removes partitions and what was held for them. It returns how many partitions stay assigned.
func (h *Held) Release(ps []int32) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range ps {
		delete(h.parts, p)
		delete(h.held, p)
	}
	return len(h.parts)
}

// Hold adds polled records and remembers the cancellations among them. Records of partitions not assigned are
// ignored (released meanwhile). A record at or below one held already means the session rewound (a transaction
// that did not commit): the held records of its partition from it on are replaced.
func (h *Held) Hold(recs []*kgo.Record) {
	if len(recs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range recs {
		if !h.parts[r.Partition] {
			continue
		}
		if cancel.Is(r) && !cancel.Genuine(r) {
			if h.forged != nil {
				h.forged(r.Partition)
			}
		} else if cancel.Is(r) {
			if c, err := tick.DecodeCancel(r.Value); err == nil {
				h.cancels.Add(c)
			} // an unreadable one is dead-lettered when its turn comes
		}
		rs := h.held[r.Partition]
		if n := len(rs); n > 0 && r.Offset <= rs[n-1].rec.Offset {
			i := 0
			for i < n && rs[i].rec.Offset < r.Offset {
				i++
			}
			rs = rs[:i]
		}
		h.held[r.Partition] = append(rs, record{rec: r, at: DueAt(r)})
	}
}

// DueAt is when a record is due: its tick's instant (tick.NotBefore), or zero (at once) for a cancel, an
// unreadable record or a tick without one.
func DueAt(r *kgo.Record) time.Time {
	if cancel.Is(r) {
		return time.Time{}
	}
	t, err := tick.Decode(r.Value)
	if err != nil || t.NotBefore == nil {
		return time.Time{}
	}
	return *t.NotBefore
}

// NextWait is how long until the first held record is due (held: something is).
func (h *Held) NextWait(now time.Time) (wait time.Duration, held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := time.Time{}
	for _, rs := range h.held {
		if len(rs) == 0 {
			continue
		}
		held = true
		at := rs[0].at
		if !at.After(now) {
			return 0, true
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if !held {
		return 0, false
	}
	return first.Sub(now), true
}

// Take removes and returns the records due at now (per partition, the due prefix: a record waits for those
// before it, so the committed offset never passes one not forwarded) and, for each partition that keeps
// records held, the offset its transaction must commit: its first held record's.
func (h *Held) Take(now time.Time) ([]*kgo.Record, map[int32]int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*kgo.Record
	commitAt := map[int32]int64{}
	for p, rs := range h.held {
		n := 0
		for n < len(rs) && !rs[n].at.After(now) {
			out = append(out, rs[n].rec)
			n++
		}
		rest := rs[n:]
		if len(rest) == 0 {
			delete(h.held, p)
			continue
		}
		h.held[p] = rest
		commitAt[p] = rest[0].rec.Offset
	}
	return out, commitAt
}

// Restore puts records taken for a transaction that never began back in front of the held ones (of the
// partitions still assigned).
func (h *Held) Restore(recs []*kgo.Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	by := map[int32][]record{}
	for _, r := range recs {
		by[r.Partition] = append(by[r.Partition], record{rec: r, at: DueAt(r)})
	}
	for p, rs := range by {
		if h.parts[p] {
			h.held[p] = append(rs, h.held[p]...)
		}
	}
}

// Drop forgets every held record: after a transaction that did not commit, the session rewinds to the committed
// offsets and delivers them again (forwarding what is held now would forward it twice).
func (h *Held) Drop() {
	h.mu.Lock()
	clear(h.held)
	h.mu.Unlock()
}

// Cancelled returns a cancellation read so far that applies to t, if any.
func (h *Held) Cancelled(t tick.Tick) *tick.Cancel {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cancels.Applying(t)
}
