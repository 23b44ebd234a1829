package worker

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/tracing"
)

// startSpan starts the span of one attempt of t (package tracing): a child of the tick's emission when its
// record carries the emission's trace context, the root of a trace of its own otherwise. The handler gets the
// returned context, so that its own spans are children of the attempt. Without a TracerProvider
// (otel.SetTracerProvider) the span is a no-op and costs a call.
func (w *Worker) startSpan(ctx context.Context, rec *kgo.Record, t *tick.Tick, a *Attempt) (context.Context, trace.Span) {
	if rec != nil {
		ctx = tracing.Parent(ctx, tracing.FromRecord(rec))
	}
	ctx, sp := tracing.Tracer().Start(ctx, "tickgroup.attempt", trace.WithSpanKind(trace.SpanKindConsumer))
	if sp.IsRecording() {
		sp.SetAttributes(
			attribute.String("tickgroup.tick.id", t.ID),
			attribute.String("tickgroup.schedule", t.Schedule),
			attribute.String("tickgroup.slot", t.Slot.UTC().Format(time.RFC3339Nano)),
			attribute.Int("tickgroup.shard", t.Shard),
			attribute.Int("tickgroup.attempt", a.N),
			attribute.Bool("tickgroup.interrupted", a.Interrupted),
			attribute.Float64("tickgroup.lateness_seconds", w.cfg.Now().Sub(t.StartAt()).Seconds()),
			attribute.String("tickgroup.worker", a.Worker),
		)
	}
	return ctx, sp
}

// endSpan ends an attempt's span with its outcome: success, failure, timeout or cut (by its lease, or another
// worker's takeover).
func endSpan(span trace.Span, err, cutBy error, timedOut bool) {
	if !span.IsRecording() {
		span.End()
		return
	}
	outcome := "success"
	switch {
	case err == nil:
	case cutBy != nil:
		outcome = "cut"
	case timedOut:
		outcome = "timeout"
	case errors.As(err, new(*PanicError)):
		outcome = "panic"
	default:
		outcome = "failure"
	}
	span.SetAttributes(attribute.String("tickgroup.outcome", outcome))
	if err != nil {
		span.SetStatus(codes.Error, errlimit.Text(err.Error()))
	}
	span.End()
}
