package dispatch

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// termBundle is one fast test's leader on kfake: the namespace's topics, a View of its schedules, a client to
// write schedules and state, and the logs of the dispatcher.
type termBundle struct {
	names kafka.Names
	opts  []kgo.Opt
	cl    *kgo.Client
	view  *store.View
	logs  *child.Log
	d     *Dispatcher
}

// kfakeNamespace starts a kfake cluster (with clusterOpts) holding namespace ns's topics (2 work partitions), and
// returns the names, the connection options and a client on it (manual partitioner).
func kfakeNamespace(t *testing.T, ns string, clusterOpts ...kfake.Opt) (kafka.Names, []kgo.Opt, *kgo.Client) {
	t.Helper()
	_, names, opts, cl := kfakeCluster(t, ns, clusterOpts...)
	return names, opts, cl
}

// kfakeCluster is kfakeNamespace, with the cluster too: a test that answers requests itself (ControlKey) needs it.
func kfakeCluster(t *testing.T, ns string, clusterOpts ...kfake.Opt) (*kfake.Cluster, kafka.Names, []kgo.Opt, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, clusterOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	kcfg := kafka.Config{Brokers: c.ListenAddrs(), Namespace: ns}
	opts, err := kcfg.Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	names := kcfg.Names()
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), names, kafka.TopicOptions{WorkPartitions: 2}); err != nil {
		t.Fatalf("creating topics: %v", err)
	}
	return c, names, opts, cl
}

// setupTerm starts a kfake cluster with the namespace's topics (2 work partitions) and a dispatcher whose
// terms the test runs with lead.
func setupTerm(t *testing.T) *termBundle {
	t.Helper()
	names, opts, cl := kfakeNamespace(t, "tt")
	b := &termBundle{names: names, opts: opts, cl: cl, logs: &child.Log{}}
	var err error
	logger := slog.New(slog.NewTextHandler(b.logs, nil))
	b.view = store.NewView(opts, b.names.Schedules, "", logger, nil)
	vctx, vstop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.view.Run(vctx) }()
	t.Cleanup(func() { vstop(); <-done })
	if b.d, err = New(Config{Names: b.names, Lead: 3 * time.Second}, opts, b.view, logger, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

// lead runs one term until the test ends, and returns once it is ready.
func (b *termBundle) lead(t *testing.T) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- b.d.Lead(ctx, leader.Term{Number: 1}) }()
	t.Cleanup(func() {
		stop()
		if err := <-errs; err != nil {
			t.Errorf("Lead: %v", err)
		}
	})
	kafkatest.Eventually(t, 20*time.Second, "the term to be ready", func() bool {
		return strings.Contains(b.logs.String(), "leader term ready")
	})
}

func (b *termBundle) put(t *testing.T, s schedule.Spec) int64 {
	t.Helper()
	v, err := store.Put(t.Context(), b.cl, b.names.Schedules, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// state writes a leader state record of name, as an earlier term would have.
func (b *termBundle) state(t *testing.T, name string, s leaderstate.State) {
	t.Helper()
	r := &kgo.Record{Topic: b.names.Ticker, Partition: 0, Key: []byte(name), Value: leaderstate.EncodeState(s)}
	if err := b.cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// cancels returns the cancel records on the work topic, by schedule.
func (b *termBundle) cancels(t *testing.T) map[string][]tick.Cancel {
	t.Helper()
	out := map[string][]tick.Cancel{}
	for p := range int32(2) {
		if _, err := kafka.ReadStable(t.Context(), b.opts, b.names.Work, p, func(r *kgo.Record) error {
			if cancel.Is(r) {
				c, err := tick.DecodeCancel(r.Value)
				if err != nil {
					return err
				}
				out[c.Schedule] = append(out[c.Schedule], c)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestTermSettlesWhatChangedWithoutALeader: a term that finds the state of a schedule paused while no leader ran,
// with slots emitted ahead, cancels them; one deleted with slots ahead is cancelled and its state kept; one
// deleted with nothing ahead has its state tombstoned.
func TestTermSettlesWhatChangedWithoutALeader(t *testing.T) {
	t.Parallel()
	b := setupTerm(t)
	now := time.Now().UTC().Truncate(time.Second)
	b.put(t, schedule.Spec{Name: "paused", Every: schedule.Duration(time.Minute)})
	b.state(t, "paused", leaderstate.State{LastSlot: now.Add(time.Minute), ScheduleVersion: 0})
	b.put(t, schedule.Spec{Name: "paused", Every: schedule.Duration(time.Minute), Paused: true})
	b.state(t, "gone-ahead", leaderstate.State{LastSlot: now.Add(time.Minute), ScheduleVersion: 0})
	b.state(t, "gone", leaderstate.State{LastSlot: now.Add(-time.Minute), ScheduleVersion: 0})
	b.lead(t)

	kafkatest.Eventually(t, 10*time.Second, "the cancels", func() bool {
		cs := b.cancels(t)
		return len(cs["paused"]) > 0 && len(cs["gone-ahead"]) > 0
	})
	cs := b.cancels(t)
	if c := cs["paused"][0]; c.Reason != tick.ReasonPaused {
		t.Errorf("paused: cancel %+v, want reason paused", c)
	}
	if c := cs["gone-ahead"][0]; c.Reason != tick.ReasonDeleted {
		t.Errorf("gone-ahead: cancel %+v, want reason deleted", c)
	}
	if len(cs["gone"]) != 0 {
		t.Errorf("gone (nothing ahead): %d cancels, want none", len(cs["gone"]))
	}
	kafkatest.Eventually(t, 10*time.Second, "the orphan state tombstoned", func() bool {
		st, err := leaderstate.ReadPartition(t.Context(), b.opts, b.names.Ticker, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, gone := st["gone"]
		_, ahead := st["gone-ahead"]
		return !gone && ahead
	})
}

// TestTermSettlesAPauseWithAnEnd: a pause with an end that no leader saw (written after the last leader emitted
// ahead, before the next one led), on the fast path where every state record is of a schedule the leader holds,
// gets its cancel at takeover, bounded by its end.
func TestTermSettlesAPauseWithAnEnd(t *testing.T) {
	t.Parallel()
	b := setupTerm(t)
	now := time.Now().UTC().Truncate(time.Second)
	b.put(t, schedule.Spec{Name: "held", Every: schedule.Duration(time.Minute)})
	b.state(t, "held", leaderstate.State{LastSlot: now.Add(time.Minute), ScheduleVersion: 0})
	until := now.Add(time.Hour)
	b.put(t, schedule.Spec{Name: "held", Every: schedule.Duration(time.Minute), Paused: true, PausedUntil: &until})
	b.lead(t)
	kafkatest.Eventually(t, 10*time.Second, "the pause's cancel", func() bool { return len(b.cancels(t)["held"]) > 0 })
	if c := b.cancels(t)["held"][0]; c.Reason != tick.ReasonPaused || !c.Until.Equal(until) {
		t.Errorf("cancel %+v, want reason paused until %v", c, until)
	}
}

// TestTermAppliesChanges: while a term runs, a schedule's slots are emitted once each, a pause cancels the ticks
// it emitted ahead, and a deletion is logged.
func TestTermAppliesChanges(t *testing.T) {
	t.Parallel()
	b := setupTerm(t)
	b.put(t, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)})
	b.lead(t)
	kafkatest.Eventually(t, 10*time.Second, "ticks of beat", func() bool { return len(b.ticks(t)) >= 3 })
	b.put(t, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second), Paused: true})
	kafkatest.Eventually(t, 10*time.Second, "the pause's cancel", func() bool { return len(b.cancels(t)["beat"]) > 0 })
	if _, err := store.Delete(t.Context(), b.cl, b.names.Schedules, "beat"); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 10*time.Second, "the deletion", func() bool {
		return strings.Contains(b.logs.String(), `msg="schedule deleted"`)
	})
	seen := map[string]int{}
	for _, tk := range b.ticks(t) {
		if seen[tk.ID]++; seen[tk.ID] > 1 {
			t.Errorf("%s emitted twice", tk.ID)
		}
	}
}

// ticks returns the ticks on the work topic.
func (b *termBundle) ticks(t *testing.T) []tick.Tick {
	t.Helper()
	var out []tick.Tick
	for p := range int32(2) {
		if _, err := kafka.ReadStable(t.Context(), b.opts, b.names.Work, p, func(r *kgo.Record) error {
			if !cancel.Is(r) {
				tk, err := tick.Decode(r.Value)
				if err != nil {
					return err
				}
				out = append(out, tk)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
