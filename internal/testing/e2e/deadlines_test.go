package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/notify"
)

// TestE2EDeadlineBreaches: a ticker and a worker with a breach webhook (a test server checking the signature).
// slow-report runs every 4 s for 3.5 s against a finish_by of 2.5 s: every slot of it overruns, and each produces
// one breach record on the results topic (counted by ticker audit), one tickgroup_deadline_breaches_total
// increment and one signed webhook call. fast-report, with the same deadlines and a run that meets them,
// produces none. Both meet their start_by of 2 s once the fleet has formed.
func TestE2EDeadlineBreaches(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	countOnly(t) // its bounds (2 s, 2.5 s) leave a busy machine a second and more
	e := setup(t)
	f := e.f
	secret := []byte("e2e-breach-secret")
	var mu sync.Mutex
	calls := map[string][]string{} // tick ID -> the deadlines of its webhook calls
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !notify.Verify(secret, r.Header.Get("Tickgroup-Timestamp"), body, r.Header.Get("Tickgroup-Signature")) {
			t.Errorf("a breach call with a bad signature: %s", body)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var b struct{ ID, Deadline string }
		if err := json.Unmarshal(body, &b); err != nil {
			t.Errorf("a breach call %s: %v", body, err)
		}
		mu.Lock()
		calls[b.ID] = append(calls[b.ID], b.Deadline)
		mu.Unlock()
	}))
	defer srv.Close()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, append(secret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"slow-report", "fast-report"} {
		f.cli("schedule", "put", name, "--every", "4s", "--start-by", "2s", "--finish-by", "2500ms")
	}
	w := e.start([]string{"HANDLER_SLEEP_SLOW=3500ms"}, "--exec", handlerBin, "--breach-webhook", srv.URL, "--breach-secret-file", secretFile)
	f.ticker("a")

	// The first runs start late while the fleet forms (the worker joins, the leader is elected): the ticks
	// watched are those due from 2 s after both schedules first ran.
	waitFor(t, 60*time.Second, "a first finished run of each schedule", func() (bool, string) {
		return len(finished(e, "slow-report", time.Time{})) > 0 && len(finished(e, "fast-report", time.Time{})) > 0, ""
	})
	steady := time.Now().Add(2 * time.Second)
	fastBefore := w.metric(`tickgroup_deadline_breaches_total{deadline="finish_by",pool="default",schedule="fast-report"}`)
	var slow, fast []string
	waitFor(t, 90*time.Second, "six finished runs of each schedule once steady", func() (bool, string) {
		slow, fast = finished(e, "slow-report", steady), finished(e, "fast-report", steady)
		return len(slow) >= 6 && len(fast) >= 6, ""
	})
	kafkatest.Eventually(t, 30*time.Second, "a webhook call for each of slow-report's runs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, id := range slow {
			if len(calls[id]) == 0 {
				return false
			}
		}
		return true
	})
	mu.Lock()
	for _, id := range slow {
		if got := calls[id]; len(got) != 1 || got[0] != "finish_by" {
			t.Errorf("%s: webhook calls for %v, want finish_by once", id, got)
		}
	}
	for _, id := range fast {
		if got := calls[id]; len(got) != 0 {
			t.Errorf("%s: webhook calls for %v, want none", id, got)
		}
	}
	mu.Unlock()
	if n := w.metric(`tickgroup_deadline_breaches_total{deadline="finish_by",pool="default",schedule="slow-report"}`); n < float64(len(slow)) {
		t.Errorf("tickgroup_deadline_breaches_total for slow-report = %v, want at least its %d runs", n, len(slow))
	}
	if n := w.metric(`tickgroup_deadline_breaches_total{deadline="finish_by",pool="default",schedule="fast-report"}`); n != fastBefore {
		t.Errorf("tickgroup_deadline_breaches_total for fast-report went from %v to %v, want no new breach", fastBefore, n)
	}

	// The audit reads one breach per slow run from the results topic, and none of fast-report's.
	rep, _ := runAudit(t, f)
	breaches := map[string][]string{}
	for _, s := range rep.Schedules {
		for _, tk := range s.Ticks {
			if len(tk.Breaches) > 0 {
				breaches[tk.ID] = tk.Breaches
			}
		}
	}
	for _, id := range slow {
		if b := breaches[id]; len(b) != 1 || b[0] != "finish_by" {
			t.Errorf("audit: %s breached %v, want [finish_by]", id, b)
		}
	}
	for _, id := range fast {
		if b := breaches[id]; len(b) != 0 {
			t.Errorf("audit: %s breached %v, want nothing", id, b)
		}
	}
	t.Logf("from %s: slow-report %d runs, each one finish_by breach (record, webhook call, metric); fast-report %d runs, none",
		steady.Format(timeMs), len(slow), len(fast))
}

// finished returns the IDs of schedule's ticks due after from whose handler finished, by the handlers' log.
func finished(e *env, schedule string, from time.Time) []string {
	var out []string
	for id, xs := range e.executions() {
		rest, ok := strings.CutPrefix(id, schedule+"@")
		if !ok {
			continue
		}
		if slot, err := time.Parse(time.RFC3339, rest); err != nil || !slot.After(from) {
			continue
		}
		for _, x := range xs {
			if x.done {
				out = append(out, id)
				break
			}
		}
	}
	return out
}
