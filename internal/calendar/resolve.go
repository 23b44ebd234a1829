package calendar

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Action is what a schedule's calendars do to one slot.
type Action uint8

const (
	// Runs: no calendar excludes the slot; it runs at its own instant.
	Runs Action = iota
	// Skipped: a calendar excludes the slot and the policy is Skip (or a move found no business day).
	Skipped
	// Moved: a calendar excludes the slot and the policy moved it to another day's same wall-clock time.
	Moved
)

// String returns "runs", "skipped" or "moved".
func (a Action) String() string {
	switch a {
	case Runs:
		return "runs"
	case Skipped:
		return "skipped"
	case Moved:
		return "moved"
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Outcome is what happens to one slot, taken alone. Whether a moved slot then runs or merges into another run
// depends on the schedule's other slots: see Runs and doc.go.
type Outcome struct {
	// Slot is the slot resolved, as given: the identity of its tick (name@slot) wherever it runs.
	Slot time.Time
	// Action says whether the slot runs in place, is skipped or moved.
	Action Action
	// At is when the slot runs: Slot for Runs, the moved instant (in UTC) for Moved, the zero time for Skipped.
	At time.Time
	// Calendar names the first of the schedule's calendars that excludes Slot; empty for Runs.
	Calendar string
}

// ErrNoBusinessDay is returned (wrapped) when a move finds no day that the calendars leave free within
// MaxMoveDays: several calendars that together exclude every day. The Outcome is then Skipped.
var ErrNoBusinessDay = errors.New("no business day within reach")

// Exclusion is what a schedule's calendars do to its slots: the compiled calendars it names, its policy, and
// its zone. The zero value excludes nothing. It is safe for concurrent use while nobody changes its fields.
type Exclusion struct {
	// Calendars are the calendars whose excluded days the schedule does not run on.
	Calendars []*Calendar
	// Policy is what happens to a slot on an excluded day; "" is DefaultOnExcluded (Skip).
	Policy OnExcluded
	// Location is the schedule's zone, in which a move keeps the slot's wall-clock time; nil means UTC.
	Location *time.Location
}

// Resolve says what happens to slot (a whole-second instant) taken alone.
//
// A calendar excludes the slot when the slot's date in the calendar's zone is one it excludes. An excluded
// slot is skipped, or, under NextBusinessDay and PreviousBusinessDay, moved: to the same wall-clock time of day
// in Location on the nearest later (earlier) date whose instant at that time no calendar excludes, with the
// cron DST rules of the schedule package for a wall-clock time that the target day skips or repeats (doc.go).
//
// The error is non-nil (ErrNoBusinessDay) only when a move searched MaxMoveDays days in vain; the Outcome is
// then Skipped, so a caller that only reports the error does the safe thing. An unknown Policy is a skip.
func (e Exclusion) Resolve(slot time.Time) (Outcome, error) {
	u := slot.Unix()
	i := e.excludedBy(u)
	if i < 0 {
		return Outcome{Slot: slot, Action: Runs, At: slot}, nil
	}
	out := Outcome{Slot: slot, Action: Skipped, Calendar: e.Calendars[i].name}
	var step int64
	switch e.Policy {
	case NextBusinessDay:
		step = 1
	case PreviousBusinessDay:
		step = -1
	default:
		return out, nil
	}
	loc := e.location()
	lt := time.Unix(u, 0).In(loc)
	h, m, s := lt.Clock()
	day, tod := dayNumber(lt.Date()), int64(h*3600+m*60+s)
	for k := int64(1); k <= MaxMoveDays; k++ {
		at := wallInstant(loc, (day+step*k)*secondsPerDay+tod)
		if e.excludedBy(at) < 0 {
			out.Action, out.At = Moved, time.Unix(at, 0).UTC()
			return out, nil
		}
	}
	return out, fmt.Errorf("moving slot %s (%s) to the %s: the calendars leave no day free within %d days: %w",
		slot.UTC().Format(time.RFC3339), lt.Format("2006-01-02 15:04:05 MST"), e.Policy, MaxMoveDays, ErrNoBusinessDay)
}

// Excludes reports whether any of the calendars excludes the instant t (its date in each calendar's zone).
func (e Exclusion) Excludes(t time.Time) bool { return e.excludedBy(t.Unix()) >= 0 }

// excludedBy returns the index of the first calendar that excludes the instant u (Unix seconds), or -1.
func (e Exclusion) excludedBy(u int64) int {
	var (
		prev *Calendar
		day  int64
	)
	for i, c := range e.Calendars {
		// Calendars of one zone share the day number (a zone lookup is most of the cost).
		if prev == nil || c.loc != prev.loc && c.tz != prev.tz {
			day = c.day(u)
		}
		if c.excludesDay(day) {
			return i
		}
		prev = c
	}
	return -1
}

func (e Exclusion) location() *time.Location {
	if e.Location == nil {
		return time.UTC
	}
	return e.Location
}

// wallInstant returns the instant (Unix seconds) of the wall-clock time c in loc, where c counts seconds from
// 1970-01-01T00:00:00 of a zone-less calendar ("civil seconds"). It follows the schedule package's cron rules:
// a wall-clock time that clocks jumped over maps to the jump, the transition instant; one that occurs twice, to
// its first occurrence. time.Date leaves both cases unspecified, so the zone's periods of constant offset are
// walked instead (time.Time.ZoneBounds), in order, over every instant c can name.
func wallInstant(loc *time.Location, c int64) int64 {
	// UTC offsets lie within [-12h, +14h] (local mean times of the 19th century within ±16h), so an occurrence
	// of c is within 16 hours of it. The walk starts in the period holding c-17h; the first period whose own
	// span holds c - its offset holds the first occurrence, and a period whose wall clock starts after c
	// follows a jump over c.
	probe := c - 17*3600
	for range 64 {
		off, start, end := periodAt(loc, probe)
		t := c - off
		if t < start {
			return start
		}
		if t < end {
			return t
		}
		probe = end
	}
	// Not reached with any zone of the database: 64 periods within 34 hours.
	_, off := time.Unix(c, 0).In(loc).Zone()
	return c - int64(off)
}

// periodAt returns the UTC offset of loc at the instant u and the span [start, end) over which loc keeps it.
func periodAt(loc *time.Location, u int64) (off, start, end int64) {
	t := time.Unix(u, 0).In(loc)
	_, o := t.Zone()
	s, e := t.ZoneBounds()
	start, end = math.MinInt64, math.MaxInt64
	if !s.IsZero() {
		start = min(s.Unix(), u)
	}
	if !e.IsZero() {
		end = e.Unix()
		if end <= u {
			// Go's ZoneBounds can return an end at or before u on the last UTC day of a leap year served by the
			// zone's TZ footer rule (see periodAt in the schedule package). That bound is a year boundary, not a
			// transition, and no zone changes its offset within the hour after one; step over it.
			end = u + 3600
		}
	}
	return int64(o), start, end
}
