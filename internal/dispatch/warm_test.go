package dispatch

import (
	"context"
	"io"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestWarmStandbyTakesOver: a standby follows the state while another dispatcher leads, then leads itself from
// that warm state plus the tail written after it. Every slot between the first and the last is emitted once.
func TestWarmStandbyTakesOver(t *testing.T) {
	if testing.Short() {
		t.Skip("real broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	names, opts, cl := kafkatest.Topics(t, ctx, 2)
	for _, name := range []string{"beat", "pulse"} {
		if _, err := store.Put(ctx, cl, names.Schedules, schedule.Spec{Name: name, Every: schedule.Duration(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	view := store.NewView(opts, names.Schedules, "", logger, nil)
	go func() { _ = view.Run(ctx) }()
	newDispatcher := func() *Dispatcher {
		d, err := New(Config{Names: names}, opts, view, logger, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	var bLog child.Log
	standby, err := New(Config{Names: names}, opts, view, slog.New(slog.NewTextHandler(&bLog, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = standby.Follow(ctx) }()

	aCtx, aStop := context.WithCancel(ctx)
	aErr := make(chan error, 1)
	go func() { aErr <- newDispatcher().Lead(aCtx, leader.Term{Number: 1}) }()
	kafkatest.Eventually(t, 30*time.Second, "the standby to follow the states of both schedules, a few transactions", func() bool {
		standby.warmMu.Lock()
		w := standby.warm[0]
		standby.warmMu.Unlock()
		if w == nil {
			return false
		}
		n, next := w.Progress()
		return n == 2 && next >= 6
	})
	time.Sleep(1500 * time.Millisecond) // a tail the standby may not have read yet
	aStop()
	if err := <-aErr; err != nil {
		t.Fatalf("term A: %v", err)
	}

	bCtx, bStop := context.WithCancel(ctx)
	bErr := make(chan error, 1)
	go func() { bErr <- standby.Lead(bCtx, leader.Term{Number: 2}) }()
	time.Sleep(3 * time.Second)
	bStop()
	if err := <-bErr; err != nil {
		t.Fatalf("term B: %v", err)
	}

	counts := map[string]map[int64]int{}
	epochs := map[int64]bool{}
	for p := range int32(2) {
		if _, err := kafka.ReadStable(ctx, opts, names.Work, p, func(r *kgo.Record) error {
			tk, err := tick.Decode(r.Value)
			if err != nil {
				return err
			}
			if counts[tk.Schedule] == nil {
				counts[tk.Schedule] = map[int64]int{}
			}
			counts[tk.Schedule][tk.Slot.Unix()]++
			epochs[tk.LeaderEpoch] = true
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if m := regexp.MustCompile(`leader term ready.* state_from=(\d+)`).FindStringSubmatch(bLog.String()); m == nil || m[1] == "0" {
		t.Errorf("term B read the state from offset %v, want past 0 (the standby's warm state): %s", m, bLog.String())
	}
	if len(epochs) < 2 {
		t.Fatalf("ticks of %d leader epoch(s), want both terms'", len(epochs))
	}
	for name, slots := range counts {
		first, last := int64(1<<62), int64(0)
		for u := range slots {
			first, last = min(first, u), max(last, u)
		}
		for u := first; u <= last; u++ {
			if slots[u] != 1 {
				t.Errorf("%s: slot %s emitted %d times", name, time.Unix(u, 0).UTC().Format(time.TimeOnly), slots[u])
			}
		}
		t.Logf("%s: %d slots, each once, across the handover to the warm standby", name, last-first+1)
	}
}
