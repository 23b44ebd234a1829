package tickgroup_test

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

func testKafka(t *testing.T) tickgroup.KafkaConfig {
	t.Helper()
	return tickgroup.KafkaConfig{Brokers: strings.Split(os.Getenv("KAFKA_BROKERS"), ","), Namespace: "lifecycle-" + rand.Text()[:8]}
}

// waitReady waits until every part reports itself ready (its own signal: joined, schedules read).
func waitReady(t *testing.T, parts ...interface{ Ready() (bool, string) }) {
	t.Helper()
	kafkatest.Eventually(t, 30*time.Second, "the parts to be ready", func() bool {
		for _, p := range parts {
			if ok, _ := p.Ready(); !ok {
				return false
			}
		}
		return true
	})
}

// series returns the names of the metric families in reg with a series whose labels include the given pairs.
func series(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		out[mf.GetName()] = len(mf.GetMetric())
	}
	return out
}

// TestOneRegistererTwoRuns: a ticker and a worker share one registry in one process, each runs twice, and a
// new ticker and a new worker run on the same registry after them: no registration clashes, each Run returns
// nil on the end of its context, and no series outlives the Runs.
func TestOneRegistererTwoRuns(t *testing.T) {
	k := testKafka(t)
	reg := prometheus.NewRegistry()
	ticker, err := tickgroup.NewTicker(tickgroup.TickerConfig{Kafka: k, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: k, Registerer: reg}, func(context.Context, tickgroup.Tick) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return ticker.Run(gctx) })
		g.Go(func() error { return worker.Run(gctx) })
		waitReady(t, ticker, worker)
		s := series(t, reg)
		if s["tickgroup_leader"] == 0 || s["tickgroup_worker_ticks_total"] == 0 || s["tickgroup_clock_last_measured_timestamp_seconds"] != 2 {
			t.Errorf("run %d: series missing (want the ticker's, the worker's and two clocks'): %v", run, s)
		}
		cancel()
		if err := g.Wait(); err != nil {
			t.Fatalf("run %d: Run returned %v after its context ended, want nil", run, err)
		}
		if s := series(t, reg); len(s) != 0 {
			t.Errorf("run %d: series outlive the Runs: %v", run, s)
		}
	}
	again, err := tickgroup.NewTicker(tickgroup.TickerConfig{Kafka: k, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	other, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: k, Registerer: reg}, func(context.Context, tickgroup.Tick) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return again.Run(gctx) })
	g.Go(func() error { return other.Run(gctx) })
	waitReady(t, other)
	cancel()
	if err := g.Wait(); err != nil {
		t.Errorf("a new ticker and worker on the same registry: Run returned %v, want nil", err)
	}
}

// TestRunEndedContext: both Runs return nil at once on a context that has ended, whatever step they were at.
func TestRunEndedContext(t *testing.T) {
	k := testKafka(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ticker, err := tickgroup.NewTicker(tickgroup.TickerConfig{Kafka: k})
	if err != nil {
		t.Fatal(err)
	}
	if err := ticker.Run(ctx); err != nil {
		t.Errorf("Ticker.Run: %v, want nil", err)
	}
	worker, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: k}, func(context.Context, tickgroup.Tick) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Run(ctx); err != nil {
		t.Errorf("Worker.Run: %v, want nil", err)
	}
}

// TestWorkersOfTwoPoolsShareARegisterer: workers of two pools run in one process on one registry: their series
// (the pool label, and the pool in their Kafka clients' roles) do not clash.
func TestWorkersOfTwoPoolsShareARegisterer(t *testing.T) {
	k := testKafka(t)
	reg := prometheus.NewRegistry()
	nop := func(context.Context, tickgroup.Tick) error { return nil }
	var ws []*tickgroup.Worker
	for _, pool := range []string{"", "reports"} {
		w, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: k, Pool: pool, Registerer: reg}, nop)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	ctx, cancel := context.WithCancel(t.Context())
	g, gctx := errgroup.WithContext(ctx)
	for _, w := range ws {
		g.Go(func() error { return w.Run(gctx) })
	}
	waitReady(t, ws[0], ws[1])
	if s := series(t, reg); s["tickgroup_worker_partitions"] != 2 || s["tickgroup_clock_last_measured_timestamp_seconds"] != 2 {
		t.Errorf("series: %v, want each pool's", s)
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Errorf("Run: %v", err)
	}
}
