package failbench

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// TestRunNoFaults runs the real binaries for a 10 s window on one host, without faults: every slot runs once,
// and the ledger and the worker's histogram count the same ticks.
func TestRunNoFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("real binaries on a real broker")
	}
	brokers := kafkatest.Brokers(t)
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-o", bin+string(filepath.Separator),
		"github.com/tickgroup/tickgroup/cmd/ticker", "github.com/tickgroup/tickgroup/cmd/worker").CombinedOutput()
	if err != nil {
		t.Fatalf("building the binaries: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logs := t.TempDir()
	results, err := Run(ctx, Config{Brokers: brokers, Bin: bin, Hosts: 1, Duration: 10 * time.Second, LogDir: logs},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || len(results) != 1 {
		dumpLogs(t, logs)
		t.Fatalf("Run: %d results, %v", len(results), err)
	}
	r := results[0]
	t.Logf("ledger %+v; histogram %+v", r.Ledger, r.Histogram)
	l := r.Ledger
	if l.Expected != 10 || l.Ran != 10 || l.Missing != 0 || l.Doubled != 0 || l.Unexpected != 0 || !r.Settled || len(r.Crashes) > 0 {
		dumpLogs(t, logs)
		t.Errorf("got %+v (settled %v, crashes %v), want 10 slots that each ran once", l, r.Settled, r.Crashes)
	}
	if r.Histogram.Count != 10 || r.Histogram.Scraped != 1 || r.Histogram.Lost != 0 {
		t.Errorf("histogram %+v, want the worker's 10 starts from 1 scrape", r.Histogram)
	}
	// A forward worker that does not hold ticks emitted ahead (ticker run --lead) starts them before their
	// slot, so the sign of the delays is not asserted here, only their order.
	if l.P50 == 0 || l.P50 > l.P99 || l.P99 > l.Max {
		t.Errorf("quantiles p50 %v, p99 %v, max %v ms: want p50 != 0 and p50 <= p99 <= max", l.P50, l.P99, l.Max)
	}
}

func dumpLogs(t *testing.T, dir string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Logf("---- %s ----\n%s", filepath.Base(f), b)
	}
}
