package console

import (
	"cmp"
	"slices"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// A schedule's grid is its slots of the last day, one cell each, oldest first, coloured and marked by what
// happened to them. A schedule whose definition makes more than maxSlotCells slots a day (sub-minute) gets one
// cell per minute instead, showing the worst state of its slots. The grid is computed with the detail read,
// from every run of the day, and kept with it: the cells and, for each, the IDs and outcomes of its runs (of a
// minute, its worst run's only), so that a cell's link can show a slot's runs older than the 50 the page keeps.

// Bounds of a grid: at most maxSlotCells cells of slots (beyond it, one cell per minute: at most 25 rows of 60,
// aligned on the hour) and at most maxCellRuns runs kept for a cell.
const (
	maxSlotCells = 1440
	maxCellRuns  = 4
)

// cellState is what happened to a slot, by how much it needs attention: a minute's cell takes its worst slot's.
type cellState uint8

const (
	stateNone     cellState = iota // no slot, or not yet
	stateOK                        // ran, ok
	stateBackfill                  // ran, ok, by a backfill or a trigger
	stateRunning                   // started or waiting, within the grace
	stateRerun                     // ok after a marked re-run (its handler was told of an interruption)
	stateLate                      // ok, its first start more than lateStart after its instant
	stateFailed                    // an outcome other than ok (failed, dead-lettered, ...)
	stateMissed                    // not emitted, or without an outcome, the grace after its instant
	numStates
)

// stateNames are the states as data-state and the glyphs' IDs name them.
var stateNames = [numStates]string{"none", "ok", "backfill", "running", "rerun", "late", "failed", "missed"}

func (s cellState) String() string { return stateNames[s] }

// grid is a schedule's grid as the detail read computed it.
type grid struct {
	From, To time.Time     // the day shown
	Minutes  bool          // one cell per minute, a row per hour
	Cols     int           // cells per row
	Row      time.Duration // what a row spans, when its cells are evenly spaced: an hour or a day (0: not so)
	Cells    []cell
}

// cell is one slot, or one minute, of a grid.
type cell struct {
	At     time.Time // the slot; in a grid of minutes, the minute
	Slot   time.Time // the slot its link opens: its own, or its minute's worst (zero: no run, no link)
	State  cellState
	Future bool              // after the read: not yet
	Count  [numStates]uint16 // a minute's slots by state
	Runs   []cellRun         // the slot's runs (of a minute, the worst one)
}

// cellRun is what a grid keeps of a run: enough for a row of the runs table.
type cellRun struct {
	ID      string
	Shard   int
	Kind    string
	Outcome string
	State   cellState
	LateBy  *time.Duration
	Marked  bool
}

// stateOf is the state of one run.
func stateOf(r run) cellState {
	switch {
	case r.State == audit.StateMissing || slices.Contains(r.Problems, audit.ProblemMissing):
		return stateMissed
	case r.State == audit.StatePassedOver:
		return stateNone
	case r.State == audit.StatePending || r.State == audit.StateRunning:
		return stateRunning
	case r.State != ledger.StatusOK:
		return stateFailed
	case r.Kind != "":
		return stateBackfill
	case r.Marked:
		return stateRerun
	case r.LateBy != nil && *r.LateBy > lateStart:
		return stateLate
	}
	return stateOK
}

// compactRun is what a cell keeps of r.
func compactRun(r run) cellRun {
	return cellRun{ID: r.ID, Shard: r.Shard, Kind: r.Kind, Outcome: truncate(cmp.Or(r.Outcome, r.State), 32), State: stateOf(r), LateBy: r.LateBy, Marked: r.Marked}
}

// gridOf computes the grid of schedule s over [from, now] from its runs of the day, newest first (readDetail's
// order: by slot, then shard).
func gridOf(runs []run, from, now time.Time, s *schedule.Schedule) *grid {
	slots := slotsOf(runs, from)
	defined := s.Upcoming(from, maxSlotCells+1)
	if n := len(defined); len(slots) > maxSlotCells || n > maxSlotCells && !defined[n-1].After(now) {
		return minuteGrid(slots, from, now)
	}
	g := &grid{From: from, To: now}
	g.Cols, g.Row = layout(defined)
	for _, sl := range slots {
		g.Cells = append(g.Cells, sl.cell())
	}
	g.pad(s, now)
	return g
}

// slotRuns are the runs of one slot.
type slotRuns struct {
	at   time.Time
	runs []run
}

// slotsOf groups runs (newest first) by slot, oldest first, leaving out those before from.
func slotsOf(runs []run, from time.Time) []slotRuns {
	var out []slotRuns
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if r.Slot.Before(from) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].at.Equal(r.Slot) {
			out[n-1].runs = append(out[n-1].runs, r)
			continue
		}
		out = append(out, slotRuns{at: r.Slot, runs: []run{r}})
	}
	for _, sl := range out {
		slices.Reverse(sl.runs) // by shard again
	}
	return out
}

// worst is the state of the slot (its worst run's) and that run.
func (sl slotRuns) worst() (cellState, run) {
	st, w := stateNone, sl.runs[0]
	for _, r := range sl.runs {
		if s := stateOf(r); s > st {
			st, w = s, r
		}
	}
	return st, w
}

// cell is the slot's cell in a grid of slots: its first maxCellRuns runs, the worst among them.
func (sl slotRuns) cell() cell {
	st, w := sl.worst()
	c := cell{At: sl.at, Slot: sl.at, State: st}
	for _, r := range sl.runs[:min(len(sl.runs), maxCellRuns)] {
		c.Runs = append(c.Runs, compactRun(r))
	}
	if !slices.ContainsFunc(c.Runs, func(r cellRun) bool { return r.ID == w.ID }) {
		c.Runs[len(c.Runs)-1] = compactRun(w)
	}
	return c
}

// minuteGrid is a grid of one cell per minute from from's hour to now's, a row per hour.
func minuteGrid(slots []slotRuns, from, now time.Time) *grid {
	first := from.Truncate(time.Hour)
	rows := int(now.Sub(first)/time.Hour) + 1
	g := &grid{From: from, To: now, Minutes: true, Cols: 60, Row: time.Hour, Cells: make([]cell, rows*60)}
	for i := range g.Cells {
		at := first.Add(time.Duration(i) * time.Minute)
		g.Cells[i] = cell{At: at, Future: at.After(now)}
	}
	for _, sl := range slots {
		i := int(sl.at.Sub(first) / time.Minute)
		if i < 0 || i >= len(g.Cells) {
			continue
		}
		c := &g.Cells[i]
		st, w := sl.worst()
		c.Count[st]++
		if c.Slot.IsZero() || st > c.State {
			c.State, c.Slot, c.Runs = st, sl.at, []cellRun{compactRun(w)}
		}
	}
	return g
}

// layout is the width of a grid of slots made as defined (the definition's slots from the start of the day) and
// what a row spans: an hour when the slots are evenly spaced, at least 4 an hour and an hour a whole number of
// them; a day when a day is (at most 60 a row); else 24 cells, spanning no fixed time.
func layout(defined []time.Time) (int, time.Duration) {
	if len(defined) < 2 {
		return 24, 0
	}
	step := defined[1].Sub(defined[0])
	for i := 2; i < len(defined); i++ {
		if defined[i].Sub(defined[i-1]) != step {
			return 24, 0
		}
	}
	switch {
	case step <= 0:
		return 24, 0
	case time.Hour%step == 0 && time.Hour/step >= 4 && time.Hour/step <= 60:
		return int(time.Hour / step), time.Hour
	case 24*time.Hour%step == 0 && 24*time.Hour/step <= 60:
		return int(24 * time.Hour / step), 24 * time.Hour
	}
	return 24, 0
}

// pad fills a grid of slots out to whole rows: when its rows span an hour or a day, with the definition's slots
// from the start of the first row to the first cell (no run); and with its next slots, not yet (none while
// paused).
func (g *grid) pad(s *schedule.Schedule, now time.Time) {
	if len(g.Cells) == 0 {
		return
	}
	if g.Row > 0 {
		var before []cell
		for _, t := range s.Upcoming(g.Cells[0].At.Truncate(g.Row).Add(-time.Nanosecond), g.Cols) {
			if !t.Before(g.Cells[0].At) {
				break
			}
			before = append(before, cell{At: t})
		}
		g.Cells = append(before, g.Cells...)
	}
	if s.Paused() || len(g.Cells)%g.Cols == 0 {
		return
	}
	after := now
	if last := g.Cells[len(g.Cells)-1].At; last.After(now) {
		after = last
	}
	for _, t := range s.Upcoming(after, g.Cols-len(g.Cells)%g.Cols) {
		g.Cells = append(g.Cells, cell{At: t, Future: true})
	}
}
