package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestE2EConsoleLimits drives `ticker console` in headless Chromium against a fleet with a limit of 1 run at once
// named by two schedules whose runs take 2 s: the fleet page's limits table has the limit's row, with its bounds,
// the two schedules, and its ticks waiting; a schedule's page shows its priority, and its limit links to that row.
func TestE2EConsoleLimits(t *testing.T) {
	path := chromium(t)
	e := setup(t)
	f := e.f
	file := filepath.Join(t.TempDir(), "apply.yaml")
	if err := os.WriteFile(file, []byte(`limits:
  - name: pay
    concurrency: 1
    rate: 30/1m
schedules:
  - name: pay-hi
    every: 1s
    limit: pay
    priority: 5
  - name: pay-lo
    every: 1s
    limit: pay
    priority: 1
  - name: beat
    every: 1s
`), 0o644); err != nil {
		t.Fatal(err)
	}
	f.cli("schedule", "apply", "-f", file)
	f.ticker("a")
	e.start([]string{"HANDLER_SLEEP=2s"}, "--exec", handlerBin)
	addr := freeAddr(t)
	c := f.start("console", "ticker", "console", "--listen", addr, "--refresh", "2s", "--grace", "5s")
	c.waitLog(t, "namespace read", 60*time.Second)
	base := "http://" + addr
	b := newBrowser(t, path)

	cell := func(i int) string { return b.text(`#limit-pay td:nth-child(` + strconv.Itoa(i) + `)`) }
	waitFor(t, 60*time.Second, "the limit's ticks waiting on the fleet page", func() (bool, string) {
		b.page(base + "/")
		w := cell(7)
		return w != "" && w != "0" && w != "?", "waiting " + w
	})
	if got := []string{cell(1), cell(2), cell(3), cell(4), cell(5)}; strings.Join(got, "|") != "pay|default|1|30/1m|2" {
		t.Errorf("the limit's row: %q, want pay, default, 1 at once, 30/1m, 2 schedules", got)
	}
	if r := cell(6); r != "0" && r != "1" {
		t.Errorf("the limit shows %q running; want at most 1", r)
	}
	b.shot("limits")

	b.page(base + "/schedules/pay-lo")
	if p := b.text("#priority"); p != "1" {
		t.Errorf("pay-lo's priority shows %q, want 1", p)
	}
	if l := b.text("#limit"); l != "pay" {
		t.Errorf("pay-lo's limit shows %q, want pay", l)
	}
	b.do("following the limit's link", chromedp.Click(chromedp.CSS("#limit")))
	waitFor(t, 30*time.Second, "the fleet page at the limit's row", func() (bool, string) {
		// The click navigates: an evaluation during the navigation fails, and the next poll reads the new page.
		target, err := tryValue(b, chromedp.Evaluate[string](`(function(e){return location.pathname + location.hash + " " + (e ? e.id : "")})(document.querySelector(":target"))`))
		if err != nil {
			return false, err.Error()
		}
		return target == "/#limit-pay limit-pay", target
	})
	b.page(base + "/schedules/beat")
	if b.text("#limit") != "" || b.text("#priority") != "3 (the default)" {
		t.Errorf("beat's page: limit %q, priority %q; want none and the default", b.text("#limit"), b.text("#priority"))
	}
}
