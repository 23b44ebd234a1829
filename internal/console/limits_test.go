package console

import (
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

// limitsConsole is rolesConsole's setup with limits: team-a-pay (priority 5) and team-b-pay name stripe,
// team-a-mail names mail (not defined), team-b-beat names none; stripe has a tick waiting for 6 min.
func limitsConsole(t *testing.T) *httptestServer {
	t.Helper()
	c, err := New(Config{Namespace: "ns", Auth: testAuth(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	rep := &status.Report{Namespace: "ns", At: now, LeaderCount: 1, Entries: map[string]store.Entry{}}
	for _, spec := range []schedule.Spec{
		{Name: "team-a-pay", Limit: "stripe", Priority: 5},
		{Name: "team-b-pay", Limit: "stripe"},
		{Name: "team-a-mail", Limit: "mail"},
		{Name: "team-b-beat"},
	} {
		spec.Every = schedule.Duration(time.Minute)
		s, err := spec.Compile()
		if err != nil {
			t.Fatal(err)
		}
		rep.Entries[spec.Name] = store.Entry{Schedule: s, Version: 1, UpdatedAt: now}
		rep.Schedules = append(rep.Schedules, status.Schedule{Name: spec.Name, Schedule: spec.Describe(), Pool: "default", Limit: spec.Limit, Priority: spec.Priority})
		c.details[spec.Name] = &detail{at: now.Add(time.Hour)}
	}
	two, one, wait := 2, 1, 360.0
	rep.Limits = []status.Limit{
		{Name: "mail", Schedules: &one},
		{Name: "stripe", Pool: "default", Concurrency: 10, Rate: "100/1m", Defined: true, Schedules: &two, Running: &two, Waiting: &one, OldestWaitSeconds: &wait},
		{Name: "unused", Pool: "batch", Rate: "5/10s", Defined: true},
	}
	c.snap.Store(&snapshot{rep: rep, at: now})
	return newServer(t, c)
}

// TestLimitsOnThePages: the fleet page has a row per limit, anchored by its name, with its bounds, the
// schedules naming it and its ticks running and waiting, and says when a limit is not defined or a tick waits
// long; a schedule's page links its limit to that row and shows its priority. A viewer limited to a prefix sees
// the limits its schedules name, counted over its schedules.
func TestLimitsOnThePages(t *testing.T) {
	srv := limitsConsole(t)
	_, _, body := do(t, srv.URL, "GET", "/", nil, "Authorization", basic("alice"))
	for _, want := range []string{
		`<section id="limits">`,
		`<tr id="limit-stripe"><td>stripe</td><td>default</td><td>10</td><td>100/1m</td><td>2</td><td>2</td><td>1</td><td class="bad">6m0s</td></tr>`,
		`<tr id="limit-unused"><td>unused</td><td>batch</td><td>-</td><td>5/10s</td><td>0</td>`,
		`<tr id="limit-mail"><td>mail</td><td colspan="3" class="bad">not defined`,
		`limit stripe: a tick has waited 6m0s for it`,
		`1 schedule(s) name limit mail, which is not defined`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the fleet page lacks %s:\n%s", want, body)
		}
	}
	_, _, body = do(t, srv.URL, "GET", "/schedules/team-a-pay", nil, "Authorization", basic("alice"))
	for _, want := range []string{`<a id="limit" href="/#limit-stripe">stripe</a> (at most 10 at once and 100/1m, pool default)`, `<dd id="priority">5</dd>`} {
		if !strings.Contains(body, want) {
			t.Errorf("team-a-pay's page lacks %s:\n%s", want, body)
		}
	}
	_, _, body = do(t, srv.URL, "GET", "/schedules/team-b-beat", nil, "Authorization", basic("alice"))
	if strings.Contains(body, `id="limit"`) || !strings.Contains(body, `<dd id="priority">3 (the default)</dd>`) {
		t.Errorf("team-b-beat's page: want no limit and the default priority:\n%s", body)
	}

	_, _, body = do(t, srv.URL, "GET", "/", nil, "Authorization", basic("ann"))
	if !strings.Contains(body, `<tr id="limit-stripe"><td>stripe</td><td>default</td><td>10</td><td>100/1m</td><td>1</td>`) ||
		!strings.Contains(body, `id="limit-mail"`) || strings.Contains(body, "limit-unused") {
		t.Errorf("ann's fleet page: want stripe counted over her 1 schedule, mail, and not unused:\n%s", body)
	}
}
