package audit

import (
	"sort"
	"time"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Calendars. A schedule version that excludes calendars under on_excluded skip has as its slots its own slots
// that no calendar excludes (under a move policy, its runs: see classifyRun). The audit reads the retained history of the calendars topic
// (each record a version of one calendar, its LogAppendTime the change time) and tells, for each slot of the
// definition, which calendars the leader applied to it:
//
//   - a leader emits a slot Lead before it is due, with the calendars it holds then, and a change applies from
//     the first slot not yet emitted; a calendar that stops excluding a day lets its slots run from the change
//     on, not the ones already past. So the calendars in force from Due - Lead (less ChangeSlack) to the slot
//     itself (plus ChangeSlack) decide a slot;
//   - a slot that every calendar version in force over that span excludes is excluded: not expected, counted in
//     Counts.Excluded, never missing (and unexpected if a tick of it was emitted anyway);
//   - one that some exclude and others do not (a change within the span), or that a calendar the schedule
//     names did not exist for (the leader waits for it, then catches up by the policy), is optional;
//   - the others are expected, as without calendars.
//
// Compaction keeps only the newest record of each calendar: an older version may be gone, and before its oldest
// retained record a calendar is taken as that record defines it (Log.CalendarsPartial, and a note in each
// schedule's report that excludes one). An audit of a past range may therefore use a calendar as it is now
// where it was different then.

// CalendarVersion is one retained record of a calendar in the calendars topic.
type CalendarVersion struct {
	// At is the record's timestamp (LogAppendTime): when the change took effect.
	At time.Time
	// Calendar is the definition; nil for a deletion (tombstone).
	Calendar *calendar.Calendar
}

// AddCalendarVersion appends a version of calendar name, keeping time order (tests fabricate them too).
func (l *Log) AddCalendarVersion(name string, at time.Time, c *calendar.Calendar) {
	if l.Calendars == nil {
		l.Calendars = map[string][]CalendarVersion{}
	}
	vs := append(l.Calendars[name], CalendarVersion{At: at.UTC(), Calendar: c})
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].At.Before(vs[j].At) })
	l.Calendars[name] = vs
}

// excludes reports whether a retained version of a definition excludes calendars.
func (l *Log) excludes() bool {
	for _, d := range l.Definitions {
		if d.excludes() {
			return true
		}
	}
	return false
}

// epochs are the spans over which the calendars of one schedule version stay the same.
type epochs struct {
	moves  bool                 // the policy moves excluded slots: runs, not slots, are expected (classifyRun)
	starts []time.Time          // ascending; starts[0] is the zero time
	ex     []calendar.Exclusion // the calendars in force from each start
	known  []bool               // false: a calendar the schedule names did not exist then
	scheds []*schedule.Schedule // the schedule under them (the definition's when not known)
}

// epochsOf returns the epochs of sched under the calendars' history, or nil when sched excludes none.
func epochsOf(sched *schedule.Schedule, cals map[string][]CalendarVersion) *epochs {
	names := sched.Exclude()
	if len(names) == 0 {
		return nil
	}
	starts := []time.Time{{}}
	for _, n := range names {
		for _, v := range cals[n] {
			starts = append(starts, v.At)
		}
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	e := &epochs{}
	switch calendar.OnExcluded(sched.OnExcluded()) {
	case calendar.NextBusinessDay, calendar.PreviousBusinessDay:
		e.moves = sched.Spec().Every == 0 // an interval schedule's excluded slots are skipped whatever the policy
	}
	for i, at := range starts {
		if i > 0 && at.Equal(starts[i-1]) {
			continue
		}
		ex, missing := calendar.Of(sched, func(name string) (*calendar.Calendar, bool) {
			c := inForce(cals[name], at)
			return c, c != nil
		})
		e.starts = append(e.starts, at)
		e.ex = append(e.ex, ex)
		e.known = append(e.known, len(missing) == 0)
		if len(missing) == 0 {
			e.scheds = append(e.scheds, ex.Apply(sched))
		} else {
			e.scheds = append(e.scheds, sched)
		}
	}
	return e
}

// inForce returns the version of a calendar in force at at: the newest at or before it, or, before the first
// retained one, that one (see the comment above); nil when there is none or it is a deletion.
func inForce(vs []CalendarVersion, at time.Time) *calendar.Calendar {
	if len(vs) == 0 {
		return nil
	}
	i := sort.Search(len(vs), func(i int) bool { return vs[i].At.After(at) })
	if i == 0 {
		return vs[0].Calendar
	}
	return vs[i-1].Calendar
}

// at returns the index of the epoch in force at t.
func (e *epochs) at(t time.Time) int {
	return sort.Search(len(e.starts), func(i int) bool { return e.starts[i].After(t) }) - 1
}

// classify says what the calendars did to slot (due at due): excluded by every version in force over its span,
// or optional (they disagree, or one was missing); and the schedule under the calendars in force when it fell
// due, for the catch-up checks.
func (e *epochs) classify(slot, due time.Time, o Options) (excluded, optional bool, sched *schedule.Schedule) {
	i, j := e.at(due.Add(-o.Lead-o.ChangeSlack)), e.at(slot.Add(o.ChangeSlack))
	var ex, in bool
	for k := max(i, 0); k <= j; k++ {
		switch {
		case !e.known[k]:
			ex, in = true, true
		case e.ex[k].Excludes(slot):
			ex = true
		default:
			in = true
		}
	}
	return ex && !in, ex && in, e.scheds[max(e.at(due), 0)]
}

// runs returns the schedule whose Next steps through the run instants from after on, under a move policy: the
// epoch's in force at after. A run is then checked against the epochs over its span by classifyRun.
func (e *epochs) runs(after time.Time) *schedule.Schedule {
	return e.scheds[max(e.at(after), 0)]
}

// classifyRun says, under a move policy, whose run the instant at is (its slot: the tick's identity), and
// whether it is optional: the calendars in force from its Due - Lead (less ChangeSlack) to the instant (plus
// ChangeSlack) disagree about it, or one the schedule names did not exist then. sched is the schedule under the
// calendars in force when it fell due.
//
// What is not derived under a move: the slots merged into another run or skipped for want of a business day
// are not counted as excluded (Counts.Excluded); they are never expected, so never missing either.
func (e *epochs) classifyRun(at, due time.Time, o Options) (slot time.Time, optional bool, sched *schedule.Schedule) {
	i, j := e.at(due.Add(-o.Lead-o.ChangeSlack)), e.at(at.Add(o.ChangeSlack))
	k := max(e.at(due), 0)
	sched, slot = e.scheds[k], e.scheds[k].SlotOf(at)
	for m := max(i, 0); m <= j; m++ {
		s := e.scheds[m]
		if !e.known[m] || !s.Next(at.Add(-time.Nanosecond)).Equal(at) || !s.SlotOf(at).Equal(slot) {
			optional = true
		}
	}
	return slot, optional, sched
}
