package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestE2EStopWithBrokerDown: the broker goes down under a ticker and a worker whose handler runs 3 s, while a
// run is under way; both are told to stop (SIGTERM). The worker ends within its --grace (2 s) plus 5 s, its last
// log line saying what it could not record; the ticker within 5 s. Neither waits for the broker.
func TestE2EStopWithBrokerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	own := kafkatest.OwnBroker(t, "19692") // a port of its own: securetest's broker is on 19392, the restart test's on 19292
	f, e := privateFleet(t, own.Addr)
	f.cli("init")
	f.cli("schedule", "put", "slow-job", "--every", "1s")
	tk := f.ticker("a")
	w := e.start([]string{"HANDLER_SLEEP_SLOW=3s"}, "--exec", handlerBin, "--grace", "2s")
	// A run under way: started, not done.
	waitFor(t, 60*time.Second, "a run under way", func() (bool, string) {
		for _, xs := range e.executions() {
			for _, x := range xs {
				if !x.done && time.Since(x.start) < time.Second {
					return true, ""
				}
			}
		}
		return false, ""
	})
	own.Stop()
	stopped := time.Now()
	w.signal(syscall.SIGTERM)
	tk.signal(syscall.SIGTERM)
	type exit struct {
		took time.Duration
		ok   bool
	}
	procs := []*proc{w, tk}
	bounds := []time.Duration{2*time.Second + 5*time.Second, 5 * time.Second}
	exits := make([]chan exit, len(procs))
	for i, p := range procs {
		exits[i] = make(chan exit, 1)
		go func() { ok := p.ps.Wait(bounds[i] + 30*time.Second); exits[i] <- exit{time.Since(stopped), ok} }()
	}
	for i, p := range procs {
		x := <-exits[i]
		if !x.ok {
			t.Fatalf("%s did not exit within %v of SIGTERM", p.name, bounds[i]+30*time.Second)
		}
		t.Logf("%s stopped %v after SIGTERM (bound %v), exit %v; last line: %s", p.name, x.took.Round(time.Millisecond), bounds[i], p.ps.Err(), lastLogLine(p))
		if x.took > bounds[i] {
			t.Errorf("%s took %v to stop with the broker down, want within %v", p.name, x.took.Round(time.Millisecond), bounds[i])
		}
	}
	// The run under way could not record its end: the last line says so. (Under the consumer group protocol the
	// worker keeps its partition while the broker is down, so a tick skipped meanwhile may be unrecorded too.)
	if last := lastLogLine(w); !strings.Contains(last, "worker stopped; records not written") || !strings.Contains(last, "runs_not_recorded=") || strings.Contains(last, "runs_not_recorded=0") {
		t.Errorf("the worker's last line does not say it stopped and what it could not record: %s", last)
	}
}

// lastLogLine is p's last log line at info or above that is not the Kafka client's.
func lastLogLine(p *proc) string {
	lines := strings.Split(strings.TrimSpace(p.tailAbove(200, "component=kgo")), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := lines[i]; strings.Contains(l, "msg=") && !strings.Contains(l, "level=DEBUG") {
			return l
		}
	}
	return ""
}
