package worker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// BenchmarkHotPath measures the per-record work of a lane without a broker: decode the tick, check its deadline,
// run a no-op handler (attempt context, metrics) and build the outcome record.
func BenchmarkHotPath(b *testing.B) {
	w, err := New(Config{Kafka: kafka.Config{Namespace: "bench"}, WorkerID: "bench"},
		HandlerFunc(func(context.Context, tick.Tick, Attempt) error { return nil }), Deps{})
	if err != nil {
		b.Fatal(err)
	}
	tk := tick.New("bench-schedule", time.Now().Truncate(time.Second), 3, 12)
	deadline := time.Now().Add(time.Hour)
	tk.Deadline = &deadline
	v, err := tick.Encode(tk)
	if err != nil {
		b.Fatal(err)
	}
	rec := &kgo.Record{Topic: "bench.work", Partition: 3, Offset: 42, Key: []byte(tk.ID), Value: v}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		t, err := tick.Decode(rec.Value)
		o, dl := w.process(ctx, before{rec: rec, t: t, err: err, now: w.cfg.Now()}, noGate{})
		if dl != nil || o.Status != StatusOK {
			b.Fatalf("status %s, %v", o.Status, dl)
		}
		_ = w.resultRecord(rec, o.Outcome, 12)
	}
}

// BenchmarkDecode is the tick.Decode share of the hot path.
func BenchmarkDecode(b *testing.B) {
	v, _ := tick.Encode(tick.New("bench-schedule", time.Now().Truncate(time.Second), 3, 12))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tick.Decode(v); err != nil {
			b.Fatal(err)
		}
	}
}

// noGate starts every attempt at once, without a ledger.
type noGate struct{}

func (noGate) begin(ctx context.Context, _ *kgo.Record, _ tick.Tick, _ *Attempt) (context.Context, func(error) error, error) {
	return ctx, func(error) error { return nil }, nil
}

func (noGate) retry(ctx context.Context, _ *kgo.Record, _ tick.Tick, _ *Attempt, _ error, delay time.Duration) bool {
	return sleep(ctx, delay)
}
