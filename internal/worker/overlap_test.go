package worker

import (
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestLaneOverlapCountsTheHandlerNotTheLedger: under the default overlap policy, a tick is skipped only when
// the handler before it outlasted its period. Here the broker holds the produce of the first tick's start for
// 3 s (as an outage of the broker does) on a 1 s schedule whose handler returns at once: the first run waits
// for its start, and its successors fall due meanwhile, but no handler ran long, so every tick runs, once.
// Before, the wait counted as running, and the ticks due during it were recorded skipped_overlap.
func TestLaneOverlapCountsTheHandlerNotTheLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	cfg.Lease = 20 * time.Second // the held start must stand, not be taken back (TestLaneTakesBackAStartConfirmedAfterItsLease)
	// The claim is the partition's first record, the first tick's start its second: its produce is held for 3 s,
	// three of the schedule's periods (the fault under test, not a wait of the test).
	held := b.holdResultsProduce(t, 2, 3*time.Second)
	now := time.Now().UTC()
	ticks := heldTicks("beat", "", now, 2*time.Second, 3*time.Second, 4*time.Second, 5*time.Second, 6*time.Second)
	b.produce(t, 0, ticks...)
	rec := newRecorder()
	b.start(t, cfg, rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 30*time.Second, "every tick's outcome", func() bool {
		return len(b.outcomesOf(t, 0, ticks[len(ticks)-1].ID, "w1")) == 1
	})
	select {
	case <-held:
	default:
		t.Fatal("the first start's produce was never held")
	}
	runs := map[string]int{}
	for _, c := range rec.snapshot() {
		runs[c.ID]++
	}
	for _, tk := range ticks {
		if runs[tk.ID] != 1 {
			t.Errorf("%s ran %d times, want 1", tk.ID, runs[tk.ID])
		}
		if o := b.outcomesOf(t, 0, tk.ID, "w1"); len(o) != 1 || o[0].Status != StatusOK {
			t.Errorf("outcomes of %s: %+v, want one ok", tk.ID, o)
		}
	}
}
