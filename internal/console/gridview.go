package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The grid as a schedule's page draws it: inline SVG, made by the "grid" template (templates/svg.html) from a
// gridView, whose every value the template escapes. Each state has a glyph (colour and shape, so that a user who
// cannot tell the colours apart tells the shapes) defined once and placed at each cell; each cell has a tooltip
// and, when it has a run, links to its slot's runs.

// Geometry of the grid, in SVG user units (pixels at 100%).
const (
	cellPitch    = 14  // a cell (12) and its gap
	labelWidth   = 84  // the rows' labels
	headHeight   = 16  // the columns' heads
	legendWidth  = 220 // a legend entry
	legendHeight = 18
	legendCols   = 4
)

// legendOrder is the legend's order of the states, with what each means.
var legendOrder = []struct {
	state cellState
	text  string
}{
	{stateOK, "ok"}, {stateLate, "ok, started over 5 s late"}, {stateRerun, "ok after a marked re-run"},
	{stateBackfill, "backfill or trigger"}, {stateRunning, "running or waiting"}, {stateFailed, "failed or another outcome"},
	{stateMissed, "missed"}, {stateNone, "no slot, or not yet"},
}

// gridView is what the "grid" template draws.
type gridView struct {
	Width, Height    int
	Caption, Summary string
	Labels           []svgText
	Cells            []cellView
	Legend           []legendEntry
}

type cellView struct {
	X, Y                int
	State, Slot, Minute string
	Href, Title         string
	Selected            bool
}

type legendEntry struct {
	X, Y         int
	State, Label string
}

// gridView draws g of schedule name for a page: the slots the last read of the namespace found missed are
// merged in (a slot the detail read did not reach), and the cell of slot sel (if any) is marked.
func (c *Console) gridView(g *grid, name string, sel time.Time, missed []time.Time) *gridView {
	if g == nil || len(g.Cells) == 0 {
		return nil
	}
	cells := withMissed(g, missed)
	rows := (len(cells) + g.Cols - 1) / g.Cols
	v := &gridView{Caption: caption(g), Summary: summary(g, cells)}
	v.Width = labelWidth + max(g.Cols*cellPitch, legendCols*legendWidth)
	legendTop := headHeight + rows*cellPitch + 10
	v.Height = legendTop + (len(legendOrder)+legendCols-1)/legendCols*legendHeight
	base := c.cfg.Prefix + schedulePath(name) + "?slot="
	for i, x := range cells {
		col, row := i%g.Cols, i/g.Cols
		cv := cellView{X: labelWidth + col*cellPitch, Y: headHeight + row*cellPitch, State: x.State.String(), Slot: stamp(x.At), Title: title(g, x)}
		if g.Minutes {
			cv.Minute = stamp(x.At)
		}
		if !x.Slot.IsZero() {
			cv.Slot = stamp(x.Slot)
			cv.Href = base + url.QueryEscape(cv.Slot) + "#slot"
			cv.Selected = x.Slot.Equal(sel) || !g.Minutes && x.At.Equal(sel)
		}
		v.Cells = append(v.Cells, cv)
		if col == 0 {
			v.Labels = append(v.Labels, svgText{X: labelWidth - 6, Y: cv.Y + 10, Anchor: "end", Text: rowLabel(g, x.At, row == 0)})
		}
	}
	if g.Minutes {
		for m := 0; m < 60; m += 15 {
			v.Labels = append(v.Labels, svgText{X: labelWidth + m*cellPitch, Y: headHeight - 4, Anchor: "start", Text: fmt.Sprintf(":%02d", m)})
		}
	}
	for i, l := range legendOrder {
		v.Legend = append(v.Legend, legendEntry{X: labelWidth + i%legendCols*legendWidth, Y: legendTop + i/legendCols*legendHeight, State: l.state.String(), Label: l.text})
	}
	return v
}

// withMissed is g's cells, in a copy, with the slots of missed (the last read of the namespace found them
// missed) that g has no run of marked missed: the detail read may not have reached them (its bound per partition).
func withMissed(g *grid, missed []time.Time) []cell {
	cells := slices.Clone(g.Cells)
	first := cells[0].At
	for _, m := range missed {
		if m.Before(g.From) || m.After(g.To) {
			continue
		}
		if g.Minutes {
			if i := int(m.Sub(first) / time.Minute); i >= 0 && i < len(cells) && cells[i].State == stateNone && len(cells[i].Runs) == 0 {
				cells[i].State, cells[i].Slot = stateMissed, m
				cells[i].Count[stateMissed]++
			}
			continue
		}
		i, found := slices.BinarySearchFunc(cells, m, func(x cell, t time.Time) int { return x.At.Compare(t) })
		switch {
		case found && cells[i].State == stateNone && len(cells[i].Runs) == 0:
			cells[i].State, cells[i].Slot = stateMissed, m
		case !found && g.Row == 0 && i > 0 && i < len(cells):
			// Not a slot the grid placed: in rows of no fixed span it takes a cell of its own; rows of an hour or
			// a day keep their places (a slot of another definition than the current one is not drawn).
			cells = slices.Insert(cells, i, cell{At: m, Slot: m, State: stateMissed})
		}
	}
	return cells
}

// caption says what a cell and a row of g are.
func caption(g *grid) string {
	switch {
	case g.Minutes:
		return fmt.Sprintf("One cell per minute, showing the worst of its slots (this schedule makes more than %d slots a day); a row per hour. Times in UTC.", maxSlotCells)
	case g.Row == time.Hour:
		return "One cell per slot, oldest first; a row per hour. Times in UTC."
	case g.Row == 24*time.Hour:
		return "One cell per slot, oldest first; a row per day. Times in UTC."
	}
	return fmt.Sprintf("One cell per slot, oldest first; rows of %d slots. Times in UTC.", g.Cols)
}

// rowLabel is the label of the row that starts with the cell at t: its day, or its time, with its day when it is
// the first row or the first of a day.
func rowLabel(g *grid, t time.Time, first bool) string {
	t = t.UTC()
	switch {
	case g.Row == 24*time.Hour:
		return t.Format("Jan 2")
	case g.Row == time.Hour && !first && t.Hour() > 0:
		return t.Format("15:04")
	}
	return t.Format("Jan 2 15:04")
}

// title is a cell's tooltip: its time, state and, of a minute, its slots by state.
func title(g *grid, x cell) string {
	if g.Minutes {
		at := x.At.UTC().Format("2006-01-02 15:04") + " UTC"
		n := 0
		for _, k := range x.Count {
			n += int(k)
		}
		switch {
		case x.Future:
			return at + ": not yet"
		case n == 0 && x.At.Add(time.Minute).Before(g.From):
			return at + ": before the day shown"
		case n == 0:
			return at + ": no slot"
		}
		var count [numStates]int
		for s, k := range x.Count {
			count[s] = int(k)
		}
		return fmt.Sprintf("%s: %s (%s); the link opens %s", at, stateWords(x), counted(count, n), x.Slot.UTC().Format(time.TimeOnly))
	}
	at := x.At.UTC().Format("2006-01-02 15:04:05") + " UTC"
	s := at + ": " + stateWords(x)
	if len(x.Runs) > 1 {
		s += fmt.Sprintf(" (%d runs)", len(x.Runs))
	}
	if i := slices.IndexFunc(x.Runs, func(r cellRun) bool { return r.State == x.State }); i >= 0 && x.Runs[i].LateBy != nil && x.State != stateMissed {
		s += ", started " + fmtDur(*x.Runs[i].LateBy) + " after its instant"
	}
	return s
}

// stateWords says a cell's state.
func stateWords(x cell) string {
	switch {
	case x.State != stateNone:
		for _, l := range legendOrder {
			if l.state == x.State {
				return l.text
			}
		}
	case x.Future:
		return "not yet"
	case len(x.Runs) > 0:
		return "passed over by its catch-up policy"
	}
	return "no run"
}

// counted is a minute's slots by state: "60 slots: 58 ok, 2 missed".
func counted(count [numStates]int, n int) string {
	var parts []string
	for _, l := range legendOrder {
		if k := count[l.state]; k > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k, stateNames[l.state]))
		}
	}
	return fmt.Sprintf("%d slot(s): %s", n, strings.Join(parts, ", "))
}

// summary says in words what the grid shows, for screen readers and for anyone: the day's slots by state.
func summary(g *grid, cells []cell) string {
	var count [numStates]int
	n := 0
	for _, x := range cells {
		switch {
		case g.Minutes:
			for s, k := range x.Count {
				count[s] += int(k)
				n += int(k)
			}
		case x.Slot.IsZero():
		default:
			count[x.State]++
			n++
		}
	}
	span := g.From.UTC().Format("2006-01-02 15:04") + " to " + g.To.UTC().Format("2006-01-02 15:04") + " UTC"
	if n == 0 {
		return "No run from " + span + "."
	}
	return "From " + span + ": " + counted(count, n) + "."
}

// runsOf is the runs the page's table shows for slot sel (zero: none chosen): d's newest runs with those of sel
// marked; when none of them is of sel, the runs the grid kept of it are added at the end, in short. The first
// run of sel is the link's anchor; note says when sel has no run kept at all.
func runsOf(d *detail, sel time.Time) (runs []run, note string) {
	if sel.IsZero() {
		return d.runs, ""
	}
	runs = slices.Clone(d.runs)
	found := false
	for i := range runs {
		if runs[i].Slot.Equal(sel) {
			runs[i].Selected, runs[i].Anchor = true, !found
			found = true
		}
	}
	if found {
		return runs, ""
	}
	if d.grid != nil {
		for _, x := range d.grid.Cells {
			if !x.Slot.Equal(sel) {
				continue
			}
			for _, r := range x.Runs {
				runs = append(runs, run{Slot: sel, ID: r.ID, Shard: r.Shard, Kind: r.Kind, Outcome: r.Outcome, LateBy: r.LateBy, Marked: r.Marked,
					Selected: true, Anchor: !found, Short: true})
				found = true
			}
		}
	}
	if !found {
		return runs, "No run of slot " + stamp(sel) + " is kept on this page (ticker history shows every tick of a schedule)."
	}
	return runs, "The runs of slot " + stamp(sel) + " are older than the newest shown: they are at the end of the table, in short."
}

// slotParam is the slot a grid cell's link asks for (?slot=, RFC 3339; zero: none), or what is wrong with it.
func slotParam(r *http.Request) (time.Time, string) {
	q := r.URL.Query().Get("slot")
	if q == "" {
		return time.Time{}, ""
	}
	t, err := time.Parse(time.RFC3339Nano, q)
	if err != nil {
		return time.Time{}, fmt.Sprintf("Slot %q: want an RFC 3339 instant (2026-12-01T10:00:00Z).", truncate(q, 64))
	}
	return t, ""
}
