// Command outside is a program of another module built on the tickgroup API alone (TestOutsideModuleBuilds):
// a schedules client puts a schedule, and a ticker and a worker run it until the program is stopped.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "outside:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	kafka := tickgroup.KafkaConfig{Brokers: []string{"127.0.0.1:9092"}, Namespace: "outside"}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	reg := prometheus.NewRegistry()

	schedules, err := tickgroup.NewSchedules(kafka)
	if err != nil {
		return err
	}
	defer schedules.Close()
	err = schedules.Put(ctx, tickgroup.Schedule{
		Name: "scan-orders", Every: tickgroup.Duration(30 * time.Second),
		Catchup: tickgroup.CatchupLatest, Overlap: tickgroup.OverlapSkip,
	})
	if err != nil {
		return err
	}
	ticker, err := tickgroup.NewTicker(tickgroup.TickerConfig{Kafka: kafka, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	worker, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: kafka, Logger: logger, Registerer: reg, Start: tickgroup.StartLatest},
		func(ctx context.Context, t tickgroup.Tick) error {
			if t.Payload == "broken" {
				return tickgroup.Permanent(errors.New("a broken payload"))
			}
			logger.Info("scanning", "tick", t.ID, "attempt", t.Attempt, "interrupted", t.Interrupted)
			return nil
		})
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ticker.Run(ctx) })
	g.Go(func() error { return worker.Run(ctx) })
	return g.Wait()
}
