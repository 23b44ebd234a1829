package e2e

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"golang.org/x/crypto/bcrypt"

	"github.com/tickgroup/tickgroup/internal/console"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// chromium returns the path of a Chromium (or Chrome) binary. Without one the test is skipped, unless CI=true:
// there .ci/run installs it, and its absence is a failure.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium found (CI=true: .ci/run installs Debian's chromium; set CHROMIUM to its path)")
	}
	t.Skip("no Chromium found (install Debian's chromium, or set CHROMIUM)")
	return ""
}

// browser is a headless Chromium driven by the test, as a user would click.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func newBrowser(t *testing.T, path string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first call starts the browser, on a context without a timeout (it would stop the browser).
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}

// do runs steps, failing the test on an error (within 30 s). Steps that a page's own reload cut short (see
// value) run again on the reloaded page: Chromium answers so before it dispatches a click, never after.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	for {
		err := chromedp.Do(ctx, steps...)
		if err == nil {
			return
		}
		if !reloaded(err) || ctx.Err() != nil {
			b.t.Fatalf("browser, %s: %v", what, err)
		}
	}
}

// value runs a, which returns a value, failing the test on an error (within 30 s). A read that a page's own
// reload cut short (the console's pages refresh themselves every --refresh: the node read or the script's context
// is gone) is run again on the reloaded page.
func value[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	for {
		v, err := chromedp.Run(ctx, a)
		if err == nil {
			return v
		}
		if !reloaded(err) || ctx.Err() != nil {
			b.t.Fatalf("browser, %s: %v", what, err)
		}
	}
}

// reloaded reports whether err is Chromium's answer to a read of a page that reloaded meanwhile.
func reloaded(err error) bool {
	for _, s := range []string{"No node with given id", "Could not find node with given id", "Execution context was destroyed",
		"Cannot find context with specified id", "Inspected target navigated or closed"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// tryValue runs a, which returns a value; an error (the page navigating away meanwhile) is returned, for a
// condition that polls.
func tryValue[T any](b *browser, a chromedp.Action[T]) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	return chromedp.Run(ctx, a)
}

// page loads u and returns its HTML.
func (b *browser) page(u string) string {
	b.t.Helper()
	b.do("loading "+u, chromedp.Navigate(u))
	return value(b, "reading "+u, chromedp.OuterHTML(chromedp.CSS("html")))
}

// text returns the text of the first element sel matches on the current page ("" when none does).
func (b *browser) text(sel string) string {
	b.t.Helper()
	return value(b, "reading "+sel, chromedp.Evaluate[string](`(function(e){return e ? e.innerText : ""})(document.querySelector(`+strconv.Quote(sel)+`))`))
}

// submit clicks sel (a form's button) and waits until the page it leads to has loaded: the old page is marked
// first, and the new one does not carry the mark.
func (b *browser) submit(what, sel string) {
	b.t.Helper()
	value(b, what, chromedp.Evaluate[int](`window.__before = 1`))
	b.do(what, chromedp.Click(chromedp.CSS(sel)))
	waitFor(b.t, 30*time.Second, what+": the next page", func() (bool, string) {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		defer cancel()
		loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__before === undefined && document.readyState === "complete"`))
		return err == nil && loaded, ""
	})
}

// shot saves a screenshot of the current page as name in $CONSOLE_SCREENSHOTS, when it is set (docs/console.md's
// images are made so).
func (b *browser) shot(name string) {
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		return
	}
	img := value(b, "screenshot", chromedp.FullScreenshot(100)) // PNG
	if err := os.WriteFile(filepath.Join(dir, name+".png"), img, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// TestE2EConsoleInABrowser drives `ticker console --actions` in headless Chromium against a running fleet: the
// schedules page shows a schedule's last run with its start delay; a schedule of a pool without workers shows
// missed slots within a minute; clicking trigger makes a run appear on the schedule's page; pausing with a reason
// shows the reason and stops the slots; a backfill's preview lists exactly the slots that then run; an action
// without a token gets 401 and a form without its CSRF token is refused.
func TestE2EConsoleInABrowser(t *testing.T) {
	path := chromium(t)
	e := setup(t)
	f := e.f
	f.cli("schedule", "put", "beat", "--every", "1s")
	f.cli("schedule", "put", "filler", "--every", "1s")
	f.cli("schedule", "put", "idle-job", "--every", "1s", "--pool", "idle") // no worker serves pool idle
	f.cli("schedule", "put", "team-a-report", "--every", "1h")
	f.cli("schedule", "put", "team-b-report", "--every", "1h")
	f.cli("schedule", "put", "after-beat", "--after", "beat", "--when", "failure")
	created := time.Now().Truncate(time.Second)
	f.ticker("a")
	e.start(nil, "--exec", handlerBin, "--record-output", "256")

	token := "console-e2e-token-0123456789"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Users: vic views everything, ann operates team-a-'s schedules.
	hash, err := bcrypt.GenerateFromPassword([]byte("pw-0123456789"), console.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	authFile := filepath.Join(t.TempDir(), "users")
	if err := os.WriteFile(authFile, []byte("vic:"+string(hash)+":viewer\nann:"+string(hash)+":operator:team-a-\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	c := f.start("console", "ticker", "console", "--listen", addr, "--actions", "--token-file", tokenFile, "--auth-file", authFile,
		"--show-output", "--refresh", "2s", "--grace", "5s")
	c.waitLog(t, "namespace read", 60*time.Second)
	base := "http://" + addr
	b := newBrowser(t, path)

	// The schedules page: beat's last run with its start delay.
	waitFor(t, 60*time.Second, "beat's last run on the schedules page", func() (bool, string) {
		b.page(base + "/schedules")
		d := b.text(`tr[data-schedule="beat"] td.delay`)
		return d != "-" && d != "", "delay " + d
	})
	b.shot("schedules")
	// A pool without workers: missed slots within a minute of the schedule's creation.
	waitFor(t, 60*time.Second-time.Since(created), "idle-job's missed slots", func() (bool, string) {
		b.page(base + "/schedules?state=missed")
		n := b.text(`tr[data-schedule="idle-job"] td.missed1h`)
		return n != "" && n != "0" && n != "?", "missed " + n
	})
	waitFor(t, 30*time.Second, "the fleet page's clocks", func() (bool, string) {
		html := b.page(base + "/")
		return strings.Contains(html, `id="clocks"`) && strings.Contains(html, "<td>a</td>"), "no clock row of ticker a"
	})
	b.shot("fleet")

	// A chain's page links the schedule it runs after; a click on it leads there, whose page links the chain.
	if html := b.page(base + "/schedules/after-beat"); !strings.Contains(html, `id="upstream"`) {
		t.Fatalf("the chain's page shows no upstream:\n%s", html)
	}
	b.submit("following the chain's upstream link", "#upstream a")
	if got := b.text("#downstream"); got != "after-beat (when failure)" {
		t.Errorf("beat's page, reached by the chain's link, lists as followers %q, want after-beat (when failure)", got)
	}

	// Without a token the schedule page has no forms, and an action is refused with 401.
	if html := b.page(base + "/schedules/beat"); strings.Contains(html, `id="trigger"`) {
		t.Error("the action forms show without authentication")
	}
	resp, err := http.PostForm(base+"/schedules/beat/trigger", url.Values{"csrf": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an action without a token: %d, want 401", resp.StatusCode)
	}

	// With the token: trigger, and the run appears on the page.
	if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": "Bearer " + token}}); err != nil {
		t.Fatal(err)
	}
	b.page(base + "/schedules/beat")
	b.submit("clicking trigger", "#trigger")
	waitFor(t, 30*time.Second, "the triggered run on beat's page, with its output", func() (bool, string) {
		html := b.page(base + "/schedules/beat")
		return strings.Contains(html, "~trigger-") && strings.Contains(html, `<pre class="output">ran beat@`), ""
	})
	b.shot("schedule")

	// A form whose CSRF token was taken out is refused.
	b.page(base + "/schedules/beat")
	value(b, "taking the CSRF token out", chromedp.Evaluate[string](`document.querySelector('form[action$="/trigger"] input[name=csrf]').value = ""`))
	b.submit("posting without the CSRF token", "#trigger")
	if msg := b.text("#error"); !strings.Contains(msg, "CSRF") {
		t.Errorf("a form without its CSRF token: %q", msg)
	}

	// An action whose reason the change log would refuse is refused before anything is written (400), and
	// logged by the console.
	resp, err = postAs(base+"/schedules/beat/trigger", "Bearer "+token, url.Values{"reason": {"ok\x01"}, "csrf": {csrfOf(t, base+"/schedules/beat", "Bearer "+token)}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a trigger with a control character in its reason: %d, want 400", resp.StatusCode)
	}
	c.waitLog(t, "console action refused", 10*time.Second)
	if out := f.cli("schedule", "log", "beat"); strings.Count(out, "~trigger-") != 1 {
		t.Errorf("the change log holds other than the one trigger:\n%s", out)
	}

	// Pause with a reason: the page shows it, and no slot after the pause runs.
	reason := `nightly <b>vacuum</b> & "reindex"`
	b.page(base + "/schedules/beat")
	b.do("typing the reason", chromedp.SendKeys(chromedp.CSS("#pause-reason"), reason))
	b.submit("pausing", "#pause")
	pausedAt := time.Now()
	waitFor(t, 30*time.Second, "the pause and its reason on beat's page", func() (bool, string) {
		b.page(base + "/schedules/beat")
		st := b.text("#state")
		return strings.HasPrefix(st, "paused") && strings.Contains(st, reason), st
	})
	if out := f.cli("schedule", "log", "beat"); !strings.Contains(out, "console:token") || !strings.Contains(out, "pause") || !strings.Contains(out, "trigger") {
		t.Errorf("the change log lacks the console's trigger and pause under its user:\n%s", out)
	}
	later := pausedAt.Truncate(time.Second).Add(5 * time.Second)
	waitFor(t, 30*time.Second, "filler's slots after the pause", func() (bool, string) {
		return len(e.executions()[tick.ID("filler", later, 0, 1)]) > 0, ""
	})
	for id := range e.executions() {
		if slot, ok := slotOf(id); ok && strings.HasPrefix(id, "beat@") && slot.After(pausedAt.Add(time.Second)) {
			t.Errorf("beat's slot %s ran after the pause (%s)", slot.Format(time.TimeOnly), pausedAt.Format("15:04:05.000"))
		}
	}

	// A backfill's preview lists exactly the slots that then run.
	from, to := created.Add(-20*time.Second), created.Add(-5*time.Second)
	b.page(base + "/schedules/filler")
	b.do("filling the backfill form",
		chromedp.SendKeys(chromedp.CSS("#bf-from"), from.UTC().Format(time.RFC3339)),
		chromedp.SendKeys(chromedp.CSS("#bf-to"), to.UTC().Format(time.RFC3339)))
	b.submit("previewing a backfill", "#bf-preview")
	previewed := value(b, "reading the preview", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#preview tr.run td.slot")).map(e => e.textContent)`))
	if len(previewed) != 15 {
		t.Fatalf("the preview lists %d slots to run, want the 15 of [%s, %s)", len(previewed), from.Format(time.TimeOnly), to.Format(time.TimeOnly))
	}
	b.shot("backfill-preview")
	b.submit("confirming the backfill", "#bf-confirm")
	var ran []string
	waitFor(t, 60*time.Second, "the backfill's runs", func() (bool, string) {
		ran = ran[:0]
		for id := range e.executions() {
			if rest, ok := strings.CutPrefix(id, "filler@"); ok && strings.Contains(rest, "~backfill-") {
				slot, _, _ := strings.Cut(rest, "~")
				ran = append(ran, slot)
			}
		}
		return len(ran) >= len(previewed), strings.Join(ran, " ")
	})
	slices.Sort(ran)
	if !slices.Equal(ran, previewed) {
		t.Errorf("the backfill ran %v, its preview listed %v", ran, previewed)
	}
	if html := b.page(base + "/schedules/filler"); !strings.Contains(html, `id="backfills"`) {
		t.Error("the backfill is not on the schedule's page")
	}
	if n := c.metric("tickgroup_console_requests_total"); n == 0 {
		t.Error("the console's metrics count no request")
	}

	// Roles: a viewer sees no form and its POST is refused; an operator scoped to team-a- sees none of team-b-.
	as := func(user string) {
		auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":pw-0123456789"))
		if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
			t.Fatal(err)
		}
	}
	as("vic")
	if html := b.page(base + "/schedules/team-b-report"); strings.Contains(html, `<form method="post"`) || !strings.Contains(html, "signed in as vic") {
		t.Error("a viewer is shown the action forms")
	}
	resp, err = postAs(base+"/schedules/team-b-report/trigger", "Basic "+base64.StdEncoding.EncodeToString([]byte("vic:pw-0123456789")), url.Values{"csrf": {"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's trigger: %d, want 403", resp.StatusCode)
	}
	as("ann")
	html := b.page(base + "/schedules")
	if !strings.Contains(html, `data-schedule="team-a-report"`) || strings.Contains(html, "team-b-") || strings.Contains(html, `data-schedule="beat"`) {
		t.Errorf("ann's schedules page shows others' schedules, or not hers:\n%s", html)
	}
	if html := b.page(base + "/schedules/team-b-report"); !strings.Contains(html, "404") {
		t.Error("ann can open team-b-report")
	}
	if html := b.page(base + "/schedules/team-a-report"); !strings.Contains(html, `id="trigger"`) {
		t.Error("ann, an operator, has no forms on her team's schedule")
	}
	b.shot("scoped")
}

// postAs posts form to u with the Authorization header auth.
func postAs(u, auth string, form url.Values) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	return resp, err
}

// csrfOf reads the CSRF token of the first form of page u, as auth sees it.
func csrfOf(t *testing.T, u, auth string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_, rest, ok := strings.Cut(string(b), `name="csrf" value="`)
	if !ok {
		t.Fatalf("no CSRF token on %s", u)
	}
	tok, _, _ := strings.Cut(rest, `"`)
	return tok
}
