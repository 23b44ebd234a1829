package console

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/status"
	"github.com/tickgroup/tickgroup/internal/store"
)

// A console mounted under a prefix of another server: its pages answer there, every link and form carries the
// prefix, and the server's other paths stay the server's.
func TestMountedUnderAPrefix(t *testing.T) {
	c, err := New(Config{Namespace: "ns", Prefix: "/ops/tickgroup", Actions: true, Auth: testAuth(t)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	spec := schedule.Spec{Name: "beat", Every: schedule.Duration(time.Minute)}
	s, _ := spec.Compile()
	c.snap.Store(&snapshot{at: now, rep: &status.Report{Namespace: "ns", At: now, LeaderCount: 1, Entries: map[string]store.Entry{"beat": {Schedule: s, UpdatedAt: now}},
		Schedules: []status.Schedule{{Name: "beat", Schedule: spec.Describe()}}}})
	c.details["beat"] = &detail{at: now.Add(time.Hour)}
	mux := http.NewServeMux()
	mux.Handle("/ops/tickgroup/", c)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the application's page")) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	code, _, body := do(t, srv.URL, http.MethodGet, "/ops/tickgroup/schedules", nil, "Authorization", basic("alice"))
	if code != 200 || !strings.Contains(body, `href="/ops/tickgroup/schedules/beat"`) || !strings.Contains(body, `href="/ops/tickgroup/assets/console.css"`) {
		t.Fatalf("the schedules page under the prefix: %d\n%s", code, body)
	}
	if strings.Contains(body, `href="/schedules`) {
		t.Errorf("a link without the prefix:\n%s", body)
	}
	_, _, body = do(t, srv.URL, http.MethodGet, "/ops/tickgroup/schedules/beat", nil, "Authorization", basic("alice"))
	if !strings.Contains(body, `action="/ops/tickgroup/schedules/beat/pause"`) {
		t.Errorf("the forms do not post under the prefix:\n%s", body)
	}
	if code, _, body := do(t, srv.URL, http.MethodGet, "/schedules", nil); code != 200 || body != "the application's page" {
		t.Errorf("the server's own path: %d %q", code, body)
	}
	// A bad form posted under the prefix is refused by the console, not the server (400, naming the field).
	form := url.Values{"csrf": {c.csrfToken("alice")}}
	if code, _, body := do(t, srv.URL, http.MethodPost, "/ops/tickgroup/schedules/beat/pause", form, "Authorization", basic("alice")); code != 400 || !strings.Contains(body, "needs a reason") {
		t.Errorf("a pause without a reason under the prefix: %d\n%.300s", code, body)
	}
}
