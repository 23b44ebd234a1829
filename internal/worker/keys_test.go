package worker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestLaneRunsKeysSideBySide: on one partition, a schedule whose job blocks does not hold back another
// schedule's ticks, and its own later ticks wait for it, in order and never overlapping.
func TestLaneRunsKeysSideBySide(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slow, _ := b.produceTicks(t, 0, "slow", 3)
	fast, _ := b.produceTicks(t, 0, "fast", 10)
	release := make(chan struct{})
	var (
		mu          sync.Mutex
		order       = map[string][]string{}
		slowRunning int
		overlaps    int
	)
	rec := newRecorder()
	cfg := b.config("w1")
	cfg.Concurrency = 4
	b.start(t, cfg, rec.handler(func(ctx context.Context, tk tick.Tick, _ Attempt) error {
		mu.Lock()
		order[tk.Schedule] = append(order[tk.Schedule], tk.ID)
		if tk.Schedule == "slow" {
			slowRunning++
			if slowRunning > 1 {
				overlaps++
			}
		}
		mu.Unlock()
		if tk.Schedule == "slow" {
			defer func() {
				mu.Lock()
				slowRunning--
				mu.Unlock()
			}()
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}), Deps{})

	// Every fast tick finishes while the first slow one is still blocked.
	kafkatest.Eventually(t, 10*time.Second, "the fast schedule's ticks to run beside the blocked slow one", func() bool {
		return rec.count() >= len(fast)
	})
	mu.Lock()
	if n := len(order["slow"]); n != 1 {
		t.Errorf("%d slow ticks started while the first was blocked, want 1", n)
	}
	mu.Unlock()
	close(release)
	kafkatest.Eventually(t, 10*time.Second, "every tick to run", func() bool { return rec.count() >= len(fast)+len(slow) })

	mu.Lock()
	defer mu.Unlock()
	if overlaps != 0 {
		t.Errorf("%d runs of the slow schedule overlapped another", overlaps)
	}
	for name, want := range map[string][]tick.Tick{"slow": slow, "fast": fast} {
		got := order[name]
		if len(got) != len(want) {
			t.Fatalf("%s: %d runs, want %d", name, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i].ID {
				t.Errorf("%s: run %d was %s, want %s (offset order)", name, i, got[i], want[i].ID)
			}
		}
	}
}

// TestLaneFailureSaysOnlyWhatFailed: a handler's plain failure is recorded as itself, not as a cancellation of
// the attempt's context (which ends with every attempt).
func TestLaneFailureSaysOnlyWhatFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ticks, _ := b.produceTicks(t, 0, "fails", 1)
	cfg := b.config("w1")
	cfg.MaxAttempts = 1
	rec := newRecorder()
	b.start(t, cfg, rec.handler(func(context.Context, tick.Tick, Attempt) error { return errors.New("exit status 3") }), Deps{})
	var outs []ledger.Entry
	kafkatest.Eventually(t, 10*time.Second, "the outcome", func() bool {
		outs = b.outcomesOf(t, 0, ticks[0].ID, "w1")
		return len(outs) == 1
	})
	if outs[0].Error != "exit status 3" {
		t.Errorf("outcome error %q, want %q", outs[0].Error, "exit status 3")
	}
}

// TestLaneDisownsWhatAForgedClaimWrote: a forged claim followed by a forged outcome, under that claim, for a
// tick the lane holds for its instant: once the group shows the claim is forged, the lane claims again and the
// forged outcome no longer counts: the tick runs on its instant.
func TestLaneDisownsWhatAForgedClaimWrote(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC()
	held := tick.New("held", now, 0, 1)
	nb := now.Add(3 * time.Second)
	held.NotBefore = &nb
	v, err := tick.Encode(held)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := b.produceTicks(t, 0, "first", 1)
	b.produceAsLeader(t, &kgo.Record{Topic: b.names.Work, Partition: 0, Key: []byte(held.ID), Value: v})
	heldOffset := b.endOffset(t, b.names.Work, 0) - 2 // the record before the transaction's marker
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the first tick to run", func() bool { return rec.count() >= 1 })
	f := rec.snapshot()[0].Attempt.Fence
	b.writeLedger(t, 0, ledger.Entry{Kind: ledger.KindClaim, Partition: 0, Fence: f + 1, Worker: "usurper", At: time.Now().UTC(), LeaseMS: 300})
	b.writeLedger(t, 0, ledger.Entry{Kind: ledger.KindOutcome, ID: held.ID, Partition: 0, Offset: heldOffset, Fence: f + 1,
		Worker: "usurper", Status: ledger.StatusOK, Attempts: 1, At: time.Now().UTC()})
	kafkatest.Eventually(t, 10*time.Second, "the held tick to run", func() bool { return rec.count() >= 2 })
	if got := ids(rec.snapshot()); got != first[0].ID+" "+held.ID {
		t.Errorf("handler ran %q, want %q", got, first[0].ID+" "+held.ID)
	}
}

// TestLaneTriggerWaitsForItsKeyRunningElsewhere: a former owner's run of a scheduled tick is still alive (its
// lease not run out); a manual trigger of the same schedule, behind it on the partition, does not start before
// that run is surely over: two runs of one key never overlap, across workers either.
func TestLaneTriggerWaitsForItsKeyRunningElsewhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.formerOwner(t, 0, 300*time.Millisecond)
	ticks, offsets := b.produceTicks(t, 0, "k", 1)
	trig := tick.Source{Schedule: "k"}.Trigger(time.Now(), "t1")[0]
	v, err := tick.Encode(trig)
	if err != nil {
		t.Fatal(err)
	}
	b.produceAsLeader(t, &kgo.Record{Topic: b.names.Work, Partition: 0, Key: []byte(trig.ID), Value: v})
	started := startedEntry(ledger.KindStarted, ticks[0], 0, offsets[0], 1)
	started.LeaseMS = 2000 // the former owner's run may go on for 2 s after its start
	startedAt := time.Now()
	b.writeLedger(t, 0, started)

	cfg := b.config("w1")
	rec := newRecorder()
	b.start(t, cfg, rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the trigger and the tick to run", func() bool { return rec.count() >= 2 })
	for _, c := range rec.snapshot() {
		if waited, min := c.Start.Sub(startedAt), 2*time.Second+cfg.MaxClockSkew; waited < min {
			t.Errorf("%s started %s after the former owner's start, want at least its lease + skew %s", c.ID, waited, min)
		}
	}
}
