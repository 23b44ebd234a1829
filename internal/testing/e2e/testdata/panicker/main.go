// Command panicker is a worker built on the tickgroup Go API alone whose handler panics on one tick, for the
// end-to-end tests of a panicking handler:
//
//	panicker run --brokers B --namespace NS --worker-id ID --panic-tick TICK_ID --record FILE
//
// Every attempt appends "<tick ID> <attempt> <interrupted> <worker ID> <start, Unix ns>" to --record in one
// write, before the handler returns or panics.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tickgroup/tickgroup"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "panicker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "run" {
		return errors.New("usage: panicker run [flags]")
	}
	fs := flag.NewFlagSet("panicker run", flag.ContinueOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	namespace := fs.String("namespace", "tickgroup", "tickgroup namespace")
	id := fs.String("worker-id", "", "the worker's ID")
	panicTick := fs.String("panic-tick", "", "the ID of the tick whose every attempt panics")
	record := fs.String("record", "", "file every attempt appends a line to")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics here")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	out, err := os.OpenFile(*record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	handler := func(_ context.Context, t tickgroup.Tick) error {
		line := fmt.Sprintf("%s %d %v %s %d\n", t.ID, t.Attempt, t.Interrupted, t.Worker, time.Now().UnixNano())
		if _, err := out.WriteString(line); err != nil {
			return err
		}
		if t.ID == *panicTick {
			var tables map[string]int
			tables["orders"]++ // a nil map: the runtime panics, as a bug in a handler would
		}
		return nil
	}
	reg := prometheus.NewRegistry()
	w, err := tickgroup.NewWorker(tickgroup.WorkerConfig{
		Kafka:       tickgroup.KafkaConfig{Brokers: strings.Split(*brokers, ","), Namespace: *namespace},
		ID:          *id,
		MaxAttempts: 3,
		Backoff:     200 * time.Millisecond,
		Logger:      logger,
		Registerer:  reg,
	}, handler)
	if err != nil {
		return err
	}
	if *metricsAddr != "" {
		srv := &http.Server{Addr: *metricsAddr, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.ListenAndServe() }()
		defer srv.Close()
	}
	logger.Info("panicker running", "worker_id", *id, "panic_tick", *panicTick)
	return w.Run(ctx)
}
