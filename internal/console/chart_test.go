package console

import (
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/status"
)

// TestFleetCharts: a pool's chart leaves out the leading minutes in which nothing happened (down to the last
// hour), has a bar for each minute with runs and a cross for each with missed slots, each with its tooltip, and
// says in a sentence what it shows; the fleet page draws one per pool.
func TestFleetCharts(t *testing.T) {
	c, srv := testConsole(t, false)
	first := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	var ms []status.Minute
	for i := range 361 { // 04:00 .. 10:00
		m := status.Minute{At: first.Add(time.Duration(i) * time.Minute)}
		if i >= 300 { // from 09:00
			d := 0.25
			m.Runs, m.StartDelayP99Seconds = 60, &d
		}
		if i == 330 {
			m.Missed, m.Runs = 2, 58
		}
		ms = append(ms, m)
	}
	idle := make([]status.Minute, 361)
	for i := range idle {
		idle[i] = status.Minute{At: first.Add(time.Duration(i) * time.Minute)}
	}
	charts := charts([]status.PoolTimeline{{Pool: "default", Minutes: ms}, {Pool: "idle", Minutes: idle}})
	if len(charts) != 2 || charts[0].From != "09:00" || charts[0].To != "10:01" || charts[1].From != "09:01" {
		t.Fatalf("charts from %+v, want default from 09:00 (its first run) and idle's last hour, 09:01", charts)
	}
	d := charts[0]
	if len(d.Bars) != 61 || d.Bars[30].Runs != 58 || d.Bars[30].Title != "09:30 UTC: 58 run(s) started, start delay p99 250ms, 2 slot(s) missed" {
		t.Errorf("%d bars, the 09:30 one %+v", len(d.Bars), d.Bars[30])
	}
	if len(d.Missed) != 1 || d.Missed[0].N != 2 || len(d.Points) != 61 || len(d.Lines) != 60 || d.DelayMax != "500ms" || d.RunsMax != "100" {
		t.Errorf("missed %+v, %d points, %d lines, scales %s and %s", d.Missed, len(d.Points), len(d.Lines), d.RunsMax, d.DelayMax)
	}
	if want := "Pool default, 09:00 to 10:01 UTC: 3658 run(s) started (at most 60 in a minute, at 09:00); start delay p99 at most 250ms (at 09:00); 2 slot(s) missed, the last at 09:30."; d.Summary != want {
		t.Errorf("summary %q,\nwant %q", d.Summary, want)
	}
	if charts[1].DelayMax != "" || len(charts[1].Bars) != 0 {
		t.Errorf("an idle pool's chart: %+v", charts[1])
	}

	rep := *c.snap.Load().rep
	rep.Timeline = []status.PoolTimeline{{Pool: "default", Minutes: ms}}
	c.snap.Store(&snapshot{rep: &rep, at: rep.At})
	_, body := get(t, srv, "/")
	for _, want := range []string{`<figure class="pictures chart" data-pool="default">`, `data-minute="2026-12-02T09:30:00Z" data-runs="58"><title>09:30 UTC: 58 run(s) started`,
		`<g class="missed" data-minute="2026-12-02T09:30:00Z" data-missed="2">`, `<p class="note summary">Pool default, 09:00 to 10:01 UTC`} {
		if !strings.Contains(body, want) {
			t.Errorf("the fleet page lacks %s:\n%s", want, body)
		}
	}
}
