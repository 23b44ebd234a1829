package status

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/store"
)

// MaxTimeline bounds Options.Timeline: a timeline is a picture of the last hours, not an archive, and its minutes
// are in the report (360 a pool at most).
const MaxTimeline = 6 * time.Hour

// PoolTimeline is one pool's activity, minute by minute (Report.Timeline).
type PoolTimeline struct {
	Pool string `json:"pool"`
	// Minutes are every minute of the timeline, oldest first; the last one is the report's own, under way.
	Minutes []Minute `json:"minutes"`
}

// Minute is one minute of a pool's timeline.
type Minute struct {
	// At is the minute's start (UTC).
	At time.Time `json:"at"`
	// Runs is how many of the pool's ticks started their first attempt in the minute (triggers and backfills too).
	Runs int `json:"runs"`
	// StartDelayP99Seconds is the 99th percentile (nearest rank) of the start delays of the scheduled ticks among
	// them, as Run.StartDelaySeconds measures one; nil when none of them is a scheduled tick.
	StartDelayP99Seconds *float64 `json:"start_delay_p99_seconds,omitempty"`
	// Missed is how many slots of the pool's schedules in the minute were missed (Schedule.MissedSlots).
	Missed int `json:"missed"`
}

// poolMinutes gathers one pool's minutes while the log is read through.
type poolMinutes struct {
	runs, missed []int
	delays       [][]float64
}

// timeline returns each pool's minutes over the last o.Timeline (at most o.Window and MaxTimeline), from the log
// runFacts read and the missed slots it found: the pools of rep first, in their order, then any other a tick
// names. It reads nothing more.
func timeline(l *audit.Log, entries map[string]store.Entry, rep *Report, o Options) []PoolTimeline {
	span := min(o.Timeline, o.Window, MaxTimeline)
	first := o.Now.Add(-span).Truncate(time.Minute)
	n := int(o.Now.Sub(first)/time.Minute) + 1
	index := func(t time.Time) (int, bool) {
		if t.Before(first) || t.After(o.Now) {
			return 0, false
		}
		return int(t.Sub(first) / time.Minute), true
	}
	var order []string
	pools := map[string]*poolMinutes{}
	pool := func(name string) *poolMinutes {
		p, ok := pools[name]
		if !ok {
			p = &poolMinutes{runs: make([]int, n), missed: make([]int, n), delays: make([][]float64, n)}
			pools[name] = p
			order = append(order, name)
		}
		return p
	}
	for _, p := range rep.Pools {
		pool(p.Name)
	}
	for _, t := range l.Ticks {
		start, ok := firstStart(t)
		i, in := index(start)
		if !ok || !in || (o.Schedule != "" && t.Schedule != o.Schedule) {
			continue
		}
		p := pool(poolOfTick(t, entries))
		p.runs[i]++
		if e, ok := entries[t.Schedule]; ok && !t.Trigger && !t.Backfill {
			p.delays[i] = append(p.delays[i], max(start.Sub(t.Due(e.Schedule)), 0).Seconds())
		}
	}
	for _, s := range rep.Schedules {
		for _, m := range s.MissedSlots {
			if i, in := index(m); in {
				pool(s.Pool).missed[i]++
			}
		}
	}
	out := make([]PoolTimeline, 0, len(order))
	for _, name := range order {
		out = append(out, pools[name].timeline(name, first))
	}
	return out
}

// timeline is p's minutes from first on.
func (p *poolMinutes) timeline(name string, first time.Time) PoolTimeline {
	pt := PoolTimeline{Pool: name, Minutes: make([]Minute, len(p.runs))}
	for i := range p.runs {
		pt.Minutes[i] = Minute{At: first.Add(time.Duration(i) * time.Minute).UTC(), Runs: p.runs[i], Missed: p.missed[i],
			StartDelayP99Seconds: p99(p.delays[i])}
	}
	return pt
}

// firstStart is when t's first attempt started, as its started entries record it.
func firstStart(t *audit.Tick) (time.Time, bool) {
	var first time.Time
	for _, e := range t.Ledger {
		if e.Kind != ledger.KindStarted {
			continue
		}
		at := e.At
		if e.StartedAt != nil {
			at = *e.StartedAt
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first, !first.IsZero()
}

// poolOfTick is the pool whose work topic holds t, or for a tick whose work record was not read, its schedule's.
func poolOfTick(t *audit.Tick, entries map[string]store.Entry) string {
	if len(t.Emissions) == 0 {
		if e, ok := entries[t.Schedule]; ok {
			return cmp.Or(e.Schedule.Pool(), kafka.DefaultPool)
		}
	}
	return cmp.Or(t.Pool, kafka.DefaultPool)
}

// p99 is the 99th percentile of xs by nearest rank (nil for none); xs is sorted in place.
func p99(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	v := xs[int(math.Ceil(0.99*float64(len(xs))))-1]
	return &v
}
