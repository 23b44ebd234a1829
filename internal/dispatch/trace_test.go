package dispatch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTraceEmissionOffWritesNothing: without a TracerProvider, a leader's emission makes no span and writes no
// header: a herd pays nothing for traces nobody exports.
func TestTraceEmissionOffWritesNothing(t *testing.T) {
	recs := []*kgo.Record{{Topic: "ns.work", Key: []byte("a@1")}, {Topic: "ns.ticker", Key: []byte("a")}}
	if spans := traceEmission(t.Context(), recs, "ns.ticker"); spans != nil || len(recs[0].Headers)+len(recs[1].Headers) != 0 {
		t.Fatalf("tracing off: %d spans, headers %v %v", len(spans), recs[0].Headers, recs[1].Headers)
	}
}
