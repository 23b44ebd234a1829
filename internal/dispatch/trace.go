package dispatch

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tickgroup/tickgroup/internal/tracing"
)

// traceEmission starts a span per tick of recs (the state records are passed over), each the root of its
// tick's trace, and writes its trace context to the tick's record, so that the workers' attempts are its
// children (package tracing). It does nothing unless this process exports traces: a leader emitting a herd of
// 100,000 ticks pays for their spans only then. endEmission ends them once the transaction is decided.
func traceEmission(ctx context.Context, recs []*kgo.Record, ticker string) []trace.Span {
	if !tracing.On() {
		return nil
	}
	tr := tracing.Tracer()
	spans := make([]trace.Span, 0, len(recs))
	for _, r := range recs {
		if r.Topic == ticker {
			continue
		}
		id := string(r.Key)
		schedule, _, _ := strings.Cut(id, "@")
		sctx, sp := tr.Start(ctx, "tickgroup.emit", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
			attribute.String("tickgroup.tick.id", id),
			attribute.String("tickgroup.schedule", schedule),
			attribute.String("messaging.destination.name", r.Topic),
			attribute.Int("messaging.destination.partition.id", int(r.Partition)),
		))
		tracing.Inject(sctx, r)
		spans = append(spans, sp)
	}
	return spans
}

// endEmission ends the spans of traceEmission: err is the transaction's (nil: committed).
func endEmission(spans []trace.Span, err error) {
	for _, sp := range spans {
		if err != nil {
			sp.SetStatus(codes.Error, "the transaction did not commit: "+err.Error())
		}
		sp.End()
	}
}
