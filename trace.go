package tickgroup

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tickgroup/tickgroup/internal/tracing"
)

// traceTrigger starts a span per tick a trigger writes, a child of ctx's span when it has one (the caller's
// trace), and writes its context to the tick's record, so that the workers' attempts are its children. The
// function it returns ends them with the write's error. Without a TracerProvider it writes nothing.
func traceTrigger(ctx context.Context, recs []*kgo.Record) func(error) {
	var spans []trace.Span
	for _, r := range recs {
		sctx, sp := tracing.Tracer().Start(ctx, "tickgroup.trigger", trace.WithSpanKind(trace.SpanKindProducer),
			trace.WithAttributes(attribute.String("tickgroup.tick.id", string(r.Key))))
		if !sp.SpanContext().IsValid() {
			break
		}
		tracing.Inject(sctx, r)
		spans = append(spans, sp)
	}
	return func(err error) {
		for _, sp := range spans {
			if err != nil {
				sp.SetStatus(codes.Error, err.Error())
			}
			sp.End()
		}
	}
}
