// Command otlpsink is the OpenTelemetry Collector's OTLP receiver (go.opentelemetry.io/collector/receiver/
// otlpreceiver, the code a collector runs), listening for OTLP over HTTP on the address of its first argument,
// and writing each span it receives as one JSON line to standard output: service, name, trace ID, span ID,
// parent span ID and the tick ID attribute. The e2e tests' collector: a module of its own, so that the
// collector's dependencies stay out of tickgroup's.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

type line struct {
	Service string `json:"service"`
	Name    string `json:"name"`
	Trace   string `json:"trace"`
	Span    string `json:"span"`
	Parent  string `json:"parent"`
	TickID  string `json:"tick_id"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: otlpsink HOST:PORT")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var mu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	sink, err := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error {
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range td.ResourceSpans().All() {
			service, _ := rs.Resource().Attributes().Get("service.name")
			for _, ss := range rs.ScopeSpans().All() {
				for _, sp := range ss.Spans().All() {
					l := line{Service: service.AsString(), Name: sp.Name(), Trace: sp.TraceID().String(), Span: sp.SpanID().String()}
					if !sp.ParentSpanID().IsEmpty() {
						l.Parent = sp.ParentSpanID().String()
					}
					if v, ok := sp.Attributes().Get("tickgroup.tick.id"); ok {
						l.TickID = v.AsString()
					}
					if err := enc.Encode(l); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		fail(err)
	}
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	http := cfg.Protocols.HTTP.GetOrInsertDefault()
	http.ServerConfig.NetAddr.Endpoint = os.Args[1]
	r, err := f.CreateTraces(ctx, receivertest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		fail(err)
	}
	if err := r.Start(ctx, componenttest.NewNopHost()); err != nil {
		fail(err)
	}
	fmt.Fprintln(os.Stderr, "otlpsink: listening on", os.Args[1])
	<-ctx.Done()
	_ = r.Shutdown(context.Background())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "otlpsink:", err)
	os.Exit(1)
}
