package dispatch_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/dispatch"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// TestNewTermFencesOldTerm runs two leader terms at once, as the group can do for a few seconds when a frozen
// leader's session expires: the second term's fencing makes the first one's next transaction fail, the first
// term ends with an error, and the work topic holds every slot exactly once. No consumer group is involved:
// this is the safety that does not depend on the group.
func TestNewTermFencesOldTerm(t *testing.T) {
	if testing.Short() {
		t.Skip("real broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	names, opts, cl := kafkatest.Topics(t, ctx, 3)
	if _, err := store.Put(ctx, cl, names.Schedules, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second), Catchup: "all"}); err != nil {
		t.Fatal(err)
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	view := store.NewView(opts, names.Schedules, "", logger, nil)
	go func() { _ = view.Run(ctx) }()
	newDispatcher := func() *dispatch.Dispatcher {
		d, err := dispatch.New(dispatch.Config{Names: names}, opts, view, logger, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	// Term A leads alone for a while.
	aErr := make(chan error, 1)
	go func() { aErr <- newDispatcher().Lead(ctx, leader.Term{Number: 1}) }()
	waitTicks(t, ctx, opts, names.Work, 3)

	// Term B starts while A still runs. B's InitProducerID fences A.
	bCtx, bStop := context.WithCancel(ctx)
	bErr := make(chan error, 1)
	go func() { bErr <- newDispatcher().Lead(bCtx, leader.Term{Number: 2}) }()
	select {
	case err := <-aErr:
		if err == nil {
			t.Fatal("term A ended without an error while term B fenced it")
		}
		t.Logf("term A ended: %v", err)
		if !containsAny(err.Error(), "fenced", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH") {
			t.Errorf("term A's error does not say it was fenced: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("term A kept running after term B fenced it")
	}
	before := len(readTicks(t, ctx, opts, names.Work))
	waitTicks(t, ctx, opts, names.Work, before+3)
	bStop()
	if err := <-bErr; err != nil {
		t.Fatalf("term B: %v", err)
	}

	// Every slot between the first and the last, exactly once.
	ticks := readTicks(t, ctx, opts, names.Work)
	counts := map[int64]int{}
	first, last := int64(1<<62), int64(0)
	for _, tk := range ticks {
		u := tk.Slot.Unix()
		counts[u]++
		first, last = min(first, u), max(last, u)
	}
	for u := first; u <= last; u++ {
		if counts[u] != 1 {
			t.Errorf("slot %s emitted %d times", time.Unix(u, 0).UTC().Format(time.TimeOnly), counts[u])
		}
	}
	t.Logf("%d slots, each once, across the fencing of term A by term B", last-first+1)
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// readTicks reads every committed tick of the work topic.
func readTicks(t *testing.T, ctx context.Context, opts []kgo.Opt, topic string) []tick.Tick {
	t.Helper()
	adm, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	tds, err := kadm.NewClient(adm).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []tick.Tick
	for _, p := range tds[topic].Partitions.Numbers() {
		if _, err := kafka.ReadStable(ctx, opts, topic, p, func(r *kgo.Record) error {
			tk, err := tick.Decode(r.Value)
			if err != nil {
				return err
			}
			out = append(out, tk)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func waitTicks(t *testing.T, ctx context.Context, opts []kgo.Opt, topic string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(readTicks(t, ctx, opts, topic)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d ticks after 30s", n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
