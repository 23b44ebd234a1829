package console

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

const testToken = "0123456789abcdef-token"

// testConsole is a console whose snapshot is made here: its pages without a broker.
func testConsole(t *testing.T, actions bool) (*Console, *httptest.Server) {
	t.Helper()
	c, err := New(Config{Namespace: "ns", Actions: actions, Auth: testAuth(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rep := &status.Report{Namespace: "ns", At: now, LeaderCount: 1, Entries: map[string]store.Entry{}}
	add := func(spec schedule.Spec, sc status.Schedule) {
		s, err := spec.Compile()
		if err != nil {
			t.Fatal(err)
		}
		rep.Entries[spec.Name] = store.Entry{Schedule: s, Version: 3, UpdatedAt: now}
		sc.Name, sc.Schedule = spec.Name, spec.Describe()
		rep.Schedules = append(rep.Schedules, sc)
	}
	zero, delay := 0, 0.012
	add(schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)}, status.Schedule{Missed: &zero,
		LastRun: &status.Run{Slot: now.Truncate(time.Second), Status: "ok", Attempts: 1, StartDelaySeconds: &delay}})
	two := 2
	add(schedule.Spec{Name: "nightly", Cron: "0 2 * * *", TZ: "Europe/Paris", Payload: "<script>alert(1)</script>", Paused: true,
		PauseReason: `<img src=x onerror="alert(1)">`}, status.Schedule{Paused: true, PauseReason: `<img src=x onerror="alert(1)">`, Missed: &two,
		MissedSlots: []time.Time{now.Add(-2 * time.Hour), now.Add(-time.Minute)}})
	c.snap.Store(&snapshot{rep: rep, at: now})
	// The detail is kept, so that the schedule page reads nothing.
	for name := range rep.Entries {
		c.details[name] = &detail{at: time.Now().Add(time.Hour)}
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

// testHash is a bcrypt hash of "s3cret" of the least cost an auth file may hold, made once.
var testHash = sync.OnceValue(func() []byte {
	h, err := bcrypt.GenerateFromPassword([]byte("s3cret"), MinCost)
	if err != nil {
		panic(err)
	}
	return h
})

// testAuth has the token (an operator) and the users alice (operator), vic (viewer) and ann (operator of the
// schedules named team-a-...), each with the password s3cret.
func testAuth(t *testing.T) *Auth {
	t.Helper()
	auth, err := NewAuth(Token{Secret: testToken}, map[string]User{"alice": {Hash: testHash(), Role: Operator},
		"vic": {Hash: testHash(), Role: Viewer}, "ann": {Hash: testHash(), Role: Operator, Prefix: "team-a-"}})
	if err != nil {
		t.Fatal(err)
	}
	return auth
}

func get(t *testing.T, srv *httptest.Server, path string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestPagesEscapeAndRefuseBadInput(t *testing.T) {
	_, srv := testConsole(t, false)
	code, body := get(t, srv, "/schedules")
	if code != 200 || !strings.Contains(body, `data-schedule="beat"`) || !strings.Contains(body, "12ms") {
		t.Fatalf("schedules: %d\n%s", code, body)
	}
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
		t.Fatalf("markup from a name or a reason reached the page:\n%s", body)
	}
	if !strings.Contains(body, `class="missed1h bad">1<`) || !strings.Contains(body, `class="missed1d bad">2<`) {
		t.Errorf("the missed slots of the last hour and day are not 1 and 2:\n%s", body)
	}
	code, body = get(t, srv, "/schedules/nightly")
	if code != 200 || strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("schedule page: %d, payload not escaped:\n%s", code, body)
	}
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/schedules/unknown", 404},
		{"/schedules/" + url.PathEscape("<b>x</b>"), 404},
		{"/schedules?page=99999999999999999999", 400},
		{"/schedules?page=-1", 400},
		{"/schedules?page=7", 404},
		{"/schedules?state=<b>", 400},
		{"/schedules?q=" + strings.Repeat("a", 300), 400},
		{"/nope", 404},
	} {
		code, body := get(t, srv, tc.path)
		if code != tc.code || strings.Contains(body, "<b>") {
			t.Errorf("%s: %d, want %d (escaped):\n%.300s", tc.path, code, tc.code, body)
		}
	}
	if code, body := get(t, srv, "/schedules?q=BE&state=active"); code != 200 || !strings.Contains(body, "1 of 2 schedule(s)") {
		t.Errorf("search: %d\n%s", code, body)
	}
	if code, body := get(t, srv, "/"); code != 200 || !strings.Contains(body, "no worker") && !strings.Contains(body, "Leaders") {
		t.Errorf("fleet: %d\n%s", code, body)
	}
}

// A schedule that excludes a calendar the namespace does not have shows no next run (its leader emits nothing of
// it: without the calendar, its days would show), and says why.
func TestScheduleMissingCalendarHasNoNextRuns(t *testing.T) {
	c, srv := testConsole(t, false)
	rep := c.snap.Load().rep
	spec := schedule.Spec{Name: "ghost", Cron: "0 12 * * *", Exclude: []string{"nope"}}
	s, err := spec.Compile()
	if err != nil {
		t.Fatal(err)
	}
	rep.Entries[spec.Name] = store.Entry{Schedule: s, Version: 1, UpdatedAt: rep.At}
	rep.Schedules = append(rep.Schedules, status.Schedule{Name: spec.Name, Schedule: spec.Describe(), MissingCalendars: []string{"nope"}})
	c.details[spec.Name] = &detail{at: time.Now().Add(time.Hour)}
	code, body := get(t, srv, "/schedules/ghost")
	if code != 200 || strings.Contains(body, `id="next"`) || !strings.Contains(body, "it excludes nope, which the namespace does not have") {
		t.Fatalf("schedule page of a schedule without its calendar: %d\n%s", code, body)
	}
}

// A chain's page links the schedule it runs after, and that schedule's page the chains that follow it.
func TestChainPagesLinkUpAndDownstream(t *testing.T) {
	c, srv := testConsole(t, false)
	rep := c.snap.Load().rep
	spec := schedule.Spec{Name: "load", After: "beat", When: schedule.WhenFailure}
	s, err := spec.Compile()
	if err != nil {
		t.Fatal(err)
	}
	rep.Entries[spec.Name] = store.Entry{Schedule: s, Version: 1, UpdatedAt: rep.At}
	rep.Schedules = append(rep.Schedules, status.Schedule{Name: spec.Name, Schedule: spec.Describe()})
	c.details[spec.Name] = &detail{at: time.Now().Add(time.Hour)}
	code, body := get(t, srv, "/schedules/load")
	if code != 200 || !strings.Contains(body, `<dd id="upstream"><a href="/schedules/beat">beat</a>: once for each of its slots that ends with failure</dd>`) ||
		!strings.Contains(body, "it runs after beat's slots, not on slots of its own") || !strings.Contains(body, "after beat (when failure)") {
		t.Fatalf("the chain's page: %d\n%s", code, body)
	}
	code, body = get(t, srv, "/schedules/beat")
	if code != 200 || !strings.Contains(body, `<dd id="downstream"><a href="/schedules/load">load</a> (when failure)</dd>`) {
		t.Fatalf("the upstream's page: %d\n%s", code, body)
	}
}

func TestActionsNeedAuthAndCSRF(t *testing.T) {
	c, srv := testConsole(t, true)
	post := func(form url.Values, hdr ...string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/schedules/beat/trigger", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(url.Values{"csrf": {c.csrfToken("token")}}); code != 401 {
		t.Errorf("an action without a token: %d, want 401", code)
	}
	if code := post(url.Values{"csrf": {c.csrfToken("token")}}, "Authorization", "Bearer wrong-token-0123456789"); code != 401 {
		t.Errorf("an action with a wrong token: %d, want 401", code)
	}
	if code := post(url.Values{}, "Authorization", "Bearer "+testToken); code != 403 {
		t.Errorf("an action without its CSRF token: %d, want 403", code)
	}
	if code := post(url.Values{"csrf": {c.csrfToken("alice")}}, "Authorization", "Bearer "+testToken); code != 403 {
		t.Errorf("an action with another user's CSRF token: %d, want 403", code)
	}
	// Bad input in a form gets a 400 naming what was wrong, before anything is written.
	form := func(action string, v url.Values) (int, string) {
		v.Set("csrf", c.csrfToken("token"))
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/schedules/beat/"+action, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		action string
		v      url.Values
		says   string
	}{
		{"backfill", url.Values{"from": {"yesterday<script>"}, "to": {"now"}}, "From: &#34;yesterday&lt;script&gt;&#34;"},
		{"backfill", url.Values{"from": {"2h"}, "to": {"now"}, "max_running": {"1000"}}, "Max running"},
		{"pause", url.Values{}, "needs a reason"},
		{"pause", url.Values{"reason": {"x"}, "until": {"soon"}}, "Until"},
		{"explode", url.Values{}, "There is no such page"},
	} {
		code, body := form(tc.action, tc.v)
		if code != 400 && !(tc.action == "explode" && code == 404) || !strings.Contains(body, tc.says) || strings.Contains(body, "<script>") {
			t.Errorf("%s %v: %d, want 400 saying %q:\n%.400s", tc.action, tc.v, code, tc.says, body)
		}
	}
	// The page shows the forms only to a user, with that user's token.
	if _, body := get(t, srv, "/schedules/beat"); strings.Contains(body, `id="trigger"`) {
		t.Error("the forms show without a user")
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/schedules/beat", nil)
	req.SetBasicAuth("alice", "s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `id="trigger"`) || !strings.Contains(string(b), c.csrfToken("alice")) || !strings.Contains(string(b), "signed in as alice") {
		t.Errorf("alice's page lacks the forms or her CSRF token:\n%s", b)
	}
	req.SetBasicAuth("alice", "wrong")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if b := string(b); resp.StatusCode != 200 || strings.Contains(b, "wrong") {
		t.Errorf("a wrong password on a read page: %d", resp.StatusCode)
	}
}

func TestConfigRefusesActionsWithoutAuth(t *testing.T) {
	if _, err := New(Config{Actions: true}, nil); !errors.Is(err, ErrActionsWithoutAuth) {
		t.Fatalf("actions without authentication: %v", err)
	}
	if _, err := NewAuth(Token{Secret: "short"}, nil); err == nil {
		t.Error("a token of 5 characters was taken")
	}
	if _, err := ReadUsers(strings.NewReader("alice:plaintext\n")); err == nil {
		t.Error("a plain-text password was taken")
	}
	users, err := ReadUsers(strings.NewReader("# users\n\nalice:" + string(testHash()) + "\nbob:" + string(testHash()) + ":viewer:team-b-\n"))
	if err != nil || len(users) != 2 || users["alice"].Role != Operator || users["bob"].Role != Viewer || users["bob"].Prefix != "team-b-" {
		t.Fatalf("a valid auth file: %v %v", users, err)
	}
}
