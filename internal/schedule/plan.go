package schedule

import (
	"slices"
	"time"
)

// SkipGrace is how late a slot may be emitted under catch-up "skip": a leader that wakes a little late (GC pause,
// slow transaction, failover within a heartbeat) still emits the slot it woke for.
const SkipGrace = 2 * time.Second

// cronScanLimit bounds how many cron slots Plan steps through one by one before it jumps ahead.
const cronScanLimit = 100_000

// Plan is what the leader does for one schedule at one instant.
type Plan struct {
	Emit   []time.Time // slots to emit now, ascending
	Missed int64       // slots passed over by the catch-up policy
	Next   time.Time   // first slot whose Due is after now (zero if none); the leader sleeps until Due(Next)
}

// Plan decides which slots after base to emit at now.
//
// base is the instant after which slots count: the caller passes the later of the last emitted slot and the time
// the schedule was last changed, so a new or edited schedule does not catch up on slots from before it existed.
// The candidates are the slots after base, in order, up to the first one not yet due (Due(slot) > now). Emission
// follows slot order, so when cron jitter makes a later slot due before an earlier one, it waits for it.
//
// With k candidates the policies give: "all" (the default) the latest min(k, CatchupMax), Missed the rest; "latest" the last,
// Missed k-1; "skip" the last if it is at most SkipGrace late, Missed the rest. A paused schedule plans nothing
// and has no Next: the slots it sleeps through are not missed, they were never wanted.
//
// Plan is cheap after any outage. Interval schedules are pure arithmetic. Cron schedules step through at most
// cronScanLimit slots; past that, the latest candidates are found from a window before now, and the slots in
// between are counted by the slot density seen around them, so Missed is an estimate then (exact for evenly
// spread expressions such as "*/5 * * * *"; for uneven ones such as "* * 1 * *" it can be off by a large factor).
func (s *Schedule) Plan(base, now time.Time) Plan {
	_, p := s.appendPlan(nil, base, now)
	return p
}

// MaxAhead caps the slots PlanAhead adds past now in one plan; the rest follow in the next plans.
const MaxAhead = 1000

// PlanAhead is Plan at now, followed by the slots due after now and at or before horizon (at most MaxAhead of
// them): the leader emits those ahead of their slot. The catch-up policy applies only to the slots due at or
// before now, which are late; the ones ahead are all emitted, in order. Next is the first slot not planned.
func (s *Schedule) PlanAhead(base, now, horizon time.Time) Plan {
	_, p := s.AppendPlanAhead(nil, base, now, horizon)
	return p
}

// AppendPlanAhead is PlanAhead with the slots to emit appended to dst: it returns dst extended, and the plan,
// whose Emit is the extension (nil when there is none; its capacity ends at its length). A leader plans a
// million schedules in a slot into one reused slice rather than a slice each.
func (s *Schedule) AppendPlanAhead(dst []time.Time, base, now, horizon time.Time) ([]time.Time, Plan) {
	start := len(dst)
	dst, p := s.appendPlan(dst, base, now)
	for n := 0; n < MaxAhead && !p.Next.IsZero() && !s.Due(p.Next).After(horizon); n++ {
		dst = append(dst, p.Next)
		p.Next = s.Next(p.Next)
	}
	p.Emit = emitted(dst, start)
	return dst, p
}

// appendPlan is Plan with the slots to emit appended to dst (see AppendPlanAhead).
func (s *Schedule) appendPlan(dst []time.Time, base, now time.Time) ([]time.Time, Plan) {
	if s.paused {
		return dst, Plan{}
	}
	first := s.Next(base)
	if first.IsZero() || s.Due(first).After(now) {
		return dst, Plan{Next: first}
	}
	policy := s.Catchup()
	need := 1
	if policy == CatchupAll {
		need = s.catchupMax()
	}
	// The candidates: the latest min(k, need) of k, ascending, at dst[start:].
	start := len(dst)
	var k int64
	if s.every > 0 && !s.Skipped() {
		// A skipping interval schedule's candidates are no arithmetic progression: they are stepped through as
		// a cron schedule's are.
		dst, k = s.appendCandidatesEvery(dst, first, now, need)
	} else {
		var tail []time.Time
		tail, k = s.candidatesCron(first, now, need)
		dst = append(dst, tail...)
	}
	last := dst[len(dst)-1]
	p := Plan{Next: s.Next(last)}
	switch policy {
	case CatchupAll:
		p.Missed = k - int64(len(dst)-start)
	case CatchupSkip:
		dst = dst[:start]
		if now.Sub(s.Due(last)) <= SkipGrace {
			dst, p.Missed = append(dst, last), k-1
		} else {
			p.Missed = k
		}
	default: // CatchupLatest
		dst, p.Missed = append(dst[:start], last), k-1
	}
	p.Emit = emitted(dst, start)
	return dst, p
}

// emitted is dst[start:] with its capacity cut at its length, or nil when it is empty.
func emitted(dst []time.Time, start int) []time.Time {
	if len(dst) == start {
		return nil
	}
	return dst[start:len(dst):len(dst)]
}

// Catchup returns the schedule's catch-up policy: the Spec's, or DefaultCatchup when it has none.
func (s *Schedule) Catchup() string { return catchupPolicy(catchups[s.catchup]) }

// CatchupMax returns how many missed slots catch-up all emits at most: the Spec's, or DefaultCatchupMax.
func (s *Schedule) CatchupMax() int { return s.catchupMax() }

func (s *Schedule) catchupMax() int {
	if s.catchupCap == 0 {
		return DefaultCatchupMax
	}
	return int(s.catchupCap)
}

// appendCandidatesEvery counts the candidates from first (which is due) and appends the latest min(k, need) of
// them to dst. Jitter < Every makes Due increasing, so the candidates are exactly the slots up to the last due one.
func (s *Schedule) appendCandidatesEvery(dst []time.Time, first, now time.Time, need int) ([]time.Time, int64) {
	e, f := s.every, first.Unix()
	last := f + floorDiv(now.Unix()-f, e)*e // the last slot <= now; slots are whole seconds, Unix() floors
	if end := s.end(); end != nil {
		last = min(last, f+floorDiv(end.Unix()-f, e)*e)
	}
	if s.Due(time.Unix(last, 0)).After(now) {
		// Due(last-e) < last <= now, and last > f because first is due.
		last -= e
	}
	k := (last-f)/e + 1
	n := int(min(k, int64(need)))
	for i := range n {
		dst = append(dst, time.Unix(last-int64(n-1-i)*e, 0).UTC())
	}
	return dst, k
}

// candidatesCron steps through the candidates from first (which is due) and returns the latest min(k, need) of
// them and k. Past cronScanLimit it jumps, and k is estimated (see Plan).
func (s *Schedule) candidatesCron(first, now time.Time, need int) ([]time.Time, int64) {
	// Every slot at or before q is due (jitter < Jitter), so only slots after q need Due checked for the cut-off.
	q := now.Add(-time.Duration(s.jitter))
	ring := make([]time.Time, need) // the latest need candidates; candidate i is at i % need
	var count int64
	t, prev := first, time.Time{}
	for !t.IsZero() && !s.Due(t).After(now) {
		if count >= cronScanLimit && t.Before(q) {
			return s.jumpCron(first, prev, count, ordered(ring, count), q, now, need)
		}
		ring[count%int64(need)] = t
		count++
		prev, t = t, s.Next(t)
	}
	return ordered(ring, count), count
}

// ordered returns the kept candidates of a ring that has seen count of them, oldest first.
func ordered(ring []time.Time, count int64) []time.Time {
	if count <= int64(len(ring)) {
		return ring[:count]
	}
	i := count % int64(len(ring)) // the oldest kept candidate
	return slices.Concat(ring[i:], ring[:i])
}

// jumpCron finishes candidatesCron after a long outage: counted slots run from first to scanned (the latest of
// them are kept), and more slots lie before q. It finds the latest need slots at or before q in a window (x, q],
// the due slots after q one by one, and estimates the count of slots in (scanned, x].
func (s *Schedule) jumpCron(first, scanned time.Time, counted int64, kept []time.Time, q, now time.Time, need int) ([]time.Time, int64) {
	spacing := max(1, (scanned.Unix()-first.Unix())/counted)
	window, x, exact := s.lastSlots(scanned.Unix(), q.Unix(), need, spacing)
	k := counted + int64(len(window))
	if exact {
		// The window reached the scanned slots: nothing is estimated, and it may hold fewer than need.
		window = slices.Concat(kept, window)
	} else {
		// Slots in (scanned, x], at the density of the two stretches counted exactly around them.
		gap := x - scanned.Unix()
		density := float64(k) / float64(scanned.Unix()-first.Unix()+q.Unix()-x+1)
		k += min(gap, max(1, int64(density*float64(gap))))
	}
	for t := s.Next(q); !t.IsZero() && !s.Due(t).After(now); t = s.Next(t) {
		window = append(window, t)
		k++
	}
	return window[max(0, len(window)-need):], k
}

// lastSlots returns the slots in (x, q] for a window start x > floor holding at least n and at most 2n slots,
// or, if the window had to reach floor, all slots in (floor, q] and exact = true. Times are Unix seconds.
//
// The window grows from a guess of n*spacing by doubling and, if it overshoots, shrinks by bisection. A window of
// between n and 2n slots always exists: slots are whole seconds, so one more second adds at most one slot.
func (s *Schedule) lastSlots(floor, q int64, n int, spacing int64) (slots []time.Time, x int64, exact bool) {
	w := spacing * int64(n+1)
	small, big := int64(0), int64(-1) // widths known to hold < n and > 2n slots; -1: none yet
	for {
		x, exact = q-w, false
		if x <= floor {
			x, exact = floor, true
		}
		var over bool
		slots, over = s.collect(x, q, 2*n)
		switch {
		case over:
			big = w
		case len(slots) >= n || exact:
			return slots, x, exact
		default:
			small = w
		}
		if big < 0 {
			w = min(w*2, q-floor)
		} else {
			w = small + (big-small)/2
		}
	}
}

// collect returns the slots in (x, q] (Unix seconds), or over = true as soon as there are more than limit.
func (s *Schedule) collect(x, q int64, limit int) ([]time.Time, bool) {
	var out []time.Time
	for t := s.Next(time.Unix(x, 0)); !t.IsZero() && t.Unix() <= q; t = s.Next(t) {
		if len(out) == limit {
			return nil, true
		}
		out = append(out, t)
	}
	return out, false
}
