package tracing

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestEnabled: tracing is on only when the environment names an exporter, and OTEL_SDK_DISABLED or
// OTEL_TRACES_EXPORTER=none turns it off.
func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"} {
			t.Setenv(v, tc.env[v])
		}
		if got := Enabled(); got != tc.want {
			t.Errorf("Enabled with %v = %v, want %v", tc.env, got, tc.want)
		}
	}
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "zipkin")
	if _, err := Setup(t.Context(), "ticker"); err == nil {
		t.Error("OTEL_TRACES_EXPORTER=zipkin accepted")
	}
}

// TestRecordHeader: a trace context written to a record is read back from it; a context without a span writes
// nothing, and a malformed header starts no trace.
func TestRecordHeader(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	r := &kgo.Record{}
	Inject(context.Background(), r)
	if len(r.Headers) != 0 || Traceparent(context.Background()) != "" {
		t.Fatalf("no span: headers %v", r.Headers)
	}
	Inject(Parent(context.Background(), tp), r)
	Inject(Parent(context.Background(), tp), r) // a second write replaces the header
	if len(r.Headers) != 1 || FromRecord(r) != tp {
		t.Fatalf("headers %v, want one traceparent %s", r.Headers, tp)
	}
	if got := Traceparent(Parent(context.Background(), "garbage")); got != "" {
		t.Errorf("a malformed traceparent gave %q", got)
	}
}
