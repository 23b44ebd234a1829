package calendar

import (
	"slices"
	"time"
)

// Run is one run of a schedule under its calendars: at most one per slot, and one tick each.
type Run struct {
	// Slot is the run's identity: its tick is name@Slot. For a moved slot it is the original slot, not At.
	Slot time.Time
	// At is when it runs, in UTC: Slot, or the moved instant.
	At time.Time
	// Moved says whether the run is a moved slot (At differs from Slot).
	Moved bool
	// Merged are the other slots that merged into this run (moved slots that landed on its day or instant),
	// in order; they have no run of their own.
	Merged []time.Time
}

// UpcomingHorizon bounds how far Upcoming looks past its start.
const UpcomingHorizon = 10 * 366 * 24 * time.Hour

// Runs returns the runs of a schedule whose instant At is in (after, until], in order of At, under the merge
// rule of doc.go. next is the schedule's slot sequence: the first slot strictly after its argument, the zero
// time for none (schedule.Schedule.Next).
//
// A moved slot's run can come from a slot outside (after, until], and whether it merges depends on the other
// slots of its target day, so under a move policy Runs also resolves the slots of the whole first and last days
// of the range in Location, and of the days before the range (after it, under PreviousBusinessDay) up to the
// first that the calendars leave wholly free, at most MaxMoveDays. Its cost is that of resolving those slots;
// under Skip, a slot that a calendar excludes lets Runs jump to the end of that calendar's day.
//
// The error is that of the first slot whose move fails (ErrNoBusinessDay); no runs are returned with it.
func (e Exclusion) Runs(next func(after time.Time) time.Time, after, until time.Time) ([]Run, error) {
	if !until.After(after) {
		return nil, nil
	}
	switch e.Policy {
	case NextBusinessDay, PreviousBusinessDay:
	default:
		return e.skipRuns(next, after, until), nil
	}
	loc := e.location()
	first, last := localDay(loc, after.Unix()), localDay(loc, until.Unix())
	// The slots to resolve: [lo, hi). A day that the calendars leave wholly free stops a move across it, so the
	// slots before the first such day (after it, for previous) cannot land in the range.
	from, to := first, last
	if e.Policy == NextBusinessDay {
		for k := 0; k < MaxMoveDays && !e.freeDay(loc, from-1); k++ {
			from--
		}
	} else {
		for k := 0; k < MaxMoveDays && !e.freeDay(loc, to+1); k++ {
			to++
		}
	}
	lo, hi := dayStart(loc, from), dayStart(loc, to+1)

	var (
		runs  []Run
		own   = map[int64][]int{} // day -> indexes in runs of the slots that run in place on it
		moves []Outcome           // moved slots landing on a day of the range, in slot order
	)
	for s := next(time.Unix(lo-1, 0)); !s.IsZero() && s.Unix() < hi; s = next(s) {
		o, err := e.Resolve(s)
		if err != nil {
			return nil, err
		}
		switch o.Action {
		case Runs:
			if d := localDay(loc, s.Unix()); first <= d && d <= last {
				own[d] = append(own[d], len(runs))
				runs = append(runs, Run{Slot: s, At: s})
			}
		case Moved:
			if d := localDay(loc, o.At.Unix()); first <= d && d <= last {
				moves = append(moves, o)
			}
		}
	}
	// The merge rule (doc.go): a moved slot whose target day has a slot that runs in place merges into that
	// day's run at the same instant, or else its first run; otherwise the moved slots landing on one instant run
	// once, as the earliest of them.
	byInstant := map[int64]int{} // At -> index in runs of the moved run there
	for _, m := range moves {
		at := m.At.Unix()
		if idx := own[localDay(loc, at)]; len(idx) > 0 {
			into := idx[0]
			for _, i := range idx {
				if runs[i].At.Unix() == at {
					into = i
				}
			}
			runs[into].Merged = append(runs[into].Merged, m.Slot)
			continue
		}
		if i, ok := byInstant[at]; ok {
			runs[i].Merged = append(runs[i].Merged, m.Slot)
			continue
		}
		byInstant[at] = len(runs)
		runs = append(runs, Run{Slot: m.Slot, At: m.At, Moved: true})
	}
	runs = slices.DeleteFunc(runs, func(r Run) bool { return !r.At.After(after) || r.At.After(until) })
	slices.SortFunc(runs, func(a, b Run) int { return a.At.Compare(b.At) })
	for i := range runs {
		// Own runs collect merged slots in the order of the moves, which is slot order, but a run's own slot is
		// not among them; sorting keeps the promise whatever the policy.
		slices.SortFunc(runs[i].Merged, time.Time.Compare)
	}
	return runs, nil
}

// skipRuns is Runs under Skip: the slots in (after, until] that no calendar excludes.
func (e Exclusion) skipRuns(next func(after time.Time) time.Time, after, until time.Time) []Run {
	var runs []Run
	for s := next(after); !s.IsZero() && !s.After(until); {
		o, i, _ := e.resolve(s)
		if o.Action == Runs {
			runs = append(runs, Run{Slot: s, At: s})
			s = next(s)
			continue
		}
		// Every slot until the end of the excluding calendar's date is excluded too.
		c := e.Calendars[i]
		end := dayStart(c.loc, c.day(s.Unix())+1)
		s = next(time.Unix(max(end, s.Unix()+1)-1, 0))
	}
	return runs
}

// Upcoming returns the next n runs after `after` (fewer if the schedule ends or none is within
// UpcomingHorizon), as Runs would list them: for "next runs" displays.
func (e Exclusion) Upcoming(next func(after time.Time) time.Time, after time.Time, n int) ([]Run, error) {
	if n <= 0 {
		return nil, nil
	}
	for span := 24 * time.Hour; ; span *= 4 {
		span = min(span, UpcomingHorizon)
		until := after.Add(span)
		runs, err := e.Runs(next, after, until)
		if err != nil || len(runs) >= n {
			return runs[:min(n, len(runs))], err
		}
		if span == UpcomingHorizon || next(until).IsZero() {
			return runs, nil
		}
	}
}

// resolve is Resolve, with the index of the calendar that excludes the slot (-1 for none).
func (e Exclusion) resolve(slot time.Time) (Outcome, int, error) {
	o, err := e.Resolve(slot)
	if o.Action == Runs {
		return o, -1, err
	}
	return o, e.excludedBy(slot.Unix()), err
}

// freeDay reports whether the calendars leave the whole day n of loc free: no calendar excludes a date that an
// instant of it has in the calendar's zone.
func (e Exclusion) freeDay(loc *time.Location, n int64) bool {
	start, end := dayStart(loc, n), dayStart(loc, n+1)-1
	for _, c := range e.Calendars {
		for d, last := c.day(start), c.day(end); d <= last; d++ {
			if c.excludesDay(d) {
				return false
			}
		}
	}
	return true
}

// dayStart returns the first instant (Unix seconds) of the day n in loc: its midnight, or the end of a jump over
// midnight.
func dayStart(loc *time.Location, n int64) int64 {
	return wallInstant(loc, n*secondsPerDay)
}
