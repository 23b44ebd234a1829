package clock_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/clock"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

func kafkaSource(t *testing.T, seeds []string, topic string) *clock.Kafka {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return clock.NewKafka(cl, topic, "test")
}

// TestKafkaSourceRealBroker: on a real broker, a topic made as `ticker init` makes it stamps LogAppendTime, and
// this host, in sync with the broker (same machine), reads an offset of about zero, within its bound. A
// CreateTime topic and a missing one are unmeasurable, with a reason.
func TestKafkaSourceRealBroker(t *testing.T) {
	t.Parallel()
	seeds := kafkatest.Brokers(t)
	ns := kafkatest.NewNamespace(t)
	names := kafka.Config{Namespace: ns}.Names()
	adm := kafkatest.Admin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kafka.EnsureTopics(ctx, adm, names, kafka.TopicOptions{WorkPartitions: 1}); err != nil {
		t.Fatalf("creating the topics: %v", err)
	}
	src := kafkaSource(t, seeds, names.Clock)
	var best clock.Reading
	for i := range 5 {
		s, err := src.Sample(ctx, time.Now)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		r := clock.Read(s)
		t.Logf("sample %d: offset %v ± %v", i, r.Offset, r.Uncertainty)
		if i == 0 || r.Uncertainty < best.Uncertainty {
			best = r
		}
	}
	// Same host: the true offset is 0, which must lie inside the bound (plus a little for the broker's own
	// clock reading, which is not at the exact instant of the append).
	if abs := max(best.Offset, -best.Offset); abs > best.Uncertainty+5*time.Millisecond {
		t.Errorf("offset %v ± %v on the broker's own host, want 0 within the bound", best.Offset, best.Uncertainty)
	}

	// The Monitor on it: measured, within, series present.
	reg := prometheus.NewRegistry()
	m, err := clock.New(clock.Config{Interval: 20 * time.Millisecond}, src, slog.New(slog.NewTextHandler(io.Discard, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(mctx) }()
	kafkatest.Eventually(t, 10*time.Second, "a measurement", func() bool { _, ok := m.Offset(); return ok })
	if m.Refusal() != "" || countSeries(t, reg, "tickgroup_clock_offset_seconds") != 1 {
		t.Errorf("refusal %q, %d offset series; want none and 1", m.Refusal(), countSeries(t, reg, "tickgroup_clock_offset_seconds"))
	}
	mcancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}

	createTime := kafkatest.NewTopic(t, 1, nil)
	_, err = kafkaSource(t, seeds, createTime).Sample(ctx, time.Now)
	if !errors.Is(err, clock.ErrUnmeasurable) || !strings.Contains(err.Error(), "LogAppendTime") {
		t.Errorf("CreateTime topic: %v, want unmeasurable, naming LogAppendTime", err)
	}
	_, err = kafkaSource(t, seeds, ns+".no-such-topic").Sample(ctx, time.Now)
	if !errors.Is(err, clock.ErrUnmeasurable) || !strings.Contains(err.Error(), "ticker init") {
		t.Errorf("missing topic: %v, want unmeasurable, pointing to ticker init", err)
	}
}

// TestKafkaSourceUnmeasurableOnKfake: kfake stamps LogAppendTime only when the client asks in the batch (a real
// broker follows the topic's config and rejects such a batch), so on kfake every topic reads as CreateTime: the
// paths of a missing and of a CreateTime topic, without a broker.
func TestKafkaSourceUnmeasurableOnKfake(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "ns.clock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = kafkaSource(t, c.ListenAddrs(), "ns.clock").Sample(ctx, time.Now)
	if !errors.Is(err, clock.ErrUnmeasurable) || !strings.Contains(err.Error(), "CreateTime") {
		t.Errorf("kfake topic: %v, want unmeasurable (CreateTime)", err)
	}
	_, err = kafkaSource(t, c.ListenAddrs(), "ns.missing").Sample(ctx, time.Now)
	if !errors.Is(err, clock.ErrUnmeasurable) {
		t.Errorf("missing topic: %v, want unmeasurable", err)
	}
}
