package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

// The tests of docs/console.md's "Safe to expose", one per finding of the security review; each fails on the
// console before it.

// do sends a request to srv and returns its code, headers and body.
func do(t *testing.T, srv string, method, path string, form url.Values, hdr ...string) (int, http.Header, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, srv+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func basic(user string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, "s3cret")
	return req.Header.Get("Authorization")
}

// M2: DNS rebinding. A host the console is not reached under gets 421.
func TestHostHeaderIsChecked(t *testing.T) {
	_, srv := testConsole(t, false)
	for host, want := range map[string]int{"rebind.attacker.example:8080": 421, "rebind.attacker.example": 421, "127.0.0.1": 200, "localhost:8080": 200, "[::1]:8080": 200} {
		if code, _, _ := do(t, srv.URL, http.MethodGet, "/schedules", nil, "Host", host); code != want {
			t.Errorf("Host %s: %d, want %d", host, code, want)
		}
	}
	c, err := New(Config{AllowedHosts: []string{"console.example.com,ops.example.com"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.hosts.allowed("console.example.com:443") || !c.hosts.allowed("OPS.example.com") || c.hosts.allowed("example.com") {
		t.Error("--allowed-host names are not taken as they should")
	}
	if _, err := New(Config{AllowedHosts: []string{"https://console.example.com/"}}, nil); err == nil {
		t.Error("an allowed host with a scheme was taken")
	}
}

// M5: a POST from another site is refused before its form is read, whatever token it carries.
func TestCrossSitePostIsRefused(t *testing.T) {
	c, srv := testConsole(t, true)
	form := url.Values{"csrf": {c.csrfToken("token")}}
	for _, hdr := range [][]string{{"Origin", "https://evil.example"}, {"Sec-Fetch-Site", "cross-site"}} {
		code, _, body := do(t, srv.URL, http.MethodPost, "/schedules/beat/trigger", form, "Authorization", "Bearer "+testToken, hdr[0], hdr[1])
		if code != 403 || !strings.Contains(body, "another site") {
			t.Errorf("a POST with %s: %s: %d, want 403\n%.300s", hdr[0], hdr[1], code, body)
		}
	}
}

// M5: the CSRF token is bound to its user and to the hour: a token of two hours ago is refused.
func TestCSRFTokenExpires(t *testing.T) {
	c, _ := testConsole(t, true)
	check := func(tok string) bool {
		r, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return c.csrfOK(r, "alice")
	}
	now := time.Now()
	if !check(c.csrfTokenAt("alice", now)) || !check(c.csrfTokenAt("alice", now.Add(-csrfWindow))) {
		t.Error("this hour's or the last hour's token is refused")
	}
	if check(c.csrfTokenAt("alice", now.Add(-2*csrfWindow))) || check(c.csrfTokenAt("bob", now)) || check("") || check("%%%") {
		t.Error("a token of two hours ago, another user's, or none was taken")
	}
	if c.csrfTokenAt("alice", now) == c.csrfTokenAt("alice", now.Add(-2*csrfWindow)) {
		t.Error("the token does not change with the hour")
	}
}

// M5: pages with forms are not cached.
func TestPagesAreNotCached(t *testing.T) {
	_, srv := testConsole(t, true)
	code, h, body := do(t, srv.URL, http.MethodGet, "/schedules/beat", nil, "Authorization", basic("alice"))
	if code != 200 || !strings.Contains(body, `name="csrf"`) || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("a page with forms: %d, Cache-Control %q", code, h.Get("Cache-Control"))
	}
	if h.Get("Content-Security-Policy") == "" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("security headers missing: %v", h)
	}
}

// M3: weak hashes, unknown roles and the token's name are refused at start, naming the line.
func TestAuthFileRefusals(t *testing.T) {
	weak, _ := bcrypt.GenerateFromPassword([]byte("pw"), 5)
	for _, tc := range []struct{ file, says string }{
		{"# x\nalice:" + string(weak) + "\n", "line 2: alice: bcrypt cost 5"},
		{"alice:" + string(testHash()) + ":root\n", `line 1: alice: unknown role "root"`},
		{"token:" + string(testHash()) + "\n", "line 1: the name \"token\" is reserved"},
		{"alice:" + string(testHash()) + "\nalice:" + string(testHash()) + "\n", "line 2: user alice is named twice"},
		{"alice:" + string(testHash()) + ":viewer:a:b\n", "line 1: want name:bcrypt-hash"},
	} {
		_, err := ReadUsers(strings.NewReader(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want an error saying %q", tc.file, err, tc.says)
		}
	}
	if _, err := NewAuth(Token{}, map[string]User{"alice": {Hash: weak}}); err == nil {
		t.Error("NewAuth took a hash of cost 5")
	}
}

// M3: an unknown name costs what the costliest known one does.
func TestDummyHashIsAsCostlyAsTheFile(t *testing.T) {
	h11, _ := bcrypt.GenerateFromPassword([]byte("pw"), 11)
	a, err := NewAuth(Token{}, map[string]User{"alice": {Hash: testHash()}, "bob": {Hash: h11}})
	if err != nil {
		t.Fatal(err)
	}
	if cost, err := bcrypt.Cost(a.dummy); err != nil || cost != 11 {
		t.Errorf("the dummy hash's cost: %d %v, want 11", cost, err)
	}
}

// M3: after failedLimit failures an address waits, the right password included, and gets 429.
func TestFailedSignInsAreThrottled(t *testing.T) {
	_, srv := testConsole(t, true)
	wrong := func() int {
		code, _, _ := do(t, srv.URL, http.MethodGet, "/login", nil, "Authorization", "Basic "+b64("alice:wrong"))
		return code
	}
	for i := range failedLimit {
		if code := wrong(); code != 401 {
			t.Fatalf("failure %d: %d, want 401", i+1, code)
		}
	}
	code, h, _ := do(t, srv.URL, http.MethodGet, "/login", nil, "Authorization", basic("alice"))
	if code != 429 || h.Get("Retry-After") == "" {
		t.Fatalf("a sign-in after %d failures: %d (Retry-After %q), want 429", failedLimit, code, h.Get("Retry-After"))
	}
}

func b64(s string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	u, p, _ := strings.Cut(s, ":")
	req.SetBasicAuth(u, p)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

// M3: password checks are bounded; past the bound a sign-in gets 503 rather than a queue of bcrypt runs.
func TestPasswordChecksAreBounded(t *testing.T) {
	c, srv := testConsole(t, true)
	n := int64(0)
	for c.cfg.Auth.compares.TryAcquire(1) {
		n++
	}
	defer c.cfg.Auth.compares.Release(n)
	code, h, _ := do(t, srv.URL, http.MethodGet, "/login", nil, "Authorization", basic("alice"))
	if code != 503 || h.Get("Retry-After") == "" {
		t.Fatalf("a sign-in while every check is busy: %d, want 503 with Retry-After", code)
	}
}

// L1: a password longer than bcrypt reads is refused, not cut, and the cache of passed passwords is bounded.
func TestLongPasswordsAndTheCache(t *testing.T) {
	long := strings.Repeat("x", 72)
	h, _ := bcrypt.GenerateFromPassword([]byte(long), MinCost)
	a, err := NewAuth(Token{}, map[string]User{"alice": {Hash: h}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, _ := a.checkPassword(ctx, "alice", long); !ok {
		t.Fatal("the 72-byte password is refused")
	}
	if ok, _ := a.checkPassword(ctx, "alice", long+"suffix"); ok {
		t.Error("a password past 72 bytes passed (bcrypt would cut it)")
	}
	e := newExpiring(3)
	for i := range 10 {
		e.put(fmt.Sprint(i), time.Now(), 0)
	}
	if len(e.m) > 3 {
		t.Errorf("the cache holds %d entries, cap 3", len(e.m))
	}
}

// Roles: a viewer gets no forms and a 403 on POST; an operator scoped to team-a- sees none of team-b-'s
// schedules and cannot act on them.
func TestRolesAndPrefixes(t *testing.T) {
	c, srv := rolesConsole(t)
	code, _, body := do(t, srv.URL, http.MethodGet, "/schedules/team-a-beat", nil, "Authorization", basic("vic"))
	if code != 200 || strings.Contains(body, `<form method="post"`) || !strings.Contains(body, "signed in as vic") {
		t.Errorf("a viewer's page: %d, forms shown:\n%.500s", code, body)
	}
	code, _, _ = do(t, srv.URL, http.MethodPost, "/schedules/team-a-beat/trigger", url.Values{"csrf": {c.csrfToken("vic")}}, "Authorization", basic("vic"))
	if code != 403 {
		t.Errorf("a viewer's POST: %d, want 403", code)
	}
	_, _, body = do(t, srv.URL, http.MethodGet, "/schedules", nil, "Authorization", basic("ann"))
	if !strings.Contains(body, `data-schedule="team-a-beat"`) || strings.Contains(body, "team-b-") || !strings.Contains(body, "1 of 1 schedule(s)") {
		t.Errorf("ann's list shows another team's schedules or misses hers:\n%s", body)
	}
	if code, _, _ := do(t, srv.URL, http.MethodGet, "/schedules/team-b-beat", nil, "Authorization", basic("ann")); code != 404 {
		t.Errorf("ann reading team-b-beat: %d, want 404", code)
	}
	if code, _, _ := do(t, srv.URL, http.MethodPost, "/schedules/team-b-beat/trigger", url.Values{"csrf": {c.csrfToken("ann")}}, "Authorization", basic("ann")); code != 404 {
		t.Errorf("ann triggering team-b-beat: %d, want 404", code)
	}
	if _, _, body := do(t, srv.URL, http.MethodGet, "/", nil, "Authorization", basic("ann")); !strings.Contains(body, "1 schedule(s)") {
		t.Errorf("ann's fleet page counts others' schedules:\n%s", body)
	}
}

// rolesConsole is testConsole with the schedules team-a-beat and team-b-beat.
func rolesConsole(t *testing.T) (*Console, *httptestServer) {
	t.Helper()
	c, err := New(Config{Namespace: "ns", Actions: true, Auth: testAuth(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rep := &status.Report{Namespace: "ns", At: now, LeaderCount: 1, Entries: map[string]store.Entry{}}
	for _, name := range []string{"team-a-beat", "team-b-beat"} {
		spec := schedule.Spec{Name: name, Every: schedule.Duration(time.Minute)}
		s, err := spec.Compile()
		if err != nil {
			t.Fatal(err)
		}
		rep.Entries[name] = store.Entry{Schedule: s, Version: 1, UpdatedAt: now}
		rep.Schedules = append(rep.Schedules, status.Schedule{Name: name, Schedule: spec.Describe()})
		c.details[name] = &detail{at: now.Add(time.Hour)}
	}
	c.snap.Store(&snapshot{rep: rep, at: now})
	return c, newServer(t, c)
}

// H1: the schedule pages' reads are bounded in number, overall and per client (503 with Retry-After past it);
// a read whose clients all hung up is dropped; and after 200 clients asked for distinct pages and hung up, a
// fresh page answers at once.
func TestDetailReadsAreBoundedAndDropped(t *testing.T) {
	c, err := New(Config{Namespace: "ns"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rep := &status.Report{Namespace: "ns", At: now, LeaderCount: 1, Entries: map[string]store.Entry{}}
	for i := range 300 {
		spec := schedule.Spec{Name: fmt.Sprintf("s%03d", i), Every: schedule.Duration(time.Minute)}
		s, _ := spec.Compile()
		rep.Entries[spec.Name] = store.Entry{Schedule: s, Version: 1, UpdatedAt: now}
		rep.Schedules = append(rep.Schedules, status.Schedule{Name: spec.Name, Schedule: spec.Describe()})
	}
	c.snap.Store(&snapshot{rep: rep, at: now})
	var started, dropped atomic.Int64
	release := make(chan struct{})
	c.readOne = func(ctx context.Context, _ store.Entry, name string) *detail {
		started.Add(1)
		if name == "s299" { // the fresh page: read at once
			return &detail{at: time.Now()}
		}
		select {
		case <-ctx.Done():
			dropped.Add(1)
			return &detail{at: time.Now(), err: ctx.Err()}
		case <-release:
			return &detail{at: time.Now()}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.runCtx.Store(&ctx)
	srv := newServer(t, c)

	// One client (one address) may have maxClientFlights reads under way: its next distinct page gets 503.
	clientCtx, hangUp := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range maxClientFlights {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(clientCtx, http.MethodGet, srv.URL+fmt.Sprintf("/schedules/s%03d", i), nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	waitFor(t, "the client's reads to start", func() bool { return started.Load() == maxClientFlights })
	code, h, body := do(t, srv.URL, http.MethodGet, "/schedules/s100", nil)
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(body, "too many schedule pages") || !strings.Contains(body, "s100") {
		t.Fatalf("a third read of one client: %d (Retry-After %q), want 503 with the schedule's facts\n%.400s", code, h.Get("Retry-After"), body)
	}
	// It hangs up: both reads are dropped.
	hangUp()
	wg.Wait()
	waitFor(t, "the reads to be dropped", func() bool { return dropped.Load() == maxClientFlights })

	// 200 clients ask for distinct pages and hang up at once; the fresh page answers within 2 s.
	for i := range 200 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+fmt.Sprintf("/schedules/s%03d", 50+i%200), nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	start := time.Now()
	code, _, _ = do(t, srv.URL, http.MethodGet, "/schedules/s299", nil, "Authorization", "")
	for code == 503 && time.Since(start) < 2*time.Second { // the hung-up reads are still being dropped
		time.Sleep(20 * time.Millisecond)
		code, _, _ = do(t, srv.URL, http.MethodGet, "/schedules/s299", nil)
	}
	if took := time.Since(start); code != 200 || took > 2*time.Second {
		t.Errorf("a fresh page after 200 hung-up clients: %d in %s, want 200 within 2s", code, took)
	}
	waitFor(t, "every hung-up read to go", func() bool {
		c.detailMu.Lock()
		defer c.detailMu.Unlock()
		return len(c.flights) == 0
	})
	close(release)
}

// M4 and L5: a schedule page says that authors are self-declared and which changes the topics confirm, counts
// the forged records, and shows a run's output only with ShowOutput.
func TestChangesAndOutputOnTheSchedulePage(t *testing.T) {
	c, srv := testConsole(t, false)
	c.details["beat"] = &detail{at: time.Now().Add(time.Hour), forged: 2,
		runs: []run{{Slot: time.Now(), ID: "beat@x", State: "ok", Outcome: "ok", Output: "SECRET=hunter2"}},
		changes: []tickgroup.ChangeRecord{{Op: "trigger", Schedule: "beat", Trigger: "beat@x~trigger-1", By: tickgroup.ChangeAuthor{Name: "console:alice"}},
			{Op: "put", Schedule: "beat", Confirmed: true, By: tickgroup.ChangeAuthor{Name: "deploy"}}}}
	_, _, body := do(t, srv.URL, http.MethodGet, "/schedules/beat", nil)
	for _, want := range []string{"By (self-declared)", `class="unconfirmed">unconfirmed<`, `class="confirmed">confirmed<`, `id="forged">2 change-log record(s)`} {
		if !strings.Contains(body, want) {
			t.Errorf("the schedule page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "hunter2") {
		t.Error("a run's output is shown without ShowOutput")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type httptestServer = httptest.Server

func newServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}
