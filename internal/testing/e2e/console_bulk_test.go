package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestE2EConsoleBulk drives a bulk pause in headless Chromium against a real broker: an operator searches the
// list, chooses every schedule matching the search, previews, and confirms; exactly the previewed schedules
// are paused, and each has its own change-log entry by console:token with the reason. A search matching nothing
// and a selection past the bound get 400, and write nothing.
func TestE2EConsoleBulk(t *testing.T) {
	path := chromium(t)
	e := setup(t)
	f := e.f
	for _, name := range []string{"bulk-a-1", "bulk-a-2", "bulk-a-3", "bulk-a-4", "bulk-a-5", "bulk-b-1"} {
		f.cli("schedule", "put", name, "--every", "1h")
	}
	f.ticker("a")

	token := "console-bulk-e2e-token-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	c := f.start("console", "ticker", "console", "--listen", addr, "--actions", "--token-file", tokenFile, "--refresh", "2s")
	c.waitLog(t, "namespace read", 60*time.Second)
	base := "http://" + addr
	b := newBrowser(t, path)
	if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + token}}); err != nil {
		t.Fatal(err)
	}

	// The search: bulk-a's five schedules, not bulk-b-1.
	waitFor(t, 30*time.Second, "bulk-a's five schedules on the list", func() (bool, string) {
		html := b.page(base + "/schedules?q=bulk-a")
		n := strings.Count(html, `data-schedule="bulk-a-`)
		return n == 5 && strings.Contains(html, `id="bulk"`), fmt.Sprintf("%d rows", n)
	})
	reason := `bulk <maintenance> & "window"`
	b.do("filling the bulk form",
		chromedp.SetValue(chromedp.CSS("#bulk-action"), "pause"),
		chromedp.SendKeys(chromedp.CSS("#bulk-reason"), reason),
		chromedp.Click(chromedp.CSS("#bulk-search")))
	b.shot("bulk-list")
	b.submit("previewing the bulk pause", "#bulk-submit")
	previewed := value(b, "reading the preview", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#bulk-plan tr.change td.name")).map(e => e.textContent)`))
	slices.Sort(previewed)
	if want := []string{"bulk-a-1", "bulk-a-2", "bulk-a-3", "bulk-a-4", "bulk-a-5"}; !slices.Equal(previewed, want) {
		t.Fatalf("the preview would pause %v, want %v", previewed, want)
	}
	b.shot("bulk-preview")
	b.submit("confirming the bulk pause", "#bulk-confirm")
	done := value(b, "reading the result", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#bulk-result tr.ok td.name")).map(e => e.textContent)`))
	slices.Sort(done)
	if !slices.Equal(done, previewed) {
		t.Errorf("the result says %v were paused, the preview %v\n%s", done, previewed, b.text("main"))
	}

	// Exactly the previewed schedules are paused, with the reason, and each has its own change-log entry.
	if paused := pausedOf(t, f); !slices.Equal(paused, previewed) {
		t.Errorf("paused: %v, want exactly the previewed %v", paused, previewed)
	}
	for _, name := range previewed {
		if n := pausesBy(t, f, name, "console:token", reason); n != 1 {
			t.Errorf("%s's change log holds %d pause(s) by console:token with the reason, want 1", name, n)
		}
	}
	if n := pausesBy(t, f, "bulk-b-1", "", ""); n != 0 {
		t.Errorf("bulk-b-1, outside the search, was paused %d time(s)", n)
	}
	c.waitLog(t, "console bulk action", 10*time.Second)

	// A search matching nothing gets 400, saying so.
	b.page(base + "/schedules?q=no-such-bulk")
	b.do("choosing every schedule of an empty search", chromedp.SendKeys(chromedp.CSS("#bulk-reason"), "r"), chromedp.Click(chromedp.CSS("#bulk-search")))
	b.submit("previewing a bulk pause of nothing", "#bulk-submit")
	if msg := b.text("#error"); !strings.Contains(msg, "matches no schedule") {
		t.Errorf("a bulk pause of an empty search: %q, want it to say it matches no schedule", msg)
	}
	// A selection past the bound gets 400; its confirm too.
	form := url.Values{"action": {"trigger"}, "scope": {"selected"}, "csrf": {csrfOf(t, base+"/schedules", "Bearer "+token)}}
	for i := range 101 {
		form.Add("name", fmt.Sprintf("bulk-x-%03d", i))
	}
	for _, confirm := range []string{"", "1"} {
		form.Set("confirm", confirm)
		resp, err := postAs(base+"/bulk", "Bearer "+token, form)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close() // postAs closed it: for the linter
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a selection of 101 (confirm %q): %d, want 400", confirm, resp.StatusCode)
		}
	}
	if paused := pausedOf(t, f); !slices.Equal(paused, previewed) {
		t.Errorf("after the refusals, paused: %v, want still %v", paused, previewed)
	}
}

// pausedOf is the names of the paused schedules, as `ticker schedule list --json` says.
func pausedOf(t *testing.T, f *fleet) []string {
	t.Helper()
	var list []struct {
		Name   string `json:"name"`
		Paused bool   `json:"paused"`
	}
	if err := json.Unmarshal([]byte(f.cli("schedule", "list", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	var paused []string
	for _, s := range list {
		if s.Paused {
			paused = append(paused, s.Name)
		}
	}
	slices.Sort(paused)
	return paused
}

// pausesBy counts the pauses of name in its change log (`ticker schedule log NAME --json`) by the author by
// with reason ("": any).
func pausesBy(t *testing.T, f *fleet, name, by, reason string) int {
	t.Helper()
	var log struct {
		Changes []struct {
			Op     string            `json:"op"`
			By     map[string]string `json:"by"`
			Reason string            `json:"reason"`
		} `json:"changes"`
	}
	if err := json.Unmarshal([]byte(f.cli("schedule", "log", name, "--json")), &log); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ch := range log.Changes {
		if ch.Op == "pause" && (by == "" || ch.By["name"] == by) && (reason == "" || ch.Reason == reason) {
			n++
		}
	}
	return n
}
