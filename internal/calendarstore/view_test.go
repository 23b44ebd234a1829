package calendarstore

// Tests of the View against kfake, franz-go's in-process fake broker: how it folds the calendars topic (a valid
// record, forged and invalid ones, a tombstone) and what it does while the topic does not exist.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

const calendarsTopic = "ns.calendars"

// testBundle is what every test gets from setup: a kfake cluster, a producing client on it, and a View of the
// calendars topic whose logs go to a buffer.
type testBundle struct {
	cl   *kgo.Client
	view *View
	reg  *prometheus.Registry
	logs *kafkatest.SyncBuffer
	ctx  context.Context // ends with the test
}

// setup starts a cluster, with the calendars topic when seeded, and a View of it (not running).
func setup(t *testing.T, seeded bool) *testBundle {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if seeded {
		opts = append(opts, kfake.SeedTopics(1, calendarsTopic))
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
	b.view = NewView(kopts, calendarsTopic, slog.New(slog.NewTextHandler(b.logs, nil)), b.reg)
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
	if err := b.cl.ProduceSync(b.ctx, &kgo.Record{Topic: calendarsTopic, Key: []byte(key), Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func encoded(t *testing.T, s calendar.Spec) []byte {
	t.Helper()
	v, err := calendar.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestViewRefusesForgedRecords: a valid calendar is taken; records that are no valid calendar of their key
// (another name, another major version, no working day, a bad date, not JSON) are counted and skipped, the key
// keeping its last valid definition, and logged once for the key; a tombstone deletes the calendar.
func TestViewRefusesForgedRecords(t *testing.T) {
	t.Parallel()
	b := setup(t, true)
	de := calendar.Spec{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-25", "2026-12-26"}, Weekdays: []string{"sat", "sun"}}
	b.produce(t, "de", encoded(t, de))
	for _, forged := range []string{
		`{"v":1,"name":"other","weekdays":["mon"]}`,                                  // another key's name
		`{"v":2,"name":"de","weekdays":["mon"]}`,                                     // a later major version
		`{"v":1,"name":"de","weekdays":["mon","tue","wed","thu","fri","sat","sun"]}`, // no working day
		`{"v":1,"name":"de","dates":["2026-02-30"]}`,                                 // no such date
		"\x00not json",
	} {
		b.produce(t, "de", []byte(forged))
	}
	b.produce(t, "Bad Name", []byte(`{"v":1,"name":"Bad Name","weekdays":["sun"]}`))
	b.run(t)
	kafkatest.Eventually(t, 10*time.Second, "the view to load", kafkatest.Signalled(b.view.Loaded()))

	if got, ok := b.view.Get("de"); !ok || got.Location().String() != "Europe/Berlin" || !got.ExcludesDate(2026, 12, 25) || got.ExcludesDate(2026, 12, 28) {
		t.Errorf("Get(de) = %+v, %v; want the valid definition", got, ok)
	}
	if all := b.view.All(); len(all) != 1 {
		t.Errorf("All = %+v, want de alone", all)
	}
	if n := refused(b.view); n != 6 {
		t.Errorf("refused records counted: %v, want 6", n)
	}
	if n := strings.Count(b.logs.String(), "refusing a record"); n != 2 {
		t.Errorf("%d refusals logged, want 2 (once per key):\n%s", n, b.logs.String())
	}

	// A change after the load signals Changed; a tombstone deletes.
	kafkatest.Drain(b.view.Changed())
	b.produce(t, "de", encoded(t, calendar.Spec{Name: "de", Weekdays: []string{"sun"}}))
	kafkatest.Eventually(t, 10*time.Second, "the change", func() bool { c, _ := b.view.Get("de"); return !c.ExcludesDate(2026, 12, 25) })
	kafkatest.Eventually(t, time.Second, "Changed", kafkatest.Signalled(b.view.Changed()))
	b.produce(t, "de", nil)
	kafkatest.Eventually(t, 10*time.Second, "the deletion", func() bool { _, ok := b.view.Get("de"); return !ok })

	// Once the key held a valid record again, a new refusal of it is logged again.
	b.produce(t, "de", encoded(t, de))
	b.produce(t, "de", []byte(`{"v":1,"name":"de","tz":"Mars/Olympus"}`))
	kafkatest.Eventually(t, 10*time.Second, "the refusal", func() bool { return refused(b.view) == 7 })
	if n := strings.Count(b.logs.String(), "refusing a record"); n != 3 {
		t.Errorf("%d refusals logged, want 3:\n%s", n, b.logs.String())
	}
	if c, ok := b.view.Get("de"); !ok || !c.ExcludesDate(2026, 12, 25) {
		t.Errorf("after a refused record: %+v, %v; want the last valid definition", c, ok)
	}
}

// TestViewWithoutTopic: a namespace without a calendars topic has no calendar, and the View is loaded at once;
// once the topic is made, the View finds it and follows it.
func TestViewWithoutTopic(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	b.view.Recheck = 100 * time.Millisecond
	b.run(t)
	kafkatest.Eventually(t, 10*time.Second, "the view to load", kafkatest.Signalled(b.view.Loaded()))
	if all := b.view.All(); len(all) != 0 {
		t.Errorf("All without a topic = %+v", all)
	}
	if _, err := kadm.NewClient(b.cl).CreateTopic(b.ctx, 1, 1, nil, calendarsTopic); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "de", encoded(t, calendar.Spec{Name: "de", TZ: "Europe/Berlin", Weekdays: []string{"sun"}}))
	kafkatest.Eventually(t, 10*time.Second, "the calendar", func() bool { c, ok := b.view.Get("de"); return ok && c.Location().String() == "Europe/Berlin" })
}

// TestLoad: Load reads what a View reads, and a namespace without the topic has no calendar.
func TestLoad(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	adm := kadm.NewClient(b.cl)
	opts := []kgo.Opt{kgo.SeedBrokers(b.cl.OptValue(kgo.SeedBrokers).([]string)...)}
	got, err := Load(b.ctx, opts, adm, calendarsTopic)
	if err != nil || len(got) != 0 {
		t.Fatalf("Load without a topic = %v, %v", got, err)
	}
	if _, err := adm.CreateTopic(b.ctx, 1, 1, nil, calendarsTopic); err != nil {
		t.Fatal(err)
	}
	b.produce(t, "de", encoded(t, calendar.Spec{Name: "de", Dates: []string{"2026-12-25"}}))
	b.produce(t, "de", []byte(`{"v":1,"name":"other","weekdays":["sun"]}`))
	b.produce(t, "gone", encoded(t, calendar.Spec{Name: "gone", Weekdays: []string{"sun"}}))
	b.produce(t, "gone", nil)
	got, err = Load(b.ctx, opts, adm, calendarsTopic)
	if err != nil || len(got) != 1 || !got["de"].ExcludesDate(2026, 12, 25) {
		t.Errorf("Load = %+v, %v; want de alone", got, err)
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

// TestViewSync: Sync returns once the View has read every record written before it was called, so that a
// reader sees each calendar written so far; at once without a topic; and with ctx's error while the View does
// not read (it is not running).
func TestViewSync(t *testing.T) {
	t.Parallel()
	b := setup(t, false)
	short, cancel := context.WithTimeout(b.ctx, 300*time.Millisecond)
	defer cancel()
	if err := b.view.Sync(short); err == nil || !strings.Contains(err.Error(), "the view is not running") {
		t.Errorf("Sync of a View that does not run: %v, want a timeout saying so", err)
	}
	b.view.Recheck = 100 * time.Millisecond
	b.run(t)
	if err := b.view.Sync(b.ctx); err != nil {
		t.Fatalf("Sync without a topic: %v", err)
	}
	if _, err := kadm.NewClient(b.cl).CreateTopic(b.ctx, 1, 1, nil, calendarsTopic); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		name := fmt.Sprintf("c%d", i)
		b.produce(t, name, encoded(t, calendar.Spec{Name: name, Dates: []string{"2027-01-01"}}))
		if err := b.view.Sync(b.ctx); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.view.Get(name); !ok {
			t.Fatalf("after Sync: calendar %s not read", name)
		}
	}
}
