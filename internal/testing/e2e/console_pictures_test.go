package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// gridCell is a cell of a schedule's grid as the browser has it.
type gridCell struct {
	Slot   string  `json:"slot"`
	State  string  `json:"state"`
	Minute string  `json:"minute"`
	Href   string  `json:"href"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
}

// gridCells reads the grid of the schedule page the browser shows, in its order.
func gridCells(b *browser) []gridCell {
	b.t.Helper()
	return value(b, "reading the grid", chromedp.Evaluate[[]gridCell](`Array.from(document.querySelectorAll("#grid .cell")).map(e => ({
		slot: e.dataset.slot, state: e.dataset.state, minute: e.dataset.minute || "", href: e.getAttribute("href") || "",
		x: +e.querySelector("use").getAttribute("x"), y: +e.querySelector("use").getAttribute("y")}))`))
}

// chartBar is a bar of a pool's chart on the fleet page.
type chartBar struct {
	Runs  int    `json:"runs"`
	Title string `json:"title"`
}

// TestE2EConsolePictures drives `ticker console` in headless Chromium against a running fleet: a schedule of a
// pool without workers misses its slots, and its grid shows a missed cell at the place of its minute, whose slot
// `ticker status` reports missed, and whose link opens that slot's runs; the fleet page's chart of the default
// pool has a bar of the runs of the last minutes, and the idle pool's chart marks its missed slots.
func TestE2EConsolePictures(t *testing.T) {
	path := chromium(t)
	e := setup(t)
	f := e.f
	f.cli("schedule", "put", "beat", "--every", "1s")
	f.cli("schedule", "put", "idle-job", "--every", "1s", "--pool", "idle") // no worker serves pool idle
	f.ticker("a")
	e.start(nil, "--exec", handlerBin)
	addr := freeAddr(t)
	c := f.start("console", "ticker", "console", "--listen", addr, "--refresh", "2s", "--grace", "5s")
	c.waitLog(t, "namespace read", 60*time.Second)
	base := "http://" + addr
	b := newBrowser(t, path)

	// A missed cell in idle-job's grid (its page's read is kept 30 s: the first may predate the first miss).
	var cells []gridCell
	missed := -1
	waitFor(t, 90*time.Second, "a missed cell in idle-job's grid", func() (bool, string) {
		b.page(base + "/schedules/idle-job")
		cells = gridCells(b)
		missed = slices.IndexFunc(cells, func(c gridCell) bool { return c.State == "missed" })
		return missed >= 0, fmt.Sprintf("%d cells, none missed", len(cells))
	})
	checkGridPlace(t, cells, missed)
	cell := cells[missed]
	if reported := missedSlots(t, f); !slices.Contains(reported, cell.Slot) {
		t.Errorf("the missed cell's slot %s is not among the slots ticker status reports missed: %v", cell.Slot, reported)
	}
	if !strings.HasPrefix(cell.Href, "/schedules/idle-job?slot=") {
		t.Errorf("the missed cell links to %q", cell.Href)
	}

	// Its link opens the slot's runs, marked in the runs table, and marks the cell.
	b.submit("clicking the missed cell", `#grid a.cell[data-slot="`+cell.Slot+`"]`)
	slot := value(b, "reading the marked run", chromedp.Evaluate[string](`(function(e){return e ? e.getAttribute("datetime") : ""})(document.querySelector("#runs tr.selected time"))`))
	if got, want := slot, strings.TrimSuffix(cell.Slot, ".000Z"); got != want {
		t.Errorf("the slot's page marks the run of %q, want %q", got, want)
	}
	if n := value(b, "finding the marked cell", chromedp.Evaluate[int](`document.querySelectorAll("#grid a.cell rect.selected").length`)); n != 1 {
		t.Errorf("%d cells marked on the slot's page, want 1", n)
	}
	b.shot("grid")

	// The fleet page: the default pool's runs of the last minutes, the idle pool's missed slots.
	var bars []chartBar
	counted := func(x chartBar) bool {
		return x.Runs > 0 && strings.Contains(x.Title, fmt.Sprintf(": %d run(s) started", x.Runs))
	}
	waitFor(t, 30*time.Second, "a bar of the default pool's runs", func() (bool, string) {
		b.page(base + "/")
		bars = value(b, "reading the bars", chromedp.Evaluate[[]chartBar](`Array.from(document.querySelectorAll('#charts figure[data-pool="default"] rect.bar')).map(e => ({
			runs: +e.dataset.runs, title: e.querySelector("title").textContent}))`))
		return slices.ContainsFunc(bars, counted), fmt.Sprintf("bars %v", bars)
	})
	if n := value(b, "reading the idle pool's marks", chromedp.Evaluate[int](`document.querySelectorAll('#charts figure[data-pool="idle"] g.missed').length`)); n == 0 {
		t.Error("the idle pool's chart marks no missed slot")
	}
	b.shot("charts")
}

// checkGridPlace checks that cell i of a grid of minutes is where its minute is: i minutes after the first
// cell's, in row i/60 and column i%60, and that its slot is in its minute.
func checkGridPlace(t *testing.T, cells []gridCell, i int) {
	t.Helper()
	if len(cells) < 60 || cells[0].Minute == "" {
		t.Fatalf("idle-job's grid is not one of minutes: %d cells, the first %+v", len(cells), cells[0])
	}
	first, err1 := time.Parse(time.RFC3339, cells[0].Minute)
	minute, err2 := time.Parse(time.RFC3339, cells[i].Minute)
	slot, err3 := time.Parse(time.RFC3339Nano, cells[i].Slot)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("the grid's times: %v %v %v", err1, err2, err3)
	}
	if want := first.Add(time.Duration(i) * time.Minute); !minute.Equal(want) || slot.Truncate(time.Minute) != minute {
		t.Errorf("cell %d is minute %s with slot %s, want minute %s", i, cells[i].Minute, cells[i].Slot, want.Format(time.RFC3339))
	}
	pitch := cells[1].X - cells[0].X
	if x, y := cells[0].X+float64(i%60)*pitch, cells[0].Y+float64(i/60)*pitch; cells[i].X != x || cells[i].Y != y {
		t.Errorf("cell %d is drawn at (%v, %v), want (%v, %v): column %d, row %d", i, cells[i].X, cells[i].Y, x, y, i%60, i/60)
	}
}

// missedSlots are idle-job's missed slots as ticker status reports them (with the console's grace), RFC 3339.
func missedSlots(t *testing.T, f *fleet) []string {
	t.Helper()
	var rep struct {
		Schedules []struct {
			MissedSlots []time.Time `json:"missed_slots"`
		} `json:"schedules"`
	}
	out := f.cli("status", "idle-job", "--grace", "5s", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Schedules) != 1 {
		t.Fatalf("ticker status idle-job --json: %v\n%s", err, out)
	}
	var slots []string
	for _, s := range rep.Schedules[0].MissedSlots {
		slots = append(slots, s.UTC().Format(time.RFC3339Nano))
	}
	return slots
}
