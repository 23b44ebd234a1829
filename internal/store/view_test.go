package store_test

// Tests of the schedule View against kfake, the in-process fake broker of franz-go: how the View folds the
// schedules topic into memory (load, live change, tombstone, an undecodable record). They check logic only;
// compaction and transactions are a real broker's business.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

const (
	schedulesTopic = "ns.schedules"
	dlqTopic       = "ns.dlq"
	waitFor        = 8 * time.Second
)

// testBundle is what every test gets from setup: a fresh kfake cluster with the schedules and dead-letter
// topics, and a producing client on it.
type testBundle struct {
	cluster *kfake.Cluster
	opts    []kgo.Opt
	cl      *kgo.Client
	reg     *prometheus.Registry
	ctx     context.Context // ends with the test
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, schedulesTopic, dlqTopic))
	if err != nil {
		t.Fatalf("kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return &testBundle{cluster: c, opts: opts, cl: cl, reg: prometheus.NewRegistry(), ctx: ctx}
}

func every(name string, d time.Duration) schedule.Spec {
	return schedule.Spec{Name: name, Every: schedule.Duration(d)}
}

func (b *testBundle) put(t *testing.T, spec schedule.Spec) {
	t.Helper()
	if _, err := store.Put(b.ctx, b.cl, schedulesTopic, spec); err != nil {
		t.Fatalf("putting %s: %v", spec.Name, err)
	}
}

func (b *testBundle) delete(t *testing.T, name string) {
	t.Helper()
	if _, err := store.Delete(b.ctx, b.cl, schedulesTopic, name); err != nil {
		t.Fatalf("deleting %s: %v", name, err)
	}
}

// putRaw writes value under key as it is, bypassing validation: what a buggy or foreign writer could leave.
func (b *testBundle) produce(t *testing.T, r *kgo.Record) {
	t.Helper()
	if err := b.cl.ProduceSync(b.ctx, r).FirstErr(); err != nil {
		t.Fatalf("writing %s: %v", r.Key, err)
	}
}

func (b *testBundle) putRaw(t *testing.T, key string, value []byte) {
	t.Helper()
	if err := b.cl.ProduceSync(b.ctx, &kgo.Record{Topic: schedulesTopic, Key: []byte(key), Value: value}).FirstErr(); err != nil {
		t.Fatalf("writing a raw record for %s: %v", key, err)
	}
}

// run starts a View, waits until it has loaded, and stops it (and waits for Run) at the end of the test.
func (b *testBundle) run(t *testing.T) *store.View {
	t.Helper()
	v := store.NewView(b.opts, schedulesTopic, dlqTopic, slog.New(slog.NewTextHandler(io.Discard, nil)), b.reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("View.Run: %v", err)
			}
		case <-time.After(waitFor):
			t.Error("View.Run did not return")
		}
	})
	kafkatest.Eventually(t, waitFor, "the View to load", kafkatest.Signalled(v.Loaded()))
	return v
}

// waitChanged collects the View's changed names (TakeChanged) until all of want were reported, and fails the
// test if others were too. Names can come in more than one batch, so it gathers rather than taking once.
func waitChanged(t *testing.T, v *store.View, want ...string) {
	t.Helper()
	got := map[string]bool{}
	kafkatest.Eventually(t, waitFor, fmt.Sprintf("changes of %v", want), func() bool {
		for _, n := range v.TakeChanged() {
			got[n] = true
		}
		for _, n := range want {
			if !got[n] {
				return false
			}
		}
		return true
	})
	if len(got) != len(want) {
		t.Errorf("changed = %v, want %v", slices.Sorted(maps.Keys(got)), want)
	}
}

// versions is the View's content as name -> version (the record's offset), the shape most checks compare.
func versions(v *store.View) map[string]int64 {
	out := map[string]int64{}
	for name, e := range v.Snapshot() {
		out[name] = e.Version
	}
	return out
}

func equal(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		if y, ok := b[k]; !ok || x != y {
			return false
		}
	}
	return true
}

func TestViewLoadsExistingRecords(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, every("a", time.Minute))   // offset 0, replaced below
	b.put(t, every("b", time.Hour))     // offset 1
	b.put(t, every("a", 2*time.Minute)) // offset 2
	b.put(t, every("c", time.Second))   // offset 3, deleted below
	b.delete(t, "c")                    // offset 4

	v := b.run(t)
	if got, want := versions(v), map[string]int64{"a": 2, "b": 1}; !equal(got, want) {
		t.Fatalf("loaded versions = %v, want %v", got, want)
	}
	a, _ := v.Get("a")
	if got := a.Spec().Every; got != schedule.Duration(2*time.Minute) {
		t.Errorf("a every = %v, want the newest definition, 2m", got)
	}
	if a.UpdatedAt.IsZero() || a.UpdatedAt.Location() != time.UTC {
		t.Errorf("a updated at %v, want the record's timestamp in UTC", a.UpdatedAt)
	}
	waitChanged(t, v, "a", "b", "c") // every key read, a deleted one too
	if got := metric(t, b.reg, "tickgroup_schedules"); got != 2 {
		t.Errorf("tickgroup_schedules = %v, want 2", got)
	}
}

func TestViewOfEmptyTopicIsLoaded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	v := b.run(t) // waits for Loaded
	if got := versions(v); len(got) != 0 {
		t.Errorf("schedules of an empty topic = %v", got)
	}
}

func TestViewFollowsLiveChange(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, every("a", time.Minute))
	v := b.run(t)
	waitChanged(t, v, "a") // the load's

	b.put(t, every("a", 5*time.Minute))
	b.put(t, every("new", time.Hour))
	waitChanged(t, v, "a", "new")
	if got, want := versions(v), map[string]int64{"a": 1, "new": 2}; !equal(got, want) {
		t.Errorf("versions = %v, want %v", got, want)
	}
	if a, _ := v.Get("a"); a.Spec().Every != schedule.Duration(5*time.Minute) {
		t.Errorf("a every = %v, want 5m", a.Spec().Every)
	}
}

func TestViewTombstoneRemovesSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, every("a", time.Minute))
	b.put(t, every("b", time.Minute))
	v := b.run(t)
	waitChanged(t, v, "a", "b")

	b.delete(t, "a")
	waitChanged(t, v, "a")
	if _, ok := v.Get("a"); ok {
		t.Error("a deleted schedule is still in the View")
	}
	if got, want := versions(v), map[string]int64{"b": 1}; !equal(got, want) {
		t.Errorf("versions = %v, want %v", got, want)
	}
}

// The newest record of a key is garbage (not JSON). The View skips it, counts it, keeps the previous definition
// in memory and reports the key as broken; the leader's repair (store.Repair) restates the definition, so that
// compaction cannot leave only the garbage and a replica started later still has the schedule.
func TestViewBadRecordKeepsPreviousDefinitionInMemory(t *testing.T) {
	t.Parallel()
	// What the View holds after the bad record, as name -> version: a's old definition (offset 0).
	wantAfterBad := map[string]int64{"a": 0}

	b := setup(t)
	b.put(t, every("a", time.Minute)) // offset 0
	v := b.run(t)
	waitChanged(t, v, "a")

	b.putRaw(t, "a", []byte("{not json")) // offset 1
	waitChanged(t, v, "a")                // a bad record still marks its key
	if got := versions(v); !equal(got, wantAfterBad) {
		t.Errorf("after a bad newest record: versions = %v, want %v", got, wantAfterBad)
	}
	if got := metric(t, b.reg, "tickgroup_invalid_schedule_records_total"); got != 1 {
		t.Errorf("invalid records counted = %v, want 1", got)
	}
	// The View does not dead-letter (every replica would): it reports the key as broken, with its last valid
	// definition, for the leader to repair.
	broken := v.Broken()
	if len(broken) != 1 || broken[0].Name != "a" || broken[0].Record.Offset != 1 || broken[0].Invalid == nil ||
		broken[0].Last == nil || broken[0].Last.Version != 0 {
		t.Fatalf("Broken() = %+v, want a's record at offset 1 with its last valid definition (offset 0)", broken)
	}
	// The leader's repair restates the definition: the key is whole again, and its version does not change.
	rep, err := store.Repair(broken[0], schedulesTopic)
	if err != nil {
		t.Fatal(err)
	}
	b.produce(t, rep) // offset 2
	waitChanged(t, v, "a")
	kafkatest.Eventually(t, waitFor, "the repair", func() bool { return len(v.Broken()) == 0 })
	if got := versions(v); !equal(got, wantAfterBad) {
		t.Errorf("after the repair: versions = %v, want %v (a restatement is not a change)", got, wantAfterBad)
	}
	// A repair that arrives after a newer valid definition is not applied, and asks for a restatement of it.
	b.putRaw(t, "a", []byte("garbage")) // offset 3
	waitChanged(t, v, "a")
	late, err := store.Repair(v.Broken()[0], schedulesTopic)
	if err != nil {
		t.Fatal(err)
	}
	b.put(t, every("a", 2*time.Minute)) // offset 4: the operator's new definition
	b.produce(t, late)                  // offset 5: the repair of offset 3, now stale
	kafkatest.Eventually(t, waitFor, "the stale repair reported", func() bool {
		bs := v.Broken()
		return len(bs) == 1 && bs[0].Invalid == nil && bs[0].Last != nil && bs[0].Last.Version == 4
	})
	if got := versions(v); !equal(got, map[string]int64{"a": 4}) {
		t.Errorf("after a stale repair: versions = %v, want the newer definition (offset 4)", got)
	}
}

// A bad record that was already in the topic when the View started is skipped and counted, never dead-lettered
// by the View (the leader does that when it repairs the key), and the key keeps its earlier definition.
func TestViewBadRecordDuringLoadIsSkippedNotDeadLettered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.put(t, every("a", time.Minute))   // offset 0
	b.putRaw(t, "a", []byte("garbage")) // offset 1
	v := b.run(t)
	if got, want := versions(v), map[string]int64{"a": 0}; !equal(got, want) {
		t.Errorf("versions = %v, want %v", got, want)
	}
	// The View dead-letters a batch's bad records before it polls again, so once a later record is visible,
	// any dead letter of the load has been written.
	b.put(t, every("z", time.Minute)) // offset 2
	kafkatest.Eventually(t, waitFor, "a later record", func() bool { _, ok := v.Get("z"); return ok })
	if got := metric(t, b.reg, "tickgroup_invalid_schedule_records_total"); got != 1 {
		t.Errorf("invalid records counted = %v, want 1", got)
	}
	if n := b.count(t, dlqTopic); n != 0 {
		t.Errorf("%d dead letters for a record read during the load, want 0", n)
	}
}

// count is the number of records in topic (its end offset; the test topics are never truncated).
func (b *testBundle) count(t *testing.T, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(b.opts...)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(b.ctx, topic)
	if err != nil {
		t.Fatalf("listing %s's end: %v", topic, err)
	}
	o, _ := ends.Lookup(topic, 0)
	return o.Offset
}

// metric is the value of the unlabelled gauge or counter name in reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) != 1 {
			continue
		}
		m := mf.GetMetric()[0]
		if g := m.GetGauge(); g != nil {
			return g.GetValue()
		}
		return m.GetCounter().GetValue()
	}
	t.Fatalf("no metric %s", name)
	return 0
}
