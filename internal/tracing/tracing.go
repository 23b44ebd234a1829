// Package tracing is tickgroup's OpenTelemetry traces: off unless the standard OTEL_ variables configure an
// exporter, and then one trace per tick. The leader's emission of a tick is a span whose W3C trace context rides
// on the tick's record (a "traceparent" header); each attempt of a worker is a span in the same trace, child of
// the emission, and its handler gets the attempt's context: a Go handler in its context, an exec handler as
// TRACEPARENT, an HTTP handler as the traceparent header. A handler's own spans are then children of its attempt.
//
// Setup reads the environment as every OpenTelemetry SDK does: OTEL_TRACES_EXPORTER (otlp or none),
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (OTLP over HTTP/protobuf), their _HEADERS
// and _TIMEOUT, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and its _ARG. Without an
// endpoint or an exporter, and with OTEL_SDK_DISABLED=true, tracing is off and costs nothing: no span is made
// and no header written.
package tracing

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Header is the record header, and the exec handler's variable (upper-cased), of a tick's trace context.
const Header = "traceparent"

// Shutdown flushes the spans buffered and stops the exporter; a no-op when tracing is off.
type Shutdown func(context.Context) error

// Tracer is tickgroup's tracer, from the global TracerProvider (otel.SetTracerProvider): Setup's, or a library
// user's own.
func Tracer() trace.Tracer { return otel.Tracer("github.com/tickgroup/tickgroup") }

// Enabled reports whether the environment configures an exporter.
func Enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "":
	default:
		return true // otlp, or one Setup refuses by name
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Start is Setup for a command: it logs that traces are exported (and where, never the headers: they may carry a
// credential), and returns a function that flushes them for at most 5 s, to defer.
func Start(ctx context.Context, service string, logger *slog.Logger) (func(), error) {
	shutdown, err := Setup(ctx, service)
	if err != nil {
		return nil, err
	}
	if Enabled() {
		logger.Info("exporting traces (OpenTelemetry, OTLP over HTTP)", "endpoint",
			cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "http://localhost:4318"))
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			logger.Warn("flushing the traces", "err", err)
		}
	}, nil
}

// Use makes tp the process's global TracerProvider (a test's); the function it returns undoes it. A library
// user calls otel.SetTracerProvider.
func Use(tp trace.TracerProvider) (restore func()) {
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	return func() { otel.SetTracerProvider(prev) }
}

// Setup makes the environment's exporter the process's global TracerProvider. service is the default service name (ticker, worker). Without an exporter configured it changes
// nothing and returns a no-op Shutdown.
func Setup(ctx context.Context, service string) (Shutdown, error) {
	if !Enabled() {
		return func(context.Context) error { return nil }, nil
	}
	if e := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); e != "" && e != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: want otlp or none", e)
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return nil, fmt.Errorf("%s=%s: want http/protobuf", v, p)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.NewSchemaless(semconv.ServiceName(service)), resource.Environment())
	if err != nil {
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, nil
}

var propagator = propagation.TraceContext{}

// Inject writes the trace context of ctx's span to r's headers (nothing when ctx has none).
func Inject(ctx context.Context, r *kgo.Record) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	propagator.Inject(ctx, recordCarrier{r})
}

// Traceparent returns the W3C traceparent of ctx's span, "" when ctx has none.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c[Header]
}

// FromRecord returns the traceparent header of r, "" when it has none.
func FromRecord(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == Header {
			return string(h.Value)
		}
	}
	return ""
}

// Parent returns ctx with the remote span context of traceparent (ctx itself when it is empty or malformed: a
// malformed header starts a trace of its own).
func Parent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{Header: traceparent})
}

// recordCarrier is a kgo.Record's headers as a propagation.TextMapCarrier.
type recordCarrier struct{ r *kgo.Record }

func (c recordCarrier) Get(key string) string {
	for _, h := range c.r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func (c recordCarrier) Set(key, value string) {
	for i, h := range c.r.Headers {
		if h.Key == key {
			c.r.Headers[i].Value = []byte(value)
			return
		}
	}
	c.r.Headers = append(c.r.Headers, kgo.RecordHeader{Key: key, Value: []byte(value)})
}

func (c recordCarrier) Keys() []string { return []string{Header} }
