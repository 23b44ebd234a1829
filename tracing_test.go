package tickgroup_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tracing"
)

// TestTracesOneTracePerTick: with a TracerProvider (here one that records), a tick is one trace: the leader's
// emission span is its root, each worker attempt a child of it (the trace context rides on the tick's record),
// and the handler's own span, started from its context, a child of the attempt.
func TestTracesOneTracePerTick(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	restore := tracing.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	defer restore()
	k := testKafka(t)
	s, err := tickgroup.NewSchedules(k)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := s.Put(ctx, tickgroup.Schedule{Name: "traced", Every: tickgroup.Duration(time.Second)}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ticker, err := tickgroup.NewTicker(tickgroup.TickerConfig{Kafka: k, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	handled := map[string]trace.SpanContext{} // tick ID -> the handler's span
	worker, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: k, Registerer: reg}, func(ctx context.Context, tk tickgroup.Tick) error {
		_, sp := tracing.Tracer().Start(ctx, "handler")
		defer sp.End()
		mu.Lock()
		handled[tk.ID] = sp.SpanContext()
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return ticker.Run(gctx) })
	g.Go(func() error { return worker.Run(gctx) })
	kafkatest.Eventually(t, 60*time.Second, "3 ticks handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) >= 3 })
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}

	byName := map[string][]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		byName[sp.Name()] = append(byName[sp.Name()], sp)
	}
	idOf := func(sp sdktrace.ReadOnlySpan) string {
		for _, a := range sp.Attributes() {
			if a.Key == "tickgroup.tick.id" {
				return a.Value.AsString()
			}
		}
		return ""
	}
	emits := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range byName["tickgroup.emit"] {
		emits[idOf(sp)] = sp
	}
	attempts := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range byName["tickgroup.attempt"] {
		attempts[idOf(sp)] = sp
	}
	mu.Lock()
	defer mu.Unlock()
	for id, h := range handled {
		emit, ok1 := emits[id]
		attempt, ok2 := attempts[id]
		if !ok1 || !ok2 {
			t.Errorf("tick %s: emission span %v, attempt span %v", id, ok1, ok2)
			continue
		}
		if emit.Parent().IsValid() {
			t.Errorf("tick %s: the emission span has a parent %v, want it the trace's root", id, emit.Parent())
		}
		if attempt.Parent().SpanID() != emit.SpanContext().SpanID() || attempt.SpanContext().TraceID() != emit.SpanContext().TraceID() {
			t.Errorf("tick %s: the attempt's parent is %v, want the emission %v", id, attempt.Parent(), emit.SpanContext())
		}
		if h.TraceID() != emit.SpanContext().TraceID() {
			t.Errorf("tick %s: the handler's span is in trace %v, want %v", id, h.TraceID(), emit.SpanContext().TraceID())
		}
	}
	for _, sp := range byName["handler"] {
		if p := sp.Parent(); attempts[idOfHandler(sp, handled)].SpanContext().SpanID() != p.SpanID() {
			t.Errorf("a handler span's parent %v is not its attempt", p)
		}
	}
}

// idOfHandler is the tick whose handler made span sp.
func idOfHandler(sp sdktrace.ReadOnlySpan, handled map[string]trace.SpanContext) string {
	for id, sc := range handled {
		if sc.SpanID() == sp.SpanContext().SpanID() {
			return id
		}
	}
	return ""
}

// TestTracesTrigger: a trigger made in a traced context is a span of the caller's trace, and its tick's attempt
// a child of it.
func TestTracesTrigger(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	restore := tracing.Use(tp)
	defer restore()
	k := testKafka(t)
	s, err := tickgroup.NewSchedules(k)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := s.Put(ctx, tickgroup.Schedule{Name: "manual", Cron: "0 0 1 1 *"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	worker, err := tickgroup.NewWorker(tickgroup.WorkerConfig{Kafka: k, Registerer: prometheus.NewRegistry()}, func(_ context.Context, tk tickgroup.Tick) error {
		select {
		case done <- tk.ID:
		default:
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return worker.Run(gctx) })
	waitReady(t, worker)
	callerCtx, caller := tp.Tracer("test").Start(ctx, "caller")
	ids, err := s.Trigger(callerCtx, "manual")
	caller.End()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-done:
		if id != ids[0] {
			t.Fatalf("ran %s, triggered %s", id, ids[0])
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the triggered tick did not run in 30 s")
	}
	cancel()
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	var trigger, attempt sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		switch sp.Name() {
		case "tickgroup.trigger":
			trigger = sp
		case "tickgroup.attempt":
			attempt = sp
		}
	}
	if trigger == nil || attempt == nil {
		t.Fatalf("spans: trigger %v, attempt %v", trigger != nil, attempt != nil)
	}
	if trigger.Parent().SpanID() != caller.SpanContext().SpanID() || attempt.Parent().SpanID() != trigger.SpanContext().SpanID() {
		t.Errorf("trigger's parent %v (want the caller %v), attempt's parent %v (want the trigger %v)",
			trigger.Parent().SpanID(), caller.SpanContext().SpanID(), attempt.Parent().SpanID(), trigger.SpanContext().SpanID())
	}
}
