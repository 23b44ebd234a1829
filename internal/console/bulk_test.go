package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

// The bulk actions' tests without a broker: the form on the list, the preview, and every refusal, each made
// before anything is written (the consoles here have no Schedules client: a write would panic). The confirmed
// writes are tested end to end (internal/testing/e2e/console_bulk_test.go).

// namesConsole is testConsole with the schedules names, every minute, all active.
func namesConsole(t *testing.T, names ...string) (*Console, *httptestServer) {
	t.Helper()
	c, err := New(Config{Namespace: "ns", Actions: true, Auth: testAuth(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rep := &status.Report{Namespace: "ns", At: now, LeaderCount: 1, Entries: map[string]store.Entry{}}
	for _, name := range names {
		spec := schedule.Spec{Name: name, Every: schedule.Duration(time.Minute)}
		s, err := spec.Compile()
		if err != nil {
			t.Fatal(err)
		}
		rep.Entries[name] = store.Entry{Schedule: s, Version: 1, UpdatedAt: now}
		rep.Schedules = append(rep.Schedules, status.Schedule{Name: name, Schedule: spec.Describe()})
	}
	c.snap.Store(&snapshot{rep: rep, at: now})
	return c, newServer(t, c)
}

// postBulk posts form to /bulk as user ("token" for the bearer token), with the user's CSRF token unless the
// form has one.
func postBulk(t *testing.T, c *Console, srv *httptestServer, user string, form url.Values, hdr ...string) (int, string) {
	t.Helper()
	if form.Get("csrf") == "" {
		form.Set("csrf", c.csrfToken(user))
	}
	auth := "Bearer " + testToken
	if user != "token" {
		auth = basic(user)
	}
	code, _, body := do(t, srv.URL, http.MethodPost, "/bulk", form, append([]string{"Authorization", auth}, hdr...)...)
	return code, body
}

// confirmForm is the preview's confirm form.
func confirmForm(t *testing.T, body string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, `<form method="post" action="/bulk">`)
	if !ok {
		t.Fatalf("the preview has no confirm form:\n%s", body)
	}
	form, _, _ := strings.Cut(rest, "</form>")
	return form
}

func TestBulkFormOnTheSchedulesPage(t *testing.T) {
	c, srv := testConsole(t, true)
	code, _, body := do(t, srv.URL, http.MethodGet, "/schedules?q=e&state=active", nil, "Authorization", basic("alice"))
	for _, want := range []string{`<form method="post" action="/bulk" id="bulk">`, `name="csrf" value="` + c.csrfToken("alice") + `"`,
		`type="checkbox" name="name" value="beat"`, `name="q" value="e"`, `name="state" value="active"`, `value="search"`, `value="selected"`} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("an operator's list: %d, lacks %q:\n%s", code, want, body)
		}
	}
	if strings.Contains(body, `http-equiv="refresh"`) {
		t.Error("an operator's list refreshes itself: a selection would be lost")
	}
	// One form around the table: its checkboxes are inside it.
	if i, j, k := strings.Index(body, `id="bulk"`), strings.Index(body, `type="checkbox"`), strings.LastIndex(body, "</form>"); i < 0 || j < i || k < j {
		t.Error("the checkboxes are not inside the bulk form")
	}
	for _, hdr := range [][]string{{"Authorization", basic("vic")}, {"Authorization", ""}} {
		if _, _, body := do(t, srv.URL, http.MethodGet, "/schedules", nil, hdr...); strings.Contains(body, `id="bulk"`) || strings.Contains(body, "checkbox") {
			t.Errorf("a viewer or an anonymous reader (%q) gets the bulk form", hdr[1])
		}
	}
	_, off := testConsole(t, false)
	if _, _, body := do(t, off.URL, http.MethodGet, "/schedules", nil, "Authorization", basic("alice")); strings.Contains(body, `id="bulk"`) {
		t.Error("the bulk form shows with actions off")
	}
}

// A preview says which schedules change and how, and its form confirms exactly those.
func TestBulkPreview(t *testing.T) {
	c, srv := testConsole(t, true) // beat is active, nightly paused
	for _, tc := range []struct {
		form             url.Values
		change, unchange string
	}{
		{url.Values{"action": {"pause"}, "reason": {"maintenance <b>now</b>"}, "scope": {"search"}}, "beat", "nightly"},
		{url.Values{"action": {"resume"}, "scope": {"selected"}, "name": {"nightly", "beat", "nightly"}}, "nightly", "beat"},
		{url.Values{"action": {"trigger"}, "scope": {"search"}, "q": {"NIGHT"}, "state": {"paused"}, "name": {"beat"}}, "nightly", ""},
	} {
		code, body := postBulk(t, c, srv, "token", tc.form)
		if code != 200 || !strings.Contains(body, `<tr class="change" data-schedule="`+tc.change+`">`) {
			t.Errorf("%v: %d, %s not to change:\n%s", tc.form, code, tc.change, body)
			continue
		}
		if tc.unchange != "" && !strings.Contains(body, `<tr class="unchanged" data-schedule="`+tc.unchange+`">`) {
			t.Errorf("%v: %s not shown unchanged:\n%s", tc.form, tc.unchange, body)
		}
		form := confirmForm(t, body)
		if strings.Count(form, `name="name"`) != 1 || !strings.Contains(form, `name="name" value="`+tc.change+`"`) || !strings.Contains(form, `name="confirm" value="1"`) {
			t.Errorf("%v: the confirm form is not of exactly %s:\n%s", tc.form, tc.change, form)
		}
		if strings.Contains(body, "<b>now") {
			t.Error("the reason's markup reached the page")
		}
	}
	// A pause's end is carried as an instant; a selection that changes nothing has no confirm.
	_, body := postBulk(t, c, srv, "alice", url.Values{"action": {"pause"}, "reason": {"r"}, "until": {"2h"}, "scope": {"selected"}, "name": {"beat"}})
	if until := time.Now().Add(2 * time.Hour).UTC().Format("2006-01-02T15"); !strings.Contains(confirmForm(t, body), `name="until" value="`+until) {
		t.Errorf("the confirm does not carry the pause's end (%s...):\n%s", until, body)
	}
	code, body := postBulk(t, c, srv, "alice", url.Values{"action": {"pause"}, "reason": {"r"}, "scope": {"selected"}, "name": {"nightly"}})
	if code != 200 || strings.Contains(body, `id="bulk-confirm"`) || !strings.Contains(body, "already paused") {
		t.Errorf("a pause of a paused schedule: %d, offered a confirm:\n%s", code, body)
	}
}

// Every refusal is a 4xx that says what was wrong, before anything is written.
func TestBulkRefusals(t *testing.T) {
	c, srv := testConsole(t, true)
	many := make([]string, maxBulk+1)
	for i := range many {
		many[i] = fmt.Sprintf("s%03d", i)
	}
	for _, tc := range []struct {
		user string
		form url.Values
		code int
		says string
	}{
		{"vic", url.Values{"action": {"pause"}, "reason": {"r"}, "scope": {"search"}}, 403, "operator role"},
		{"token", url.Values{"action": {"pause"}, "reason": {"r"}, "scope": {"search"}, "csrf": {c.csrfToken("alice")}}, 403, "CSRF"},
		{"token", url.Values{"action": {"explode<b>"}, "scope": {"search"}}, 400, "Action &#34;explode&lt;b&gt;&#34;: want pause, resume or trigger"},
		{"token", url.Values{"action": {"pause"}, "scope": {"search"}}, 400, "a pause needs a reason"},
		{"token", url.Values{"action": {"trigger"}, "reason": {"ok\x01"}, "scope": {"search"}}, 400, "reason: holds a control character"},
		{"token", url.Values{"action": {"resume"}, "reason": {strings.Repeat("é", 600)}, "scope": {"search"}}, 400, "reason: 1,200 bytes, at most 1,024"},
		{"token", url.Values{"action": {"pause"}, "reason": {"r"}, "until": {"soon"}, "scope": {"search"}}, 400, "Until: &#34;soon&#34;"},
		{"token", url.Values{"action": {"trigger"}, "until": {"2h"}, "scope": {"search"}}, 400, "Until: only a pause has an end"},
		{"token", url.Values{"action": {"trigger"}, "scope": {"everything"}}, 400, "Scope &#34;everything&#34;"},
		{"token", url.Values{"action": {"trigger"}, "scope": {"selected"}}, 400, "The selection matches no schedule"},
		{"token", url.Values{"action": {"trigger"}, "scope": {"search"}, "q": {"zzz"}}, 400, "The search (name contains &#34;zzz&#34;) matches no schedule"},
		{"token", url.Values{"action": {"trigger"}, "scope": {"search"}, "state": {"gone"}}, 400, "State &#34;gone&#34;"},
		{"token", url.Values{"action": {"trigger"}, "scope": {"selected"}, "name": {"beat", "<b>x</b>"}}, 400, "Schedule &#34;&lt;b&gt;x&lt;/b&gt;&#34;: not a schedule of yours"},
		{"token", url.Values{"action": {"trigger"}, "scope": {"selected"}, "name": many}, 400, "101 schedules are selected; a bulk action takes at most 100"},
		// A confirm is checked again, before the library is called (it has none here: a write would panic).
		{"token", url.Values{"action": {"pause"}, "reason": {"ok\x7f"}, "confirm": {"1"}, "name": {"beat"}}, 400, "reason: holds a control character"},
		{"token", url.Values{"action": {"pause"}, "reason": {"r"}, "confirm": {"1"}, "name": many}, 400, "at most 100"},
		{"token", url.Values{"action": {"pause"}, "reason": {"r"}, "confirm": {"1"}}, 400, "matches no schedule"},
	} {
		code, body := postBulk(t, c, srv, tc.user, tc.form)
		if code != tc.code || !strings.Contains(body, tc.says) || strings.Contains(body, "<b>x") {
			t.Errorf("%s %v: %d, want %d saying %q:\n%.600s", tc.user, tc.form, code, tc.code, tc.says, body)
		}
	}
	if code, _, _ := do(t, srv.URL, http.MethodPost, "/bulk", url.Values{"action": {"trigger"}, "scope": {"search"}}); code != 401 {
		t.Errorf("a bulk action without credentials: %d, want 401", code)
	}
	if code, _ := postBulk(t, c, srv, "token", url.Values{"action": {"trigger"}, "scope": {"search"}}, "Sec-Fetch-Site", "cross-site"); code != 403 {
		t.Errorf("a cross-site bulk action: %d, want 403", code)
	}
	off, offSrv := testConsole(t, false)
	if code, _ := postBulk(t, off, offSrv, "token", url.Values{"action": {"trigger"}, "scope": {"search"}}); code != 404 {
		t.Errorf("a bulk action with actions off: %d, want 404", code)
	}
	var m dto.Metric
	if err := c.metrics.actions.WithLabelValues("bulk_pause", "refused").Write(&m); err != nil || m.GetCounter().GetValue() < 4 {
		t.Errorf("bulk_pause refusals counted: %v %v, want 4 or more", m.GetCounter().GetValue(), err)
	}
}

// A search past the bound is refused with the count; a scoped operator's bulk action is of its own schedules
// only, and another team's, existing or not, is refused in the same words.
func TestBulkBoundAndPrefix(t *testing.T) {
	names := []string{"team-b-beat"}
	for i := range maxBulk + 1 {
		names = append(names, fmt.Sprintf("team-a-%03d", i))
	}
	c, srv := namesConsole(t, names...)
	code, body := postBulk(t, c, srv, "ann", url.Values{"action": {"trigger"}, "scope": {"search"}})
	if code != 400 || !strings.Contains(body, "The search (any name) matches 101 schedules; a bulk action takes at most 100") {
		t.Errorf("a search of 101: %d\n%.600s", code, body)
	}
	code, body = postBulk(t, c, srv, "ann", url.Values{"action": {"trigger"}, "scope": {"search"}, "q": {"team-a-00"}})
	if code != 200 || strings.Count(body, `<tr class="change"`) != 10 || strings.Contains(body, "team-b-") {
		t.Errorf("ann's search of team-a-00: %d, not exactly her 10 schedules:\n%s", code, body)
	}
	code, body = postBulk(t, c, srv, "ann", url.Values{"action": {"trigger"}, "scope": {"search"}, "q": {"team-b"}})
	if code != 400 || !strings.Contains(body, "matches no schedule") {
		t.Errorf("ann's search of team-b: %d\n%.600s", code, body)
	}
	for _, name := range []string{"team-b-beat", "team-b-nope"} {
		for _, confirm := range []string{"", "1"} {
			code, body := postBulk(t, c, srv, "ann", url.Values{"action": {"pause"}, "reason": {"r"}, "scope": {"selected"}, "confirm": {confirm}, "name": {"team-a-000", name}})
			if code != 400 || !strings.Contains(body, "Schedule &#34;"+name+"&#34;: not a schedule of yours") {
				t.Errorf("ann acting on %s (confirm %q): %d\n%.600s", name, confirm, code, body)
			}
		}
	}
	code, body = postBulk(t, c, srv, "alice", url.Values{"action": {"trigger"}, "scope": {"search"}, "q": {"team-b"}})
	if code != 200 || !strings.Contains(body, `data-schedule="team-b-beat"`) {
		t.Errorf("alice, unscoped, searching team-b: %d\n%.600s", code, body)
	}
}
