package failbench

import (
	"math"
	"sort"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Figures are the ledger's account of one run: every expected tick (slot x shard of every schedule) of the
// measured window and its slot -> handler start.
type Figures struct {
	// Expected is the number of ticks the schedules define in the measured window.
	Expected int `json:"expected"`
	// Ran is how many of them started a handler at least once.
	Ran int `json:"ran"`
	// Missing = Expected - Ran.
	Missing int `json:"missing"`
	// Doubled counts expected ticks emitted more than once or run twice (EmittedTwice or RanTwice).
	Doubled int `json:"doubled"`
	// EmittedTwice counts ticks with more than one committed work record (an exactly-once emission violation).
	EmittedTwice int `json:"emitted_twice"`
	// RanTwice counts ticks run twice without their handler being told: more than one ok outcome, or a start
	// after the first that neither follows a retry entry nor is marked interrupted.
	RanTwice int `json:"ran_twice"`
	// ReRun counts ticks whose handler started more than once, each later start told why (a retry after a
	// failure, or a run again after an interruption such as a kill -9 mid-run, marked interrupted): the
	// at-least-once cases docs/semantics.md names.
	ReRun int `json:"re_run"`
	// Unexpected counts ticks of the schedules that they do not define (a slot outside their lifetime, or not
	// one of their slots), in or out of the window.
	Unexpected int `json:"unexpected"`
	// P50, P99 and Max are of slot -> first handler start over the ticks that ran, in milliseconds: p50 and p99
	// interpolate linearly between order statistics.
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	// Late counts ticks that started more than LateBound after their slot.
	Late      int     `json:"late"`
	LateBound float64 `json:"late_bound_ms"`
	// Early counts ticks that started before their slot (a forward handler that does not hold ticks emitted
	// ahead of their slot).
	Early int `json:"early"`
	// EmitP50, EmitP99 and EmitMax are of slot -> the first emission's emitted_at (set by the leader), in
	// milliseconds: the leader's share of the delay.
	EmitP50 float64 `json:"emit_p50_ms"`
	EmitP99 float64 `json:"emit_p99_ms"`
	EmitMax float64 `json:"emit_max_ms"`
	// Worst are the latest starts, up to five, latest first.
	Worst []TickDelay `json:"worst,omitempty"`
}

// TickDelay is one tick's slot -> emission and slot -> start, in milliseconds.
type TickDelay struct {
	ID    string  `json:"id"`
	Emit  float64 `json:"emit_ms"`
	Start float64 `json:"start_ms"`
}

// Expected returns the tick IDs the schedules define over their lifetime (each must have a Start and an End, so
// the set is finite), with the slot of each.
func Expected(scheds []*schedule.Schedule) map[string]time.Time {
	out := map[string]time.Time{}
	for _, s := range scheds {
		spec := s.Spec()
		if spec.Start == nil || spec.End == nil {
			continue
		}
		shards := max(spec.Shards, 1)
		for slot := s.Next(spec.Start.Add(-time.Nanosecond)); !slot.IsZero() && !slot.After(*spec.End); slot = s.Next(slot) {
			for sh := range shards {
				out[tick.ID(spec.Name, slot, sh, shards)] = slot
			}
		}
	}
	return out
}

// Window is the measured range of slots, both ends included.
type Window struct{ From, To time.Time }

func (w Window) holds(slot time.Time) bool { return !slot.Before(w.From) && !slot.After(w.To) }

// Measure computes the figures of the expected ticks (Expected) whose slots lie in w from what the namespace's
// topics hold. names are the schedules' names.
func Measure(l *audit.Log, expected map[string]time.Time, w Window, names map[string]bool, lateBound time.Duration) Figures {
	f := Figures{LateBound: ms(lateBound)}
	var delays, emits []time.Duration
	var all []TickDelay
	for id, slot := range expected {
		if !w.holds(slot) {
			continue // warm-up
		}
		f.Expected++
		t := l.Ticks[id]
		if t == nil {
			f.Missing++
			continue
		}
		start, runs, unmarked := starts(t, slot)
		var emit time.Duration
		if len(t.Emissions) > 0 {
			first := t.Emissions[0].EmittedAt
			for _, e := range t.Emissions[1:] {
				if e.EmittedAt.Before(first) {
					first = e.EmittedAt
				}
			}
			emit = first.Sub(slot)
			emits = append(emits, emit)
		}
		emittedTwice := len(t.Emissions) > 1
		if emittedTwice {
			f.EmittedTwice++
		}
		if runs > 1 && !unmarked {
			f.ReRun++
		}
		if unmarked {
			f.RanTwice++
		}
		if emittedTwice || unmarked {
			f.Doubled++
		}
		if start.IsZero() {
			f.Missing++
			continue
		}
		f.Ran++
		d := start.Sub(slot)
		delays = append(delays, d)
		all = append(all, TickDelay{ID: id, Emit: ms(emit), Start: ms(d)})
		if d > lateBound {
			f.Late++
		}
		if d < 0 {
			f.Early++
		}
	}
	for id, t := range l.Ticks {
		if _, ok := expected[id]; !ok && names[t.Schedule] && !t.Trigger {
			f.Unexpected++
		}
	}
	f.P50, f.P99, f.Max = quantiles(delays)
	f.EmitP50, f.EmitP99, f.EmitMax = quantiles(emits)
	sort.Slice(all, func(i, j int) bool { return all[i].Start > all[j].Start })
	f.Worst = all[:min(len(all), 5)]
	return f
}

// quantiles sorts ds and returns its p50, p99 and maximum in milliseconds.
func quantiles(ds []time.Duration) (p50, p99, maxMS float64) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ms(Quantile(ds, 0.50)), ms(Quantile(ds, 0.99)), ms(ds[len(ds)-1])
}

// starts returns, from t's ledger, when its handler first started (a start recorded before slot counts as the
// slot: a held tick's pre-start), or for a tick with no started entry (forward mode) its first ok outcome's
// finished_at - duration; how many times it started (started entries, or ok outcomes without them); and
// whether it ran twice without being told: a second ok outcome not marked interrupted, or a later start that
// neither follows a retry entry nor is marked interrupted (ticker audit's classes).
func starts(t *audit.Tick, slot time.Time) (first time.Time, runs int, unmarked bool) {
	oks, unmarkedOKs := 0, 0
	var okFirst time.Time
	retried := false // a retry entry since the latest start
	for _, e := range t.Ledger {
		switch e.Kind {
		case ledger.KindStarted:
			if runs > 0 && !retried && !e.Interrupted {
				unmarked = true
			}
			runs++
			retried = false
			at := e.At
			if at.Before(slot) {
				at = slot
			}
			if first.IsZero() || at.Before(first) {
				first = at
			}
		case ledger.KindReleased:
			retried = retried || e.Retry
		case ledger.KindOutcome:
			if e.Status != ledger.StatusOK || e.FinishedAt == nil {
				continue
			}
			oks++
			if oks > 1 && !e.Interrupted {
				unmarkedOKs++ // a second ok whose run was not told of the first (audit's "ran twice")
			}
			s := e.FinishedAt.Add(-time.Duration(e.DurationMS * float64(time.Millisecond)))
			if okFirst.IsZero() || s.Before(okFirst) {
				okFirst = s
			}
		}
	}
	unmarked = unmarked || unmarkedOKs > 0
	if runs == 0 {
		return okFirst, oks, unmarked
	}
	return first, max(runs, oks), unmarked
}

// Quantile returns the q-quantile of sorted (ascending), interpolating linearly between the order statistics
// around rank q*(n-1); 0 for an empty slice.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	r := q * float64(n-1)
	lo := int(math.Floor(r))
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := r - float64(lo)
	return sorted[lo] + time.Duration(frac*float64(sorted[lo+1]-sorted[lo]))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
