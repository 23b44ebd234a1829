package console

import (
	"bytes"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

// gridNow is the instant the grid tests read at: the day shown starts at 2026-12-01 10:30:20.
var gridNow = time.Date(2026, 12, 2, 10, 30, 20, 0, time.UTC)

func hm(day, h, m, s int) time.Time { return time.Date(2026, 12, day, h, m, s, 0, time.UTC) }

func compile(t *testing.T, spec schedule.Spec) *schedule.Schedule {
	t.Helper()
	s, err := spec.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dayOfRuns is a run for every slot of s in the day before gridNow, ok and on time unless special says
// otherwise, newest first as readDetail sorts them.
func dayOfRuns(s *schedule.Schedule, special map[time.Time]func(*run)) []run {
	var runs []run
	for _, slot := range s.Upcoming(gridNow.Add(-detailHistory), 100_000) {
		if slot.After(gridNow) {
			break
		}
		late := 200 * time.Millisecond
		r := run{Slot: slot, ID: "five@" + slot.Format(time.RFC3339), State: "ok", Outcome: "ok", LateBy: &late}
		if f := special[slot]; f != nil {
			f(&r)
		}
		runs = append([]run{r}, runs...)
	}
	return runs
}

// renderedCell is a cell as the page's HTML has it.
type renderedCell struct {
	href, slot, state, title string
	x, y                     int
}

var cellRE = regexp.MustCompile(`(?:<a href="([^"]*)"|<g) class="cell" data-slot="([^"]*)" data-state="([a-z]+)"(?: data-minute="[^"]*")?><title>([^<]*)</title><use href="#g-[a-z]+" x="(\d+)" y="(\d+)"/>`)

// renderGrid draws g of name as a page of a console mounted under prefix does, and returns its cells in order.
func renderGrid(t *testing.T, prefix string, g *grid, name string, sel time.Time, missed []time.Time) []renderedCell {
	t.Helper()
	c, err := New(Config{Prefix: prefix}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := c.pages.t.ExecuteTemplate(&b, "grid", c.gridView(g, name, sel, missed)); err != nil {
		t.Fatal(err)
	}
	var out []renderedCell
	for _, m := range cellRE.FindAllStringSubmatch(b.String(), -1) {
		x, _ := strconv.Atoi(m[5])
		y, _ := strconv.Atoi(m[6])
		out = append(out, renderedCell{href: m[1], slot: m[2], state: m[3], title: m[4], x: x, y: y})
	}
	if len(out) != len(g.Cells) && missed == nil {
		t.Fatalf("%d cells drawn, the grid has %d:\n%.2000s", len(out), len(g.Cells), b.String())
	}
	return out
}

// TestGridOfSlots: a schedule of a slot every 5 minutes has a cell per slot, a row per hour from the hour of
// its first slot of the day, padded with the slots to come; each cell is where its slot is, in the state of its
// worst run, and links to its slot under the console's prefix.
func TestGridOfSlots(t *testing.T) {
	s := compile(t, schedule.Spec{Name: "five", Every: schedule.Duration(5 * time.Minute)})
	lateBy := 7 * time.Second
	special := map[time.Time]func(*run){
		hm(2, 8, 15, 0): func(r *run) {
			r.State, r.Outcome, r.LateBy, r.Problems = audit.StateMissing, "", nil, []string{audit.ProblemMissing}
		},
		hm(2, 8, 20, 0): func(r *run) { r.LateBy = &lateBy },
		hm(2, 8, 25, 0): func(r *run) { r.State, r.Outcome = "dead_lettered", "dead_lettered" },
		hm(2, 8, 30, 0): func(r *run) { r.Marked = true },
		hm(2, 10, 30, 0): func(r *run) {
			r.State, r.Outcome, r.LateBy = audit.StateRunning, "running", nil
		},
		// no_outcome past the grace is missing too (the audit's problem), whatever the state says
		hm(2, 9, 0, 0): func(r *run) {
			r.State, r.Outcome, r.Problems = audit.StateNoOutcome, "", []string{audit.ProblemMissing}
		},
	}
	runs := dayOfRuns(s, special)
	// A backfill of an ok slot: the cell shows the backfill.
	bf := run{Slot: hm(2, 8, 35, 0), ID: "five@x~backfill-1", Kind: "backfill", State: "ok", Outcome: "ok"}
	for i, r := range runs {
		if r.Slot.Equal(bf.Slot) {
			runs = append(runs[:i+1], append([]run{bf}, runs[i+1:]...)...)
			break
		}
	}
	// A slot of 6 shards, the last one failed: its cell keeps 4 runs, the failed one among them.
	for i, r := range runs {
		if r.Slot.Equal(hm(2, 7, 0, 0)) {
			var shards []run
			for k := range 6 {
				x := r
				x.Shard, x.ID = k, r.ID+"#"+strconv.Itoa(k)
				if k == 5 {
					x.State, x.Outcome = "failed", "failed"
				}
				shards = append(shards, x)
			}
			runs = append(runs[:i], append(shards, runs[i+1:]...)...)
			break
		}
	}
	g := gridOf(runs, gridNow.Add(-detailHistory), gridNow, s)
	if c := g.Cells[7+int(hm(2, 7, 0, 0).Sub(hm(1, 10, 35, 0))/(5*time.Minute))]; c.State != stateFailed || len(c.Runs) != maxCellRuns ||
		c.Runs[maxCellRuns-1].Outcome != "failed" {
		t.Errorf("a slot of 6 shards, one failed: %v, runs %+v", c.State, c.Runs)
	}
	if g.Minutes || g.Cols != 12 || g.Row != time.Hour {
		t.Fatalf("grid of a 5m schedule: minutes %v, %d columns, rows of %s; want slots, 12, 1h", g.Minutes, g.Cols, g.Row)
	}
	// 10:00 .. 10:30 of the first day are before its first slot of the day (10:35), 10:35 .. 10:55 of the second
	// are to come: 7 + 288 + 5 cells, 25 rows.
	if len(g.Cells) != 300 || !g.Cells[0].At.Equal(hm(1, 10, 0, 0)) || !g.Cells[7].At.Equal(hm(1, 10, 35, 0)) {
		t.Fatalf("%d cells from %s, want 300 from 10:00 (the day's first slot, 10:35, at 7)", len(g.Cells), g.Cells[0].At)
	}
	cells := renderGrid(t, "/console", g, "five", time.Time{}, nil)
	index := func(slot time.Time) int { return 7 + int(slot.Sub(hm(1, 10, 35, 0))/(5*time.Minute)) }
	for slot, want := range map[time.Time]string{
		hm(2, 8, 15, 0): "missed", hm(2, 8, 20, 0): "late", hm(2, 8, 25, 0): "failed", hm(2, 8, 30, 0): "rerun",
		hm(2, 8, 35, 0): "backfill", hm(2, 10, 30, 0): "running", hm(2, 9, 0, 0): "missed", hm(2, 8, 40, 0): "ok",
		hm(1, 10, 5, 0): "none", hm(2, 10, 45, 0): "none",
	} {
		i := index(slot)
		x := cells[i]
		if x.state != want || x.slot != slot.Format(time.RFC3339) || x.x != labelWidth+i%12*cellPitch || x.y != headHeight+i/12*cellPitch {
			t.Errorf("cell %d: %+v, want %s at %s, column %d, row %d", i, x, want, slot.Format(time.RFC3339), i%12, i/12)
		}
	}
	missed := cells[index(hm(2, 8, 15, 0))]
	if want := "/console/schedules/five?slot=" + url.QueryEscape("2026-12-02T08:15:00Z") + "#slot"; missed.href != want ||
		!strings.Contains(missed.title, "2026-12-02 08:15:00 UTC: missed") {
		t.Errorf("the missed cell links to %q (%q), want %q", missed.href, missed.title, want)
	}
	if x := cells[index(hm(2, 10, 45, 0))]; x.href != "" || !strings.Contains(x.title, "not yet") {
		t.Errorf("a slot to come: %+v, want no link, not yet", x)
	}
	if x := cells[index(hm(2, 8, 20, 0))]; !strings.Contains(x.title, "started 7s after its instant") {
		t.Errorf("the late cell's title: %q", x.title)
	}
}

// TestGridOfMinutes: a schedule of more than 1,440 slots a day gets a cell per minute, a row per hour, each in
// the worst state of its slots and linking to the worst slot; the snapshot's missed slots that the detail has no
// run of are marked too.
func TestGridOfMinutes(t *testing.T) {
	s := compile(t, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)})
	var runs []run
	add := func(slot time.Time, state string, mod func(*run)) {
		r := run{Slot: slot, ID: "beat@" + slot.Format(time.RFC3339), State: state, Outcome: state}
		if mod != nil {
			mod(&r)
		}
		runs = append([]run{r}, runs...) // newest first
	}
	late := 9 * time.Second
	for sec := range 10 {
		switch sec {
		case 5:
			add(hm(2, 9, 0, sec), audit.StateMissing, func(r *run) { r.Problems, r.Outcome = []string{audit.ProblemMissing}, "" })
		case 7:
			add(hm(2, 9, 0, sec), "failed", nil)
		default:
			add(hm(2, 9, 0, sec), "ok", nil)
		}
		add(hm(2, 9, 1, sec), "ok", func(r *run) {
			if sec == 3 {
				r.LateBy = &late
			}
		})
	}
	g := gridOf(runs, gridNow.Add(-detailHistory), gridNow, s)
	if !g.Minutes || g.Cols != 60 || len(g.Cells) != 25*60 {
		t.Fatalf("grid of a 1s schedule: minutes %v, %d columns, %d cells; want minutes, 60, 1500", g.Minutes, g.Cols, len(g.Cells))
	}
	// The missed slot of the snapshot that the detail did not reach (its minute has no run): missed too.
	cells := renderGrid(t, "", g, "beat", time.Time{}, []time.Time{hm(2, 7, 30, 12), hm(2, 9, 1, 4)})
	first := hm(1, 10, 0, 0)
	at := func(t time.Time) int { return int(t.Sub(first) / time.Minute) }
	for _, c := range []struct {
		minute      time.Time
		state, slot string
		title       string
	}{
		{hm(2, 9, 0, 0), "missed", "2026-12-02T09:00:05Z", "10 slot(s): 8 ok, 1 failed, 1 missed"},
		{hm(2, 9, 1, 0), "late", "2026-12-02T09:01:03Z", "10 slot(s): 9 ok, 1 late"},
		{hm(2, 7, 30, 0), "missed", "2026-12-02T07:30:12Z", "1 slot(s): 1 missed"},
		{hm(2, 9, 2, 0), "none", "2026-12-02T09:02:00Z", "no slot"},
		{hm(1, 10, 10, 0), "none", "2026-12-01T10:10:00Z", "before the day shown"},
		{hm(2, 10, 40, 0), "none", "2026-12-02T10:40:00Z", "not yet"},
	} {
		i := at(c.minute)
		x := cells[i]
		if x.state != c.state || x.slot != c.slot || !strings.Contains(x.title, c.title) || x.x != labelWidth+i%60*cellPitch || x.y != headHeight+i/60*cellPitch {
			t.Errorf("minute %s (cell %d): %+v, want %s, slot %s, title with %q", c.minute.Format(time.TimeOnly), i, x, c.state, c.slot, c.title)
		}
	}
	if x := cells[at(hm(2, 9, 0, 0))]; x.href != "/schedules/beat?slot="+url.QueryEscape("2026-12-02T09:00:05Z")+"#slot" {
		t.Errorf("the minute's link: %q, want its missed slot's", x.href)
	}
	// A minute keeps its worst run only.
	if c := g.Cells[at(hm(2, 9, 0, 0))]; len(c.Runs) != 1 || c.Runs[0].ID != "beat@2026-12-02T09:00:05Z" {
		t.Errorf("the minute keeps %+v, want its missed run only", c.Runs)
	}
}

// TestSlotLinkShowsItsRuns: a cell's link shows its slot's runs in the runs table, marked, even when they are
// older than the newest runs the page keeps; a slot that is not an instant is refused.
func TestSlotLinkShowsItsRuns(t *testing.T) {
	c, err := New(Config{Namespace: "ns", Prefix: "/console"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	spec := schedule.Spec{Name: "five", Every: schedule.Duration(5 * time.Minute)}
	s := compile(t, spec)
	rep := &status.Report{Namespace: "ns", At: now, LeaderCount: 1, Entries: map[string]store.Entry{"five": {Schedule: s, Version: 1, UpdatedAt: now}},
		Schedules: []status.Schedule{{Name: "five", Schedule: spec.Describe()}}}
	c.snap.Store(&snapshot{rep: rep, at: now})
	var runs []run
	for _, slot := range s.Upcoming(now.Add(-3*time.Hour), 30) {
		runs = append([]run{{Slot: slot, ID: "five@" + slot.Format(time.RFC3339), State: "ok", Outcome: "ok"}}, runs...)
	}
	old := runs[len(runs)-1]
	d := &detail{at: now.Add(time.Hour), grid: gridOf(runs, now.Add(-detailHistory), now, s), runs: runs[:10]}
	c.details["five"] = d
	srv := newServer(t, c)
	code, body := get(t, srv, "/console/schedules/five?slot="+url.QueryEscape(old.Slot.Format(time.RFC3339)))
	if code != 200 || !strings.Contains(body, `<tr data-id="`+old.ID+`" id="slot" class="selected short">`) || !strings.Contains(body, `id="slot-note"`) {
		t.Errorf("an old slot's link: %d, its run not in the table, marked:\n%s", code, body)
	}
	if !strings.Contains(body, `id="grid"`) || !strings.Contains(body, `href="/console/schedules/five?slot=`) {
		t.Errorf("the page has no grid, or its links lack the prefix")
	}
	recent := runs[2]
	if _, body := get(t, srv, "/console/schedules/five?slot="+url.QueryEscape(recent.Slot.Format(time.RFC3339))); !strings.Contains(body, `<tr data-id="`+recent.ID+`" id="slot" class="selected">`) {
		t.Errorf("a recent slot's run is not marked in the table")
	}
	if code, body := get(t, srv, "/console/schedules/five?slot=yesterday<b>"); code != 400 || !strings.Contains(body, "Slot") || strings.Contains(body, "<b>") {
		t.Errorf("a bad slot: %d\n%s", code, body)
	}
}
