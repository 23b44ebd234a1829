package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestE2EConsoleCatalogInABrowser: a console whose namespace has more schedules than --catalog-above lists them
// from its catalog, as a user clicks it: the first page of 100 names with their definitions, the next page by
// its link and back to the first, a search by name and state through the form, and a schedule's page reached by
// its link, with its runs (read for it alone) and the note of what the page leaves out; an operator pauses a
// schedule from its page, and the paused list shows it.
func TestE2EConsoleCatalogInABrowser(t *testing.T) {
	path := chromium(t)
	e := setup(t)
	f := e.f
	var file strings.Builder
	file.WriteString("schedules:\n  - name: beat\n    every: 1s\n")
	for i := range 120 {
		fmt.Fprintf(&file, "  - name: hourly-%03d\n    every: 1h\n", i)
	}
	apply := filepath.Join(t.TempDir(), "many.yaml")
	if err := os.WriteFile(apply, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.cli("schedule", "apply", "-f", apply)
	f.ticker("a")
	e.start(nil, "--exec", handlerBin)
	token := "console-catalog-token-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	c := f.start("console", "ticker", "console", "--listen", addr, "--catalog-above", "50", "--actions", "--token-file", tokenFile, "--refresh", "2s")
	c.waitLog(t, "namespace read", 60*time.Second)
	if !c.logContains("catalog_mode=true") {
		t.Fatalf("the console did not list 121 schedules from its catalog:\n%s", c.tail(20))
	}
	base := "http://" + addr
	b := newBrowser(t, path)

	html := b.page(base + "/schedules")
	if got := b.text("#count"); !strings.HasPrefix(got, "121 schedule(s): a namespace this large is listed by name, 100 on this page") {
		t.Fatalf("the list's count: %q", got)
	}
	if def := b.text(`tr[data-schedule="hourly-000"] td:nth-child(4)`); !strings.HasPrefix(def, "every 1h") || !strings.Contains(html, `data-schedule="beat"`) {
		t.Fatalf("hourly-000's definition on the list: %q", def)
	}
	b.submit("clicking next", `nav.pages a[rel="next"]`)
	if n := strings.Count(value(b, "reading page 2", chromedp.OuterHTML(chromedp.CSS("html"))), "<tr data-schedule="); n != 21 {
		t.Fatalf("the second page lists %d schedules, want 21", n)
	}
	b.submit("clicking first page", `nav.pages a[rel="first"]`)
	if b.text(`tr[data-schedule="beat"] td:nth-child(1)`) == "" {
		t.Fatal("the first page, back from the second, does not list beat")
	}
	value(b, "typing a search", chromedp.Evaluate[string](`document.querySelector('input[name=q]').value = "hourly-11"`))
	b.submit("searching", `form.search button`)
	if n := strings.Count(value(b, "reading the search", chromedp.OuterHTML(chromedp.CSS("html"))), "<tr data-schedule="); n != 10 {
		t.Fatalf("the search hourly-11 lists %d schedules, want 10", n)
	}

	// A schedule's page, by its link: its runs, read for it alone.
	b.page(base + "/schedules?q=beat")
	b.submit("opening beat's page", `tr[data-schedule="beat"] a`)
	if note := b.text("#catalog-note"); !strings.Contains(note, "too large to read whole") {
		t.Fatalf("beat's page has no catalog note: %q", note)
	}
	waitFor(t, 60*time.Second, "beat's runs on its page", func() (bool, string) {
		b.page(base + "/schedules/beat")
		runs := b.text("#runs tbody")
		return strings.Contains(runs, "ok"), "runs " + runs
	})

	// An operator pauses hourly-007 from its page; the paused list shows it.
	if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + token}}); err != nil {
		t.Fatal(err)
	}
	b.page(base + "/schedules/hourly-007")
	value(b, "typing a reason", chromedp.Evaluate[string](`document.querySelector('#pause-reason').value = "catalog test"`))
	b.submit("clicking pause", "#pause")
	waitFor(t, 30*time.Second, "hourly-007 in the paused list", func() (bool, string) {
		b.page(base + "/schedules?state=paused")
		row := b.text(`tr[data-schedule="hourly-007"]`) // an operator's list has a selection column first
		return strings.Contains(row, "paused: catalog test"), "row " + row
	})
}
