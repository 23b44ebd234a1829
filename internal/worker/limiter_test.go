package worker

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// fixedLimits is a LimitSource with fixed limits, loaded from the start.
type fixedLimits map[string]limit.Limit

func (f fixedLimits) Loaded() <-chan struct{} { return closedChan }
func (f fixedLimits) Get(name string) (limit.Limit, bool) {
	l, ok := f[name]
	return l, ok
}

// gauge tracks how many handlers run at once and the most there were.
type gauge struct {
	mu       sync.Mutex
	now, max int
}

func (g *gauge) enter() {
	g.mu.Lock()
	g.now++
	g.max = max(g.max, g.now)
	g.mu.Unlock()
}

func (g *gauge) leave() {
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
}

func (g *gauge) peak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.max
}

// limitedTicks returns one tick due at due for each of n schedules named prefix-i, counting against lim with
// priority prio.
func limitedTicks(prefix, lim string, prio, n int, due time.Time) []tick.Tick {
	out := make([]tick.Tick, n)
	for i := range out {
		tk := tick.New(fmt.Sprintf("%s-%d", prefix, i), due.Add(-time.Hour), 0, 1)
		nb := due
		tk.NotBefore, tk.Limit, tk.Priority, tk.Overlap = &nb, lim, prio, tick.OverlapQueue
		out[i] = tk
	}
	return out
}

// waitCalls waits until rec has n finished calls.
func waitCalls(t *testing.T, rec *recorder, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for rec.count() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs finished within %s", rec.count(), n, d)
		}
		time.Sleep(20 * time.Millisecond) // a poll of the recorder; the bound is d, generous
	}
}

// TestLimitBoundsRunsAcrossKeys: ticks of eight schedules in a limit of 2, all due at once, run two at a time
// and all run; a tick of a schedule without a limit on the same partition starts at once beside them.
func TestLimitBoundsRunsAcrossKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := tick.LimitPartition("api", testParts)
	due := time.Now().Add(500 * time.Millisecond)
	ticks := limitedTicks("lim", "api", 0, 8, due)
	free := tick.New("free", due.Add(-time.Hour), 0, 1)
	nb := due
	free.NotBefore = &nb
	b.produce(t, p, append(ticks, free)...)
	var g gauge
	rec := newRecorder()
	freeStart := make(chan time.Time, 1)
	cfg := b.config("w1")
	cfg.Concurrency = 16
	cfg.Limits = fixedLimits{"api": {Name: "api", Concurrency: 2}}
	b.start(t, cfg, rec.handler(func(ctx context.Context, tk tick.Tick, _ Attempt) error {
		if tk.Limit == "" {
			freeStart <- time.Now()
			return nil
		}
		g.enter()
		defer g.leave()
		return sleepCtx(ctx, 200*time.Millisecond)
	}), Deps{})
	waitCalls(t, rec, 9, 30*time.Second)
	if g.peak() != 2 {
		t.Errorf("at most %d limited runs at once; want 2 (the limit, reached)", g.peak())
	}
	if late := (<-freeStart).Sub(due); late > time.Second {
		t.Errorf("the tick without a limit started %s late; want it beside the held ones", late)
	}
}

// TestLimitStartsHigherPriorityFirst: with a limit of 1 and ticks of priority 1 and 5 held, the 5s start first.
func TestLimitStartsHigherPriorityFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := tick.LimitPartition("one", testParts)
	due := time.Now().Add(500 * time.Millisecond)
	low := limitedTicks("low", "one", 1, 3, due)
	high := limitedTicks("high", "one", 5, 3, due)
	b.produce(t, p, append(low, high...)...) // the low ones first in the log
	rec := newRecorder()
	cfg := b.config("w1")
	cfg.Concurrency = 8
	cfg.Limits = fixedLimits{"one": {Name: "one", Concurrency: 1}}
	b.start(t, cfg, rec.handler(func(ctx context.Context, tk tick.Tick, _ Attempt) error {
		return sleepCtx(ctx, 50*time.Millisecond)
	}), Deps{})
	waitCalls(t, rec, 6, 30*time.Second)
	calls := rec.snapshot()
	sort.Slice(calls, func(i, j int) bool { return calls[i].Start.Before(calls[j].Start) })
	for i, c := range calls {
		if want := i < 3; (c.ID[:4] == "high") != want {
			t.Fatalf("start %d was %s; want the three priority-5 ticks first: %s", i, c.ID, ids(calls))
		}
	}
}

// TestLimitRateSpacesStarts: a rate of 3 per 2s with 9 ticks due at once starts them in three waves, no window
// of 2s holding more than 3 starts, and runs them all.
func TestLimitRateSpacesStarts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := tick.LimitPartition("rate", testParts)
	due := time.Now().Add(500 * time.Millisecond)
	b.produce(t, p, limitedTicks("r", "rate", 0, 9, due)...)
	rec := newRecorder()
	cfg := b.config("w1")
	cfg.Concurrency = 16
	cfg.Limits = fixedLimits{"rate": {Name: "rate", Rate: 3, Window: schedule.Duration(2 * time.Second)}}
	b.start(t, cfg, rec.handler(nil), Deps{})
	waitCalls(t, rec, 9, 30*time.Second)
	calls := rec.snapshot()
	sort.Slice(calls, func(i, j int) bool { return calls[i].Start.Before(calls[j].Start) })
	for i := range calls {
		n := 0
		for _, c := range calls[i:] {
			if c.Start.Sub(calls[i].Start) < 2*time.Second {
				n++
			}
		}
		if n > 3 {
			t.Fatalf("%d starts in the 2s from %s; want at most 3: %v", n, calls[i].ID, calls)
		}
	}
	if span := calls[8].Start.Sub(calls[0].Start); span < 4*time.Second {
		t.Errorf("9 starts at 3 per 2s took %s; want at least 4s", span)
	}
}

// TestLimitPriorityAges: a tick's effective priority grows by one per PriorityAging its key waits, so a priority-1
// key that waited 4 agings outranks a fresh priority-5 one, and of equal priorities the longer wait goes first.
func TestLimitPriorityAges(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	w := &Worker{cfg: Config{PriorityAging: 10 * time.Second}}
	l := &lane{w: w, keys: keyTable{ids: map[string]int32{}}}
	mk := func(key string, prio int, waited time.Duration, seq int64) *item {
		it := &item{seq: seq, t: tick.Tick{Priority: prio}, kid: l.keys.id(key), startAt: now.Add(-waited)}
		return it
	}
	fresh5 := mk("a", 5, 0, 1)
	old1 := mk("b", 1, 41*time.Second, 2)
	young1 := mk("c", 1, 5*time.Second, 3)
	old3 := mk("d", 0, 25*time.Second, 4) // 3 + 2
	got := l.orderLocked(now, []*item{fresh5, young1, old3, old1})
	want := []*item{old1, old3, fresh5, young1} // all three at 5 by their waits, the longest wait first
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %d: seq %d; want seq %d", i, got[i].seq, want[i].seq)
		}
	}
}

// TestRateAdmitsSlidingWindow: a start is admitted while fewer than rate starts lie in the window (plus the
// margin) before it; otherwise the answer is when the oldest of the last rate starts leaves it.
func TestRateAdmitsSlidingWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	st := &limitState{}
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Second)
		if _, ok := st.rateAdmits(at, 10*time.Second, 3); !ok {
			t.Fatalf("start %d refused", i)
		}
		st.starts = append(st.starts, limitStart{at: at})
	}
	next, ok := st.rateAdmits(t0.Add(5*time.Second), 10*time.Second, 3)
	if ok || !next.Equal(t0.Add(10*time.Second+rateMargin)) {
		t.Fatalf("4th start in the window: admitted %v, next %v; want refused until %v", ok, next, t0.Add(10*time.Second+rateMargin))
	}
	if _, ok := st.rateAdmits(t0.Add(10*time.Second+rateMargin), 10*time.Second, 3); !ok {
		t.Fatal("a start once the first left the window was refused")
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if !sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// TestLimitFreeKeepsBacklog: a limit that is never reached changes nothing: a backlog of 40 schedules' ticks
// due in the past (more than one pick starts) all run, none skipped for its successor.
func TestLimitFreeKeepsBacklog(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := tick.LimitPartition("wide", testParts)
	past := time.Now().Add(-time.Minute)
	var ticks []tick.Tick
	for i := range 3 {
		for _, tk := range limitedTicks("bk", "wide", 0, 40, past.Add(time.Duration(i)*time.Second)) {
			tk.Overlap = "" // the default policy
			tk.ID = tick.ID(tk.Schedule, tk.Slot.Add(time.Duration(i)*time.Second), 0, 1)
			tk.Slot = tk.Slot.Add(time.Duration(i) * time.Second)
			ticks = append(ticks, tk)
		}
	}
	b.produce(t, p, ticks...)
	rec := newRecorder()
	cfg := b.config("w1")
	cfg.Concurrency = 4
	cfg.Limits = fixedLimits{"wide": {Name: "wide", Concurrency: 1000}}
	b.start(t, cfg, rec.handler(nil), Deps{})
	waitCalls(t, rec, 120, 30*time.Second)
}
