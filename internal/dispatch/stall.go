package dispatch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrStalled is the cause of a term that gave its leadership up because a transaction of it (or its fencing) was
// not confirmed within Config.StallTimeout.
var ErrStalled = errors.New("leader stalled")

// MinStallTimeout is the least stall timeout StallTimeout derives: a transaction that a coordinator's failover
// or a slow broker holds up for a few seconds is no reason to move leadership.
const MinStallTimeout = 5 * time.Second

// StallTimeout is the default Config.StallTimeout for a lead: half of it, and at least MinStallTimeout.
//
// Why half the lead. A slot's ticks are committed a lead before the slot is due, so a leader whose transaction
// hangs from that moment leaves the rest of the lead to the handover: the stalled term ends (its abort is given
// a second), the replica leaves the group, another member gets the partition at its next heartbeat and
// rebalance, fences (which aborts the stalled transaction) and reads the state it kept warm. That takes a few
// seconds with the default heartbeat (1s), so with the default lead (10s, a 5s timeout) the slots of the
// stall are still committed before they are due: a stall delays no tick. The timeout is also no shorter than
// needed: a leader that gave up too early costs a handover, and a transaction held up by a broker's restart may
// still commit.
//
// With a lead under 10s the minimum wins, and the ticks of a stall start late by up to the timeout plus the
// handover, but none is lost or doubled: the new leader's fencing decides the stalled transaction, and the
// state it then reads says which slots are emitted.
func StallTimeout(lead time.Duration) time.Duration { return max(lead/2, MinStallTimeout) }

// watchdog notices a term whose producer cannot confirm what it writes. The producer marks the span of each
// operation that must be confirmed (begin, end): a transaction, from BeginTransaction to the answer to its
// EndTxn, and the fencing (InitProducerID). A span open longer than the timeout is a stall. An idle term has no
// span open, so it is never taken for a stalled one, however long it waits for its next slot.
//
// Spans are measured on the monotonic clock (time.Since of a base instant), so a wall-clock step on the host
// neither makes nor hides a stall.
//
// A stall counts only while the leader's group membership reaches the cluster: unreachable (leader.Term's)
// says when its group client last failed to reach a broker, and the stall is measured from the later of the
// span's start and that instant. A leader whose transactions hang while its membership is healthy keeps every
// other replica from leading, and gives way after the timeout. While the broker is away the membership cannot
// reach it either, nobody else could lead, and giving way would only add a handover to the outage once the
// broker is back: the transaction is given the timeout from the broker's return to commit.
type watchdog struct {
	timeout time.Duration
	base    time.Time
	// since is when the open span began, in nanoseconds after base plus one; 0 while none is open.
	since atomic.Int64
	// unreachable returns when the membership last failed to reach the cluster (nil: never).
	unreachable func() time.Time
}

func newWatchdog(timeout time.Duration, unreachable func() time.Time) *watchdog {
	return &watchdog{timeout: timeout, base: time.Now(), unreachable: unreachable}
}

// begin opens a span; end closes it. A nil watchdog watches nothing.
func (w *watchdog) begin() {
	if w != nil {
		w.since.Store(int64(time.Since(w.base)) + 1)
	}
}

func (w *watchdog) end() {
	if w != nil {
		w.since.Store(0)
	}
}

// stalled reports how long the open span has lasted, and whether it is a stall: open for longer than the
// timeout since the later of its start and the membership's last failure to reach the cluster.
func (w *watchdog) stalled() (time.Duration, bool) {
	s := w.since.Load()
	if s == 0 {
		return 0, false
	}
	begin := w.base.Add(time.Duration(s - 1))
	d, counted := time.Since(begin), time.Since(begin)
	if w.unreachable != nil {
		if u := w.unreachable(); u.After(begin) {
			counted = time.Since(u)
		}
	}
	return d, counted > w.timeout
}

// run checks the open span every quarter of the timeout until ctx ends or a span stalls; then it calls stall
// with how long the span had lasted and returns. A stall is thus noticed at most a quarter of the timeout late.
func (w *watchdog) run(ctx context.Context, stall func(d time.Duration)) {
	tick := time.NewTicker(max(w.timeout/4, time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if d, ok := w.stalled(); ok {
				stall(d)
				return
			}
		}
	}
}

// stallError is the error of a term that stalled after d without a confirmed transaction.
func stallError(d, timeout time.Duration) error {
	return fmt.Errorf("no transaction committed for %s (stall timeout %s): giving up leadership: %w", d.Round(time.Millisecond), timeout, ErrStalled)
}
