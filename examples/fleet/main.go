// Command fleet is the question this project answers, as one Go program: every server runs exactly this binary,
// and each slot of the schedule runs once across the fleet. It embeds a tickgroup.Ticker (one replica leads and
// emits the slots), a tickgroup.Worker (the replicas share the ticks) and a handler, and puts its schedule at
// start (a no-op when it is already as wanted).
//
//	fleet run --brokers 127.0.0.1:9092 --instance host-1 --record /tmp/runs
//
// Start it on several hosts (or several times on one), kill some: the others go on. The handler appends one
// line per run to --record, "<tick ID> <attempt> <interrupted> <instance>", in one write.
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
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "run" {
		return errors.New("usage: fleet run [flags]")
	}
	fs := flag.NewFlagSet("fleet run", flag.ContinueOnError)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	namespace := fs.String("namespace", "fleet-example", "tickgroup namespace")
	host, _ := os.Hostname()
	instance := fs.String("instance", fmt.Sprintf("%s-%d", host, os.Getpid()), "this replica's name")
	every := fs.Duration("every", time.Second, "the schedule's period")
	name := fs.String("schedule", "beat", "the schedule's name")
	record := fs.String("record", "", "file the handler appends one line per run to (default: standard output)")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics and /-/ready here")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("instance", *instance)
	kafka := tickgroup.KafkaConfig{Brokers: strings.Split(*brokers, ","), Namespace: *namespace}

	out := os.Stdout
	if *record != "" {
		f, err := os.OpenFile(*record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	// The work: one line per run. A real job would make its effects idempotent on t.ID: a run cut off by a
	// crash runs again, with t.Interrupted set.
	handler := func(ctx context.Context, t tickgroup.Tick) error {
		_, err := fmt.Fprintf(out, "%s %d %v %s\n", t.ID, t.Attempt, t.Interrupted, *instance)
		return err
	}

	schedules, err := tickgroup.NewSchedules(kafka)
	if err != nil {
		return err
	}
	_, err = schedules.Apply(ctx, []tickgroup.Schedule{{Name: *name, Every: tickgroup.Duration(*every)}}, false)
	schedules.Close()
	if err != nil {
		return fmt.Errorf("putting the schedule: %w", err)
	}

	reg := prometheus.NewRegistry()
	ticker, err := tickgroup.NewTicker(tickgroup.TickerConfig{Kafka: kafka, Instance: *instance, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	worker, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: kafka, ID: *instance, Logger: logger, Registerer: reg}, handler)
	if err != nil {
		return err
	}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ticker.Run(ctx) })
	g.Go(func() error { return worker.Run(ctx) })
	if *metricsAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
			for _, part := range []interface{ Ready() (bool, string) }{ticker, worker} {
				if ok, why := part.Ready(); !ok {
					http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
					return
				}
			}
			fmt.Fprintln(w, "OK")
		})
		srv := &http.Server{Addr: *metricsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		g.Go(func() error {
			<-ctx.Done()
			return srv.Close()
		})
		g.Go(func() error {
			if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
	}
	return g.Wait()
}
