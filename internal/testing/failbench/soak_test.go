package failbench

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestSoakShort is the soak of tickbench soak, for 3 minutes: 60 schedules (1 s to 1 m, long jobs, two pools),
// a random fault every 10-25 s (kill -9, SIGSTOP, SIGTERM of a random ticker or worker) and two broker restarts,
// on a broker of its own. No slot may be missing, pending, doubled or run twice unmarked, and no process crash.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("real binaries on a real broker")
	}
	kafkatest.Brokers(t) // a real broker is there (or the test fails under CI=true)
	own := kafkatest.OwnBroker(t, "19892")
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-o", bin+string(filepath.Separator),
		"github.com/tickgroup/tickgroup/cmd/ticker", "github.com/tickgroup/tickgroup/cmd/worker").CombinedOutput()
	if err != nil {
		t.Fatalf("building the binaries: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The logs outlive a failed run (t.TempDir would delete them): a crash is read from its process's log.
	logs, err := os.MkdirTemp("", "soak-logs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(logs)
		}
	})
	res, err := Soak(ctx, SoakConfig{Brokers: []string{own.Addr}, Bin: bin, Duration: 3 * time.Minute, Schedules: 60,
		ExecCommand: `sh -c 'case "$TICK_SCHEDULE" in slow*) sleep 4;; *) sleep 0.05;; esac'`, FaultMin: 10 * time.Second, FaultMax: 25 * time.Second,
		BrokerRestart: own.RestartCommand, LogDir: logs}, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	var faults []string
	for _, f := range res.Faults {
		faults = append(faults, f.At.Format(time.TimeOnly)+" "+f.Action)
	}
	t.Logf("seed %d; %d faults:\n  %s", res.Seed, len(res.Faults), strings.Join(faults, "\n  "))
	c := res.Counts
	t.Logf("expected %d, emitted %d, executed %d; missing %d, pending %d, doubled %d, ran twice unmarked %d, marked re-runs %d, retried %d; start p50 %.0f ms, p99 %.0f ms, max %.0f ms; memory %+v",
		c.Expected, c.Emitted, c.Executed, c.Missing, c.Pending, c.Doubled, c.RanTwice, c.MarkedReRun, c.Retried, res.P50, res.P99, res.Max, res.Memory)
	if !res.OK {
		t.Errorf("the soak lost or doubled a slot, or a process crashed (%v); logs in %s", res.Crashes, logs)
		for _, e := range mustGlob(t, filepath.Join(logs, "*.log")) {
			t.Logf("log %s", e)
		}
	}
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
