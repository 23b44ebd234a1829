package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// span is one line of otlpsink: a span the collector received.
type span struct {
	Service, Name, Trace, Span, Parent string
	TickID                             string `json:"tick_id"`
}

// TestE2ETracesReachACollector: with OTEL_EXPORTER_OTLP_ENDPOINT naming an OpenTelemetry Collector's OTLP
// receiver (testdata/otlpsink: the collector's own otlpreceiver), one tick is one trace there: the ticker's
// emission span is its root, the worker's attempt span a child of it, and the exec handler's own span, started
// from the TRACEPARENT it was given, a child of the attempt. The exec handler never sees the exporter's headers.
func TestE2ETracesReachACollector(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	addr := freeAddr(t)
	var out child.Log
	sink, err := child.Start("otlpsink", []string{built(t, "otlpsink"), addr}, child.Options{Output: &out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sink.Kill)
	kafkatest.Eventually(t, 30*time.Second, "the collector to listen", func() bool { return out.Contains("listening on") })

	e := setup(t)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + addr, "OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_EXPORTER_OTLP_HEADERS=x-secret=must-not-reach-handlers"}
	e.f.cli("schedule", "put", "traced", "--every", "1s")
	e.f.startEnv("a", "ticker", env, "run", "--session-timeout", "3s", "--heartbeat-interval", "250ms", "--instance", "a")
	e.start(append(env, "HANDLER_ENV_DUMP=1"), "--exec", handlerBin)

	// One tick's three spans, each with its parent.
	var found string
	kafkatest.Eventually(t, 60*time.Second, "a tick's emission, attempt and handler spans", func() bool {
		spans := spansOf(t, out.Tail(100000, ""))
		byID := map[string]span{}
		for _, s := range spans {
			byID[s.Span] = s
		}
		for _, h := range spans {
			if h.Name != "handler" || h.Service != "handler" {
				continue
			}
			a, ok := byID[h.Parent]
			if !ok || a.Name != "tickgroup.attempt" || a.Service != "worker" || a.TickID != h.TickID {
				continue
			}
			em, ok := byID[a.Parent]
			if ok && em.Name == "tickgroup.emit" && em.Service == "ticker" && em.Parent == "" && em.TickID == h.TickID &&
				em.Trace == a.Trace && a.Trace == h.Trace {
				found = h.TickID
				return true
			}
		}
		return false
	})
	t.Logf("tick %s: emission, attempt and handler spans in one trace", found)
	b, err := os.ReadFile(e.log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "env ") || !strings.Contains(string(b), "TRACEPARENT=00-") || strings.Contains(string(b), "must-not-reach-handlers") {
		t.Error("an exec handler did not see TRACEPARENT, or saw OTEL_EXPORTER_OTLP_HEADERS")
	}
}

// spansOf parses otlpsink's output (its JSON lines; other lines are its own).
func spansOf(t *testing.T, out string) []span {
	t.Helper()
	var spans []span
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var s span
		if strings.HasPrefix(sc.Text(), "{") && json.Unmarshal(sc.Bytes(), &s) == nil {
			spans = append(spans, s)
		}
	}
	return spans
}
