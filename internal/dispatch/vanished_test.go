package dispatch_test

import (
	"context"

	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/dispatch"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// TestVanishedStateOfASlotEmittedAhead: a new schedule's first slot is emitted ahead (it is due within the
// lead), then its state record vanishes and another term starts before the slot is due. The new term must find
// the slot on the work topic rather than take the schedule for a new one and emit the slot again.
func TestVanishedStateOfASlotEmittedAhead(t *testing.T) {
	if testing.Short() {
		t.Skip("real broker")
	}
	seeds := kafkatest.Brokers(t)
	ns := kafkatest.NewNamespace(t)
	cfg := kafka.Config{Brokers: seeds, Namespace: ns}
	names := cfg.Names()
	opts, err := cfg.Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), names, kafka.TopicOptions{WorkPartitions: 3}); err != nil {
		t.Fatal(err)
	}
	// An every-minute schedule whose first slot is 8 s away: inside the 15 s lead, so term A emits it at once.
	first := time.Now().Add(8 * time.Second).Truncate(time.Second)
	offset := time.Duration(first.Unix()%60) * time.Second
	if _, err := store.Put(ctx, cl, names.Schedules, schedule.Spec{Name: "ahead", Every: schedule.Duration(time.Minute), Offset: schedule.Duration(offset)}); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	view := store.NewView(opts, names.Schedules, "", logger, nil)
	go func() { _ = view.Run(ctx) }()
	reg := prometheus.NewRegistry()
	newDispatcher := func(reg prometheus.Registerer) *dispatch.Dispatcher {
		d, err := dispatch.New(dispatch.Config{Names: names, Lead: 15 * time.Second}, opts, view, logger, reg)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	aCtx, aStop := context.WithCancel(ctx)
	aErr := make(chan error, 1)
	go func() { aErr <- newDispatcher(nil).Lead(aCtx, leader.Term{Number: 1}) }()
	waitTicks(t, ctx, opts, names.Work, 1)
	aStop()
	if err := <-aErr; err != nil {
		t.Fatalf("term A: %v", err)
	}
	if time.Now().After(first.Add(-2 * time.Second)) {
		t.Skipf("the machine took too long: the first slot %s is (nearly) due already", first.Format(time.TimeOnly))
	}
	// The state vanishes: a tombstone on the ticker topic.
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: names.Ticker, Partition: 0, Key: []byte("ahead")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	bCtx, bStop := context.WithCancel(ctx)
	bErr := make(chan error, 1)
	go func() { bErr <- newDispatcher(reg).Lead(bCtx, leader.Term{Number: 2}) }()
	time.Sleep(time.Until(first.Add(3 * time.Second))) // past the slot: term B has had its chance to emit it again
	bStop()
	if err := <-bErr; err != nil {
		t.Fatalf("term B: %v", err)
	}
	n := 0
	for _, tk := range readTicks(t, ctx, opts, names.Work) {
		if tk.Schedule == "ahead" && tk.Slot.Equal(first) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the first slot %s was emitted %d times, want once", first.Format(time.TimeOnly), n)
	}
	if got := counterValue(t, reg, "tickgroup_leader_state_recovered_total"); got != 1 {
		t.Errorf("tickgroup_leader_state_recovered_total = %v on term B, want 1", got)
	}
}

// counterValue is the value of the counter called name in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
