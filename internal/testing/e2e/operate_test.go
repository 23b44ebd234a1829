package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// scrapeAll returns the text of p's /metrics.
func scrapeAll(t *testing.T, p *proc) string {
	t.Helper()
	resp, err := http.Get("http://" + p.admin + "/metrics")
	if err != nil {
		t.Fatalf("%s /metrics: %v", p.name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func httpStatus(p *proc, path string) int {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + p.admin + path)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestOperateMetricsHealthStatus: both binaries serve their metrics (names as documented, counters moving under
// a running schedule), /-/healthy and /-/ready, and `ticker status` reports the leader and each schedule.
func TestOperateMetricsHealthStatus(t *testing.T) {
	f := newFleet(t)
	f.cli("init", "--work-partitions", "4")
	f.cli("schedule", "put", "beat", "--every", "1s", "--shards", "2")
	f.cli("schedule", "put", "idle", "--cron", "0 0 1 1 *", "--tz", "Europe/Berlin", "--paused")
	a := f.ticker("a")
	w := f.start("w1", "worker", "run", "--exec", "true", "--worker-id", "w1", "--start", "earliest")

	kafkatest.Eventually(t, 30*time.Second, "the ticker to be ready", func() bool { return httpStatus(a, "/-/ready") == 200 })
	kafkatest.Eventually(t, 30*time.Second, "the worker to be ready", func() bool { return httpStatus(w, "/-/ready") == 200 })
	if httpStatus(a, "/-/healthy") != 200 || httpStatus(w, "/-/healthy") != 200 {
		t.Fatal("/-/healthy is not 200")
	}
	leaderOf(t, 20*time.Second, a)

	first := a.metric("tickgroup_ticks_emitted_total")
	kafkatest.Eventually(t, 20*time.Second, "tickgroup_ticks_emitted_total to grow by 4", func() bool {
		return a.metric("tickgroup_ticks_emitted_total") >= first+4
	})
	kafkatest.Eventually(t, 30*time.Second, "the worker to run ticks", func() bool {
		return strings.Contains(scrapeAll(t, w), `tickgroup_worker_ticks_total{pool="default",result="ok"}`) &&
			metricAtLeast(scrapeAll(t, w), `tickgroup_worker_ticks_total{pool="default",result="ok"}`, 4)
	})

	// The clock's first round can find its topic unknown to the broker a moment after init; it is measured again
	// within seconds.
	kafkatest.Eventually(t, 20*time.Second, "both processes to have measured the clock", func() bool {
		return strings.Contains(scrapeAll(t, a), "tickgroup_clock_offset_seconds") && strings.Contains(scrapeAll(t, w), "tickgroup_clock_offset_seconds")
	})
	tickerText := scrapeAll(t, a)
	for _, name := range []string{
		"tickgroup_leader 1", "tickgroup_leader_changes_total 1", "tickgroup_ticks_emitted_total",
		"tickgroup_emit_lag_seconds_bucket", "tickgroup_slots_missed_total", "tickgroup_fenced_total 0",
		`tickgroup_transactions_total{result="committed"}`, `tickgroup_transaction_duration_seconds_count{leader="0"}`, "tickgroup_schedules 2", "tickgroup_build_info",
		`tickgroup_kafka_connects_total{node_id=`, `role="election"`, `role="leader"`, "go_goroutines", "process_resident_memory_bytes",
		"tickgroup_clock_offset_seconds", `tickgroup_clock_skewed{component="ticker"} 0`, `role="clock"`,
	} {
		if !strings.Contains(tickerText, name) {
			t.Errorf("ticker /metrics lacks %q", name)
		}
	}
	workerText := scrapeAll(t, w)
	for _, name := range []string{
		"tickgroup_worker_ticks_total", "tickgroup_worker_start_delay_seconds_bucket", "tickgroup_worker_duration_seconds_bucket",
		"tickgroup_worker_inflight", `tickgroup_worker_partitions{pool="default"} 4`, "tickgroup_kafka_",
		"tickgroup_clock_offset_seconds", `tickgroup_clock_skewed{component="worker"} 0`, `role="clock-worker"`,
	} {
		if !strings.Contains(workerText, name) {
			t.Errorf("worker /metrics lacks %q", name)
		}
	}

	// ticker status, human and JSON.
	out := f.cli("status")
	t.Logf("ticker status:\n%s", out)
	for _, want := range []string{"leader     tickgroup-ticker-a", "tickgroup-worker-w1", "beat", "every 1s", "idle", "paused", "WORK PARTITION"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q", want)
		}
	}
	var rep struct {
		Leader *struct {
			ClientID string `json:"client_id"`
			Epoch    int64  `json:"epoch"`
		} `json:"leader"`
		Schedules []struct {
			Name     string     `json:"name"`
			Paused   bool       `json:"paused"`
			LastSlot *time.Time `json:"last_slot"`
			NextSlot *time.Time `json:"next_slot"`
		} `json:"schedules"`
		Work []struct {
			Partition int32 `json:"partition"`
		} `json:"work_lag"`
	}
	if err := json.Unmarshal([]byte(f.cli("status", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Leader == nil || rep.Leader.ClientID != "tickgroup-ticker-a" {
		t.Errorf("status --json leader = %+v", rep.Leader)
	}
	if len(rep.Schedules) != 2 || rep.Schedules[0].Name != "beat" || rep.Schedules[0].LastSlot == nil || rep.Schedules[0].NextSlot == nil ||
		!rep.Schedules[0].NextSlot.After(*rep.Schedules[0].LastSlot) || !rep.Schedules[1].Paused || rep.Schedules[1].NextSlot != nil {
		t.Errorf("status --json schedules = %+v", rep.Schedules)
	}
	if len(rep.Work) != 4 {
		t.Errorf("status --json shows %d work partitions, want 4", len(rep.Work))
	}
}

// metricAtLeast reports whether the sample line starting with series has a value of at least v.
func metricAtLeast(text, series string, v float64) bool {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, series+" ") {
			var got float64
			if _, err := fmtSscan(strings.TrimPrefix(line, series+" "), &got); err == nil {
				return got >= v
			}
		}
	}
	return false
}
