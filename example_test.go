package tickgroup_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
)

// Every host runs the same program: a ticker replica, a worker and the handler. One replica leads and emits
// each slot once; the workers share the ticks; any host can die.
func Example() {
	ctx := context.Background()
	kafka := tickgroup.KafkaConfig{Brokers: []string{"127.0.0.1:9092"}, Namespace: "billing"}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	reg := prometheus.NewRegistry() // serve it on /metrics

	ticker, err := tickgroup.NewTicker(tickgroup.TickerConfig{Kafka: kafka, Logger: logger, Registerer: reg})
	if err != nil {
		panic(err)
	}
	worker, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: kafka, Logger: logger, Registerer: reg},
		func(ctx context.Context, t tickgroup.Tick) error {
			// Make external effects idempotent on t.ID: a run cut off by a crash runs again (t.Interrupted).
			logger.Info("scanning the table", "tick", t.ID, "attempt", t.Attempt)
			return nil
		})
	if err != nil {
		panic(err)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ticker.Run(ctx) })
	g.Go(func() error { return worker.Run(ctx) })
	if err := g.Wait(); err != nil {
		panic(err)
	}
}

// A schedule is put once, from anywhere (a deploy step, an admin endpoint); the leader follows the change.
func ExampleSchedules_Put() {
	ctx := context.Background()
	s, err := tickgroup.NewSchedules(tickgroup.KafkaConfig{Brokers: []string{"127.0.0.1:9092"}, Namespace: "billing"})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	err = s.Put(ctx, tickgroup.Schedule{
		Name:    "scan-orders",
		Every:   tickgroup.Duration(30 * time.Second),
		Timeout: tickgroup.Duration(5 * time.Minute), // one attempt; the default is no limit
		Catchup: tickgroup.CatchupLatest,             // after an outage, one scan of the newest slot is enough
	})
	if err != nil {
		panic(err)
	}
	ids, err := s.Trigger(ctx, "scan-orders") // and one run now
	if err != nil {
		panic(err)
	}
	fmt.Println(ids)
}

// A handler marks an error that retrying cannot fix as permanent: the tick goes to the dead-letter topic at once.
func ExamplePermanent() {
	handler := func(ctx context.Context, t tickgroup.Tick) error {
		if t.Payload == "" {
			return tickgroup.Permanent(fmt.Errorf("tick %s: no table named in the payload", t.ID))
		}
		return nil
	}
	_ = handler
}

// A program that reads the results topic (<ns>.results) turns each record's value into the outcomes it holds.
func ExampleOutcomes() {
	value := []byte(`{"v":1,"kind":"outcome","id":"scan-orders@2026-12-04T12:00:30Z","schedule":"scan-orders",` +
		`"status":"ok","attempts":1,"duration_ms":812.5,"worker":"host-a-4127","partition":3,"offset":1042,` +
		`"finished_at":"2026-12-04T12:00:31.2Z","fence":7}`)
	outs, err := tickgroup.Outcomes(value)
	if err != nil {
		panic(err)
	}
	for _, o := range outs {
		fmt.Println(o.ID, o.Status, o.Attempts, o.Worker, o.Status == tickgroup.StatusOK)
	}
	// Output: scan-orders@2026-12-04T12:00:30Z ok 1 host-a-4127 true
}
