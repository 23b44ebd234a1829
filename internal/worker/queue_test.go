package worker

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestLaneHoldsTicksUntilTheirInstant: ticks emitted ahead start on their instant, never before; a manual
// trigger behind them runs at once; a cancellation behind a held tick cancels it (outcome cancelled) and the
// partition is committed past everything.
func TestLaneHoldsTicksUntilTheirInstant(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC()
	at := func(d time.Duration) *time.Time { x := now.Add(d); return &x }
	held := tick.New("held", now.Add(-time.Hour), 0, 1)
	held.NotBefore = at(1500 * time.Millisecond)
	gone := tick.New("gone", now.Add(-time.Hour), 0, 1)
	gone.NotBefore, gone.ScheduleVersion = at(2*time.Second), 7
	later := tick.New("held", now.Add(-time.Hour+time.Minute), 0, 1)
	later.NotBefore = at(2500 * time.Millisecond)
	trig := tick.Source{Schedule: "held"}.Trigger(now, "abcd")[0]
	var recs []*kgo.Record
	for _, tk := range []tick.Tick{held, gone, later, trig} {
		v, err := tick.Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: b.names.Work, Partition: 0, Key: []byte(tk.ID), Value: v})
	}
	recs = append(recs, cancel.Records(tick.Cancel{Schedule: "gone", Before: 8, After: now, Reason: tick.ReasonPaused}, b.names.Work, 1)...)
	b.produceAsLeader(t, recs...)

	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 20*time.Second, "the two held ticks and the trigger to run", func() bool { return rec.count() >= 3 })
	calls := rec.snapshot()
	starts := map[string]time.Time{}
	for _, c := range calls {
		starts[c.ID] = c.Start
	}
	if _, ran := starts[gone.ID]; ran {
		t.Errorf("cancelled tick %s ran", gone.ID)
	}
	for _, tk := range []tick.Tick{held, later} {
		s, ok := starts[tk.ID]
		switch {
		case !ok:
			t.Errorf("held tick %s did not run", tk.ID)
		case s.Before(*tk.NotBefore):
			t.Errorf("held tick %s started %v before its instant", tk.ID, tk.NotBefore.Sub(s))
		case s.After(tk.NotBefore.Add(time.Second)):
			t.Errorf("held tick %s started %v after its instant", tk.ID, s.Sub(*tk.NotBefore))
		}
	}
	if s, ok := starts[trig.ID]; !ok || !s.Before(*held.NotBefore) {
		t.Errorf("trigger %s started at %v, want before the held tick ahead of it (%v)", trig.ID, s, *held.NotBefore)
	}
	if calls[0].ID != trig.ID {
		t.Errorf("first call %s, want the trigger", calls[0].ID)
	}
	outs := b.outcomesOf(t, 0, gone.ID, "w1")
	if len(outs) != 1 || outs[0].Status != StatusCancelled {
		t.Errorf("outcomes of the cancelled tick: %+v, want one cancelled", outs)
	}
	kafkatest.Eventually(t, 10*time.Second, "the partition committed past every record", func() bool {
		return b.committed(t, 0).At == recs[len(recs)-1].Offset+1
	})
}

// TestLaneDeadLettersUnreadableCancel: a record marked as a cancellation whose value cannot be read is
// dead-lettered once and skipped; the partition goes on.
func TestLaneDeadLettersUnreadableCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bad := cancel.Records(tick.Cancel{Schedule: "x", Before: 1, After: time.Now()}, b.names.Work, 1)[0]
	bad.Value = []byte(`{"v":1,"kind":"cancel"`)
	after := tick.New("after", time.Now().Add(-time.Minute), 0, 1)
	v, _ := tick.Encode(after)
	b.produceAsLeader(t, bad, &kgo.Record{Topic: b.names.Work, Partition: 0, Key: []byte(after.ID), Value: v})
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 20*time.Second, "the tick after it to run", func() bool { return rec.count() >= 1 })
	kafkatest.Eventually(t, 10*time.Second, "one dead letter", func() bool { return b.endOffset(t, b.names.DLQ, 0) == 1 })
}

// produceAsLeader writes recs in one transaction, as the leader writes ticks and cancels.
func (b *testBundle) produceAsLeader(t *testing.T, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("leader-"+t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
}

// TestLaneRefusesForgedCancel: a cancel record that was not written in a transaction (anyone with Write on the
// work topic can write one) cancels nothing: the live schedule's held tick runs on its instant; the record is
// counted, dead-lettered once, and the partition goes on.
func TestLaneRefusesForgedCancel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now().UTC()
	live := tick.New("live", now, 0, 1)
	nb := now.Add(time.Second)
	live.NotBefore = &nb
	v, err := tick.Encode(live)
	if err != nil {
		t.Fatal(err)
	}
	b.produceAsLeader(t, &kgo.Record{Topic: b.names.Work, Partition: 0, Key: []byte(live.ID), Value: v})
	forged := cancel.Records(tick.Cancel{Schedule: "live", Before: 1 << 62, After: now, Reason: tick.ReasonPaused}, b.names.Work, 1)
	ctx, cancelCtx := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancelCtx()
	if err := b.cl.ProduceSync(ctx, forged...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{Registerer: reg})
	kafkatest.Eventually(t, 10*time.Second, "the live schedule's tick to run", func() bool { return rec.count() >= 1 })
	if got := ids(rec.snapshot()); got != live.ID {
		t.Errorf("handler ran %q, want %q", got, live.ID)
	}
	kafkatest.Eventually(t, 10*time.Second, "one dead letter", func() bool { return b.endOffset(t, b.names.DLQ, 0) == 1 })
	if n := metricValue(t, reg, "tickgroup_worker_cancels_refused_total"); n != 1 {
		t.Errorf("tickgroup_worker_cancels_refused_total = %v, want 1", n)
	}
}
