package limit

// Tests of the View against kfake, franz-go's in-process fake broker: how it folds the limits topic (a valid
// record, forged and invalid ones, a tombstone) and what it does while the topic does not exist.

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

const limitsTopic = "ns.limits"

// testBundle is what every test gets from setup: a kfake cluster, a producing client on it, and a View of the
// limits topic whose logs go to a buffer.
type testBundle struct {
	cl   *kgo.Client
	view *View
	reg  *prometheus.Registry
	logs *kafkatest.SyncBuffer
	ctx  context.Context // ends with the test
}

// setup starts a cluster, with the limits topic when seeded, and a View of it (not running).
func setup(t *testing.T, seeded bool) *testBundle {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if seeded {
		opts = append(opts, kfake.SeedTopics(1, limitsTopic))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	kopts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(kopts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	b := &testBundle{cl: cl, reg: prometheus.NewRegistry(), logs: &kafkatest.SyncBuffer{}, ctx: ctx}
	b.view = NewView(kopts, limitsTopic, slog.New(slog.NewTextHandler(b.logs, nil)), b.reg)
	return b
}

// run runs the View until the test ends, and checks that it then returns nil.
func (b *testBundle) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan error, 1)
	go func() { done <- b.view.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run after its context ended: %v, want nil", err)
		}
	})
}

func (b *testBundle) produce(t *testing.T, key string, value []byte) {
	t.Helper()
	if err := b.cl.ProduceSync(b.ctx, &kgo.Record{Topic: limitsTopic, Key: []byte(key), Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func encoded(t *testing.T, l Limit) []byte {
	t.Helper()
	v, err := Encode(l)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestViewRefusesForgedRecords: a valid limit is taken; records that are no valid limit of their key (another
// name, another major version, a bound out of range, not JSON) are counted and skipped, the key keeping its
// last valid definition, and logged once for the key; a tombstone deletes the limit.
func TestViewRefusesForgedRecords(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	db := Limit{Name: "db", Concurrency: 4, Rate: 100, Window: schedule.Duration(time.Minute)}
	b.produce(t, "db", encoded(t, db))
	for _, forged := range []string{
		`{"v":1,"name":"other","concurrency":1000}`, // another key's name
		`{"v":2,"name":"db","concurrency":1000}`,    // a later major version
		`{"v":1,"name":"db","concurrency":-1}`,      // out of range
		`{"v":1,"name":"db"}`,                       // no bound
		"\x00not json",
	} {
		b.produce(t, "db", []byte(forged))
	}
	b.produce(t, "Bad Name", []byte(`{"v":1,"name":"Bad Name","concurrency":1}`))
	b.run(t)
	kafkatest.Eventually(t, 10*time.Second, "the view to load", kafkatest.Signalled(b.view.Loaded()))

	if got, ok := b.view.Get("db"); !ok || got.Concurrency != 4 || got.Rate != 100 || got.V != Version {
		t.Errorf("Get(db) = %+v, %v; want the valid definition", got, ok)
	}
	if all := b.view.All(); len(all) != 1 {
		t.Errorf("All = %+v, want db alone", all)
	}
	if n := refused(b.view); n != 6 {
		t.Errorf("refused records counted: %v, want 6", n)
	}
	if n := strings.Count(b.logs.String(), "refusing a record"); n != 2 {
		t.Errorf("%d refusals logged, want 2 (once per key):\n%s", n, b.logs.String())
	}

	// A change after the load signals Changed; a tombstone deletes.
	kafkatest.Drain(b.view.Changed())
	b.produce(t, "db", encoded(t, Limit{Name: "db", Concurrency: 8}))
	kafkatest.Eventually(t, 10*time.Second, "the change", func() bool { l, _ := b.view.Get("db"); return l.Concurrency == 8 })
	kafkatest.Eventually(t, time.Second, "Changed", kafkatest.Signalled(b.view.Changed()))
	b.produce(t, "db", nil)
	kafkatest.Eventually(t, 10*time.Second, "the deletion", func() bool { _, ok := b.view.Get("db"); return !ok })

	// Once the key held a valid record again, a new refusal of it is logged again.
	b.produce(t, "db", []byte(`{"v":1,"name":"db","concurrency":100000}`))
	kafkatest.Eventually(t, 10*time.Second, "the refusal", func() bool { return refused(b.view) == 7 })
	if n := strings.Count(b.logs.String(), "refusing a record"); n != 3 {
		t.Errorf("%d refusals logged, want 3:\n%s", n, b.logs.String())
	}
}

// TestViewWithoutTopic: a namespace without a limits topic has no limit, and the View is loaded at once; once
// the topic is made, the View finds it and follows it.
func TestViewWithoutTopic(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.view.Recheck = 100 * time.Millisecond
	b.run(t)
	kafkatest.Eventually(t, 10*time.Second, "the view to load", kafkatest.Signalled(b.view.Loaded()))
	if all := b.view.All(); len(all) != 0 {
		t.Errorf("All without a topic = %+v", all)
	}
	if _, err := kadm.NewClient(b.cl).CreateTopic(b.ctx, 1, 1, nil, limitsTopic); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "db", encoded(t, Limit{Name: "db", Concurrency: 2, Pool: "batch"}))
	kafkatest.Eventually(t, 10*time.Second, "the limit", func() bool { l, ok := b.view.Get("db"); return ok && l.Pool == "batch" })
}

// TestLoad: Load reads what a View reads, and a namespace without the topic has no limit.
func TestLoad(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	adm := kadm.NewClient(b.cl)
	opts := []kgo.Opt{kgo.SeedBrokers(b.cl.OptValue(kgo.SeedBrokers).([]string)...)}
	got, err := Load(b.ctx, opts, adm, limitsTopic)
	if err != nil || len(got) != 0 {
		t.Fatalf("Load without a topic = %v, %v", got, err)
	}
	if _, err := adm.CreateTopic(b.ctx, 1, 1, nil, limitsTopic); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "db", encoded(t, Limit{Name: "db", Concurrency: 2}))
	b.produce(t, "db", []byte(`{"v":1,"name":"other","concurrency":9}`))
	b.produce(t, "gone", encoded(t, Limit{Name: "gone", Concurrency: 2}))
	b.produce(t, "gone", nil)
	got, err = Load(b.ctx, opts, adm, limitsTopic)
	if err != nil || len(got) != 1 || got["db"].Concurrency != 2 {
		t.Errorf("Load = %+v, %v; want db with concurrency 2", got, err)
	}
}

// refused is the View's count of refused records.
func refused(v *View) float64 {
	var m dto.Metric
	if err := v.metrics.refused.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
