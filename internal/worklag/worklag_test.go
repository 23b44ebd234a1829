package worklag

import (
	"context"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

type bundle struct {
	topic, group string
	opts         []kgo.Opt
	adm          *kadm.Client
	now          time.Time
}

// setup makes a 3-partition work topic on the real broker and a group that committed:
//   - partition 0: two ticks in one transaction (slots now-60s and now-30s), committed at 0: both pending;
//   - partition 1: one tick in a transaction, committed after it: caught up, only its marker is left;
//   - partition 2: one tick, nothing committed: no series.
func setup(t *testing.T) *bundle {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a broker")
	}
	b := &bundle{
		topic: kafkatest.NewTopic(t, 3, nil),
		group: kafkatest.NewGroup(t),
		opts:  []kgo.Opt{kgo.SeedBrokers(kafkatest.Brokers(t)...)},
		adm:   kafkatest.Admin(t),
		now:   time.Now().Truncate(time.Second),
	}
	cl, err := kgo.NewClient(append(b.opts, kgo.TransactionalID(kafkatest.Unique("lag")), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produce := func(partition int32, slots ...time.Time) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, s := range slots {
			tk := tick.New("beat", s, 0, 1)
			v, _ := tick.Encode(tk)
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: b.topic, Partition: partition, Key: []byte(tk.ID), Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, b.now.Add(-60*time.Second), b.now.Add(-30*time.Second))
	produce(1, b.now.Add(-10*time.Second))
	produce(2, b.now.Add(-10*time.Second))
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: b.topic, Partition: 0, At: 0, LeaderEpoch: -1})
	offsets.Add(kadm.Offset{Topic: b.topic, Partition: 1, At: 1, LeaderEpoch: -1})
	resp, err := b.adm.CommitOffsets(ctx, b.group, offsets)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("committing the group's offsets: %v", err)
	}
	return b
}

func (b *bundle) monitor(t *testing.T, reg prometheus.Registerer, interval time.Duration) *Monitor {
	t.Helper()
	m, err := New(Config{Topic: b.topic, Group: b.group, Interval: interval, Now: func() time.Time { return b.now }}, b.opts, slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMeasure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	m := b.monitor(t, nil, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	parts, err := m.Measure(ctx, b.adm)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if len(parts) != 2 {
		t.Fatalf("got %d partitions (%+v), want 2: partition 2 has no commit", len(parts), parts)
	}
	p0, p1 := parts[0], parts[1]
	t.Logf("partition 0: %+v; partition 1: %+v; measured in %v", p0, p1, took.Round(time.Millisecond))
	if p0.Partition != 0 || p0.Offsets != 3 || p0.Committed != 0 || p0.End != 3 {
		t.Errorf("partition 0: %+v, want 3 offsets behind (2 ticks + the commit marker)", p0)
	}
	if !p0.Oldest.Equal(b.now.Add(-60*time.Second)) || math.Abs(p0.Seconds-60) > 1e-9 {
		t.Errorf("partition 0: oldest %v, %vs; want the slot now-60s, 60s", p0.Oldest, p0.Seconds)
	}
	if p1.Partition != 1 || p1.Offsets != 1 || !p1.Oldest.IsZero() || p1.Seconds != 0 {
		t.Errorf("partition 1: %+v, want 1 offset (the marker) and no pending tick", p1)
	}
	// The caught-up partition settles on its marker; it must not wait for the fetch timeout (5s).
	if took > 4*time.Second {
		t.Errorf("measuring took %v: a marker-only partition waited for the fetch timeout", took)
	}
}

func TestRunExportsWhileRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg := prometheus.NewRegistry()
	m := b.monitor(t, reg, 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	deadline := time.Now().Add(20 * time.Second)
	for len(series(t, reg, "tickgroup_work_lag_seconds")) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no lag series after 20s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := series(t, reg, "tickgroup_work_lag_seconds")["0"]; got != 60 {
		t.Errorf("tickgroup_work_lag_seconds{partition=0} = %v, want 60", got)
	}
	if got := series(t, reg, "tickgroup_work_lag_offsets")["1"]; got != 1 {
		t.Errorf("tickgroup_work_lag_offsets{partition=1} = %v, want 1", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if n := len(series(t, reg, "tickgroup_work_lag_offsets")) + len(series(t, reg, "tickgroup_work_lag_seconds")); n != 0 {
		t.Errorf("%d series left after Run returned; a replica that stops leading must stop exporting", n)
	}
}

// series returns the values of metric by partition label.
func series(t *testing.T, reg *prometheus.Registry, metric string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != metric {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "partition" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}
