package worker

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
)

// TestLaneTakesBackAStartConfirmedAfterItsLease: a start acknowledged only after its lease ran out (here the
// broker holds the produce of the first start for two leases, as an outage of the broker does) is not handed to
// the handler: the worker takes it back with a release marked unstarted and writes it again. The handler runs
// once, as attempt 1, not marked interrupted, and the tick's outcome says so.
func TestLaneTakesBackAStartConfirmedAfterItsLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	// The claim is the partition's first record, the tick's start its second: its produce is held for two leases
	// (the fault under test, as an outage of the broker holds it), not a wait of the test.
	held := b.holdResultsProduce(t, 2, 2*cfg.Lease)
	ticks, offsets := b.produceTicks(t, 0, "held", 1)
	rec := newRecorder()
	b.start(t, cfg, rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the tick's commit", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
	select {
	case <-held:
	default:
		t.Fatal("the start's produce was never held")
	}
	calls := rec.snapshot()
	if len(calls) != 1 || calls[0].Attempt.N != 1 || calls[0].Attempt.Interrupted {
		t.Fatalf("handler calls %+v, want one, attempt 1, not interrupted", calls)
	}
	starts := b.entries(t, 0, ledger.KindStarted, ticks[0].ID)
	backs := b.entries(t, 0, ledger.KindReleased, ticks[0].ID)
	if len(starts) < 2 || len(backs) < 1 || !backs[0].Entry.Unstarted || backs[0].Offset < starts[0].Offset || backs[0].Offset > starts[len(starts)-1].Offset {
		t.Fatalf("%d starts and %d releases (first unstarted: %v): want the late start, its release marked unstarted, then a new start",
			len(starts), len(backs), len(backs) > 0 && backs[0].Entry.Unstarted)
	}
	for _, s := range starts {
		if s.Entry.Attempt != 1 || s.Entry.Interrupted {
			t.Errorf("start %+v: want attempt 1, not interrupted", s.Entry)
		}
	}
	if o := b.outcomesOf(t, 0, ticks[0].ID, "w1"); len(o) != 1 || o[0].Status != StatusOK || o[0].Attempts != 1 || o[0].Interrupted {
		t.Errorf("outcomes %+v, want one ok after 1 attempt, not interrupted", o)
	}
}

// holdResultsProduce makes the broker hold the n-th produce request to results partition 0 for d before it
// answers (as an outage of the broker holds it), and returns a channel closed once it did.
func (b *testBundle) holdResultsProduce(t *testing.T, n int32, d time.Duration) <-chan struct{} {
	t.Helper()
	tds, err := b.adm.ListTopics(t.Context(), b.names.Results)
	if err != nil || tds[b.names.Results].Err != nil {
		t.Fatalf("describing %s: %v %v", b.names.Results, err, tds[b.names.Results].Err)
	}
	resultsID := tds[b.names.Results].ID
	var produces atomic.Int32
	held := make(chan struct{})
	b.cluster.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		req := kr.(*kmsg.ProduceRequest)
		hit := false
		for _, tp := range req.Topics {
			for _, pp := range tp.Partitions {
				hit = hit || (tp.Topic == b.names.Results || tp.TopicID == resultsID) && pp.Partition == 0
			}
		}
		if hit && produces.Add(1) == n {
			b.cluster.SleepControl(func() { time.Sleep(d) })
			close(held)
			return nil, nil, false
		}
		b.cluster.KeepControl()
		return nil, nil, false
	})
	return held
}
