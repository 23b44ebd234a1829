// Command handler is the e2e tests' exec handler. It appends
// "start <TICK_ID> <TICK_ATTEMPT> <pid> <TICK_WORKER> <TICK_FENCE> <TICK_INTERRUPTED> <unix ns>" to $HANDLER_LOG,
// sleeps $HANDLER_SLEEP ($HANDLER_SLEEP_SLOW for schedules named slow*) (writing "alive <TICK_ID> <TICK_ATTEMPT> <pid> <unix ns>" every 20 ms meanwhile when
// $HANDLER_HEARTBEAT is set, so a test can tell when a killed run last lived), decides, and appends
// "done <TICK_ID> <TICK_ATTEMPT> <pid> <TICK_WORKER> ok|fail <unix ns>". Each line is one O_APPEND write, so
// concurrent handlers never interleave. Schedules named flaky* fail their first two attempts; schedules named
// broken* always fail; schedules named third* fail every attempt of the slots whose Unix second, halved, is a
// multiple of 3 (every third slot of a 2 s schedule). A run that succeeds prints "ran <TICK_ID>". With TRACEPARENT and an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT) in its environment, it exports a span "handler", a child of TRACEPARENT's. With
// $HANDLER_ENV_DUMP set, it first appends "env <its environment>".
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

func main() {
	if tp := os.Getenv("TRACEPARENT"); tp != "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" {
		exporting = true
		defer traced(tp)()
	}
	id, attempt, sched := os.Getenv("TICK_ID"), os.Getenv("TICK_ATTEMPT"), os.Getenv("TICK_SCHEDULE")
	f, err := os.OpenFile(os.Getenv("HANDLER_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Getenv("HANDLER_ENV_DUMP") != "" { // what a test checks a handler never sees
		_, _ = f.WriteString("env " + strings.Join(os.Environ(), " ") + "\n")
	}
	now := func() string { return strconv.FormatInt(time.Now().UnixNano(), 10) }
	pid := strconv.Itoa(os.Getpid())
	_, _ = f.WriteString(strings.Join([]string{"start", id, attempt, pid, os.Getenv("TICK_WORKER"),
		os.Getenv("TICK_FENCE"), os.Getenv("TICK_INTERRUPTED"), now()}, " ") + "\n")
	sleep := os.Getenv("HANDLER_SLEEP")
	if v := os.Getenv("HANDLER_SLEEP_SLOW"); v != "" && strings.HasPrefix(sched, "slow") {
		sleep = v
	}
	if d, err := time.ParseDuration(sleep); err == nil {
		end := time.Now().Add(d)
		if os.Getenv("HANDLER_HEARTBEAT") != "" {
			for time.Now().Before(end) {
				time.Sleep(min(20*time.Millisecond, time.Until(end)))
				_, _ = f.WriteString(strings.Join([]string{"alive", id, attempt, pid, now()}, " ") + "\n")
			}
		}
		time.Sleep(time.Until(end))
	}
	n, _ := strconv.Atoi(attempt)
	ok := !(strings.HasPrefix(sched, "broken") || strings.HasPrefix(sched, "flaky") && n < 3 || strings.HasPrefix(sched, "third") && thirdFails())
	result := "ok"
	if !ok {
		result = "fail"
	}
	_, _ = f.WriteString(strings.Join([]string{"done", id, attempt, pid, os.Getenv("TICK_WORKER"), result, now()}, " ") + "\n")
	if !ok {
		fmt.Println("failing on purpose")
		if !exporting {
			os.Exit(1)
		}
		exit = 1 // the deferred export exits
		return
	}
	fmt.Println("ran", id) // its output, for a worker that records it (--record-output)
}

// exporting is set when the handler exports its span; exit is then the status it exits with, once the span is
// exported.
var (
	exporting bool
	exit      int
)

// traced starts the span "handler" as a child of traceparent's and returns what ends it, exports it and exits.
func traced(traceparent string) func() {
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("handler"))))
	parent := propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
	_, span := tp.Tracer("handler").Start(parent, "handler", trace.WithAttributes(attribute.String("tickgroup.tick.id", os.Getenv("TICK_ID"))))
	return func() {
		span.End()
		_ = tp.Shutdown(ctx)
		os.Exit(exit)
	}
}

// thirdFails reports whether the slot (TICK_SLOT_UNIX_MS) is one a third* schedule fails: its Unix second, halved,
// a multiple of 3.
func thirdFails() bool {
	ms, err := strconv.ParseInt(os.Getenv("TICK_SLOT_UNIX_MS"), 10, 64)
	return err == nil && (ms/1000/2)%3 == 0
}
