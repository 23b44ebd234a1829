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
// children (package tracing). Without a TracerProvider (otel.SetTracerProvider: tracing.Setup's, or a library
// user's) it stops at the first tick, having written nothing: a leader emitting a herd of 100,000 ticks pays
// for their spans only when it exports them. endEmission ends them once the transaction is decided.
func traceEmission(ctx context.Context, recs []*kgo.Record, ticker string) []trace.Span {
	tr := tracing.Tracer()
	var spans []trace.Span
	for _, r := range recs {
		if r.Topic == ticker {
			continue
		}
		sctx, sp := tr.Start(ctx, "tickgroup.emit", trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer))
		if !sp.SpanContext().IsValid() {
			return nil // no TracerProvider: no span, no header (the first tick says so for the batch)
		}
		if sp.IsRecording() { // sampled
			id := string(r.Key)
			schedule, _, _ := strings.Cut(id, "@")
			sp.SetAttributes(
				attribute.String("tickgroup.tick.id", id),
				attribute.String("tickgroup.schedule", schedule),
				attribute.String("messaging.destination.name", r.Topic),
				attribute.Int("messaging.destination.partition.id", int(r.Partition)),
			)
		}
		tracing.Inject(sctx, r) // sampled or not: the workers' attempts follow the emission's decision
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
