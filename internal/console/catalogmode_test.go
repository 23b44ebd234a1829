package console

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// TestCatalogMode: a namespace of more schedules than CatalogAbove is listed from the catalog: the list pages
// through names with each row's definition read from the topic, searches by name and pause, refuses the states
// that need every schedule's runs, and a schedule's page still shows its definition and next runs; the fleet
// page counts the principal's schedules.
func TestCatalogMode(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	names := kafka.Config{Namespace: "big"}.Names()
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), names, kafka.TopicOptions{WorkPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		spec := schedule.Spec{Name: fmt.Sprintf("team-%c-%03d", 'a'+i%2, i), Every: schedule.Duration(time.Minute)}
		if i == 7 {
			spec.Paused, spec.PauseReason = true, "disk <full>"
		}
		if _, err := store.Put(ctx, cl, names.Schedules, spec); err != nil {
			t.Fatal(err)
		}
	}
	con, err := New(Config{Namespace: "big", Names: names, CatalogAbove: 100, Auth: testAuth(t), AuthRead: true, Actions: true}, opts)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- con.Run(ctx) }()
	kafkatest.Eventually(t, 20*time.Second, "the console's first read", func() bool { ok, _ := con.Ready(); return ok })
	if s := con.snap.Load(); !s.large || len(s.rep.Schedules) != 0 {
		t.Fatalf("catalog mode %v with %d schedules in the report; want the fleet only", s.large, len(s.rep.Schedules))
	}
	srv := httptest.NewServer(con)
	defer srv.Close()
	alice := []string{"Authorization", basic("alice")}

	code, body := get(t, srv, "/schedules", alice...)
	if code != 200 || !strings.Contains(body, "150 schedule(s): a namespace this large is listed by name, 100 on this page") ||
		!strings.Contains(body, `data-schedule="team-a-000"`) || !strings.Contains(body, "every 1m") || !strings.Contains(body, `rel="next"`) {
		t.Fatalf("first page: %d\n%s", code, body)
	}
	code, body = get(t, srv, "/schedules?after="+url.QueryEscape("team-b-099"), alice...)
	if code != 200 || !strings.Contains(body, "team-b-101") || strings.Contains(body, `data-schedule="team-b-099"`) || strings.Contains(body, `rel="next"`) ||
		!strings.Contains(body, `rel="first"`) {
		t.Fatalf("last page: %d\n%s", code, body)
	}
	code, body = get(t, srv, "/schedules?state=paused", alice...)
	if code != 200 || !strings.Contains(body, `data-schedule="team-b-007"`) || strings.Contains(body, `data-schedule="team-a-000"`) || strings.Contains(body, "<full>") {
		t.Fatalf("paused: %d\n%s", code, body)
	}
	if code, body = get(t, srv, "/schedules?state=missed", alice...); code != 400 || !strings.Contains(body, "needs every schedule") {
		t.Fatalf("missed: %d\n%s", code, body)
	}
	code, body = get(t, srv, "/schedules/team-a-004", alice...)
	if code != 200 || !strings.Contains(body, "every 1m") || !strings.Contains(body, `id="catalog-note"`) || !strings.Contains(body, `id="next"`) {
		t.Fatalf("schedule page: %d\n%s", code, body)
	}
	if code, _ = get(t, srv, "/schedules/team-a-999", alice...); code != 404 {
		t.Fatalf("an unknown schedule's page: %d", code)
	}
	// ann sees team-a-... only: 75 of them, on one page.
	ann := []string{"Authorization", basic("ann")}
	code, body = get(t, srv, "/schedules", ann...)
	if code != 200 || !strings.Contains(body, "75 schedule(s)") || strings.Contains(body, "team-b-") {
		t.Fatalf("ann's list: %d\n%s", code, body)
	}
	if code, body = get(t, srv, "/", ann...); code != 200 || !strings.Contains(body, "75 schedule(s)</a>: a namespace this large") {
		t.Fatalf("ann's fleet page: %d\n%s", code, body)
	}
	if code, _ = get(t, srv, "/schedules/team-b-001", ann...); code != 404 {
		t.Fatalf("another team's schedule for ann: %d", code)
	}
	// Every read of definitions taken: a list page waits its turn, then answers 503 with Retry-After.
	con.defsWait = 50 * time.Millisecond
	if err := con.defReads.Acquire(ctx, maxDefReads); err != nil {
		t.Fatal(err)
	}
	code, hdr, body := do(t, srv.URL, "GET", "/schedules", nil, alice...)
	con.defReads.Release(maxDefReads)
	if code != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(body, "too many pages") {
		t.Fatalf("a list page with every read taken: %d %v\n%s", code, hdr, body)
	}

	// A bulk pause of a search previews its schedules from the catalog (team-b-007 is paused already); a search
	// of more schedules than a bulk action takes is refused.
	code, body = postBulk(t, con, srv, "alice", url.Values{"action": {"pause"}, "reason": {"r"}, "scope": {"search"}, "q": {"team-b-00"}})
	if code != 200 || !strings.Contains(body, `<tr class="change" data-schedule="team-b-001">`) || !strings.Contains(body, `<tr class="unchanged" data-schedule="team-b-007">`) {
		t.Fatalf("bulk preview: %d\n%s", code, body)
	}
	if code, body = postBulk(t, con, srv, "alice", url.Values{"action": {"pause"}, "reason": {"r"}, "scope": {"search"}, "q": {"team"}}); code != 400 || !strings.Contains(body, "more than 20") {
		t.Fatalf("a bulk search of 150: %d\n%s", code, body)
	}
	code, body = postBulk(t, con, srv, "ann", url.Values{"action": {"resume"}, "scope": {"selected"}, "name": {"team-b-007"}})
	if code != 400 {
		t.Fatalf("ann's bulk resume of another team's schedule: %d\n%s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
