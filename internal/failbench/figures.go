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

// Figures are the ledger's account of one run: every expected tick (slot x shard of every schedule) and its
// slot -> handler start.
type Figures struct {
	// Expected is the number of ticks the schedules define (their whole lifetime is the run window).
	Expected int `json:"expected"`
	// Ran is how many of them started a handler at least once.
	Ran int `json:"ran"`
	// Missing = Expected - Ran.
	Missing int `json:"missing"`
	// Doubled counts expected ticks emitted more than once or run more than once (EmittedTwice or RanTwice).
	Doubled int `json:"doubled"`
	// EmittedTwice counts ticks with more than one committed work record (an exactly-once emission violation).
	EmittedTwice int `json:"emitted_twice"`
	// RanTwice counts ticks whose handler started more than once: more than one valid started entry (a re-run
	// after an interruption or a retry) or more than one ok outcome.
	RanTwice int `json:"ran_twice"`
	// Unexpected counts ticks of the schedules that are not expected (a slot outside the schedules' lifetime).
	Unexpected int `json:"unexpected"`
	// P50, P99 and Max are of slot -> first handler start over the ticks that ran, in milliseconds: p50 and p99
	// interpolate linearly between order statistics.
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	// Late counts ticks that started more than LateBound after their slot.
	Late      int     `json:"late"`
	LateBound float64 `json:"late_bound_ms"`
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

// Measure computes the figures of the ticks expected (Expected) from what the namespace's topics hold.
func Measure(l *audit.Log, expected map[string]time.Time, names map[string]bool, lateBound time.Duration) Figures {
	f := Figures{Expected: len(expected), LateBound: ms(lateBound)}
	var delays []time.Duration
	for id, slot := range expected {
		t := l.Ticks[id]
		if t == nil {
			f.Missing++
			continue
		}
		start, runs := starts(t)
		emittedTwice := len(t.Emissions) > 1
		if emittedTwice {
			f.EmittedTwice++
		}
		if runs > 1 {
			f.RanTwice++
		}
		if emittedTwice || runs > 1 {
			f.Doubled++
		}
		if start.IsZero() {
			f.Missing++
			continue
		}
		f.Ran++
		d := start.Sub(slot)
		delays = append(delays, d)
		if d > lateBound {
			f.Late++
		}
	}
	for id, t := range l.Ticks {
		if _, ok := expected[id]; !ok && names[t.Schedule] && !t.Trigger {
			f.Unexpected++
		}
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	f.P50, f.P99 = ms(Quantile(delays, 0.50)), ms(Quantile(delays, 0.99))
	if len(delays) > 0 {
		f.Max = ms(delays[len(delays)-1])
	}
	return f
}

// starts returns the first handler start of t and how many times its handler started: the valid started
// entries (audit.Read keeps only those), or, for a tick without any (forward mode), its ok outcomes, each
// started at finished_at - duration_ms.
func starts(t *audit.Tick) (first time.Time, runs int) {
	oks := 0
	var okFirst time.Time
	for _, e := range t.Ledger {
		switch e.Kind {
		case ledger.KindStarted:
			runs++
			if first.IsZero() || e.At.Before(first) {
				first = e.At
			}
		case ledger.KindOutcome:
			if e.Status != ledger.StatusOK || e.FinishedAt == nil {
				continue
			}
			oks++
			s := e.FinishedAt.Add(-time.Duration(e.DurationMS * float64(time.Millisecond)))
			if okFirst.IsZero() || s.Before(okFirst) {
				okFirst = s
			}
		}
	}
	if runs == 0 {
		return okFirst, oks
	}
	return first, max(runs, oks)
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
