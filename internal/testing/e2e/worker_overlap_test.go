package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// A job that takes 2.5 periods of its 1 s schedule, 20 slots, under a worker with default settings (no attempt
// timeout): with overlap skip, and with the default policy, the ticks whose successor is already due when they
// could start are skipped (skipped_overlap), so the runs never fall behind and every tick has an outcome soon
// after the last slot; every run that starts finishes, once. Beside them, a tick whose schedule sets a 1 s
// timeout and one attempt is cut at 1 s although the worker has no timeout.
func TestE2EOverlapSkipBoundsBacklog(t *testing.T) {
	e := setup(t)
	w := e.start([]string{"HANDLER_SLEEP=2500ms"}, "--exec", handlerBin)
	e.waitGroupStable(1)
	prod := e.producer()
	ids := map[string][]string{}
	cut := tick.New("cut", time.Now().Truncate(time.Second), 0, 1)
	cut.TimeoutMS, cut.MaxAttempts = 1000, 1
	e.emit(prod, e.tickRecord(cut))
	slot := time.Now().Truncate(time.Second)
	tk := time.NewTicker(time.Second)
	for range 20 {
		<-tk.C
		slot = slot.Add(time.Second)
		var recs []*kgo.Record
		for _, policy := range []string{tick.OverlapSkip, ""} {
			x := tick.New("overlap-"+policy, slot, 0, 1)
			x.Overlap = policy
			ids[policy] = append(ids[policy], x.ID)
			recs = append(recs, e.tickRecord(x))
		}
		e.emit(prod, recs...)
	}
	tk.Stop()
	last := slot
	var outs map[string][]ledger.Outcome
	waitFor(t, 10*time.Second, "an outcome for every tick within two periods of the last slot", func() (bool, string) {
		outs = map[string][]ledger.Outcome{}
		for _, r := range readAll(t, e.brokers, e.names.Results) {
			os, _ := ledger.Outcomes(r.Value)
			for _, o := range os {
				outs[o.ID] = append(outs[o.ID], o)
			}
		}
		n := 0
		for _, list := range ids {
			for _, id := range list {
				if len(outs[id]) > 0 {
					n++
				}
			}
		}
		return n == 2*len(ids[""]) && len(outs[cut.ID]) > 0, fmt.Sprintf("%d of %d", n, 2*len(ids[""]))
	})
	if late := time.Since(last); late > 8*time.Second {
		t.Errorf("the backlog drained %s after the last slot, want within a few periods", late)
	}
	for _, policy := range []string{tick.OverlapSkip, ""} {
		counts := map[string]int{}
		for _, id := range ids[policy] {
			if len(outs[id]) != 1 {
				t.Errorf("%s: %d outcomes, want 1", id, len(outs[id]))
			}
			counts[outs[id][0].Status]++
		}
		if counts["ok"] == 0 || counts["skipped_overlap"] == 0 || counts["ok"]+counts["skipped_overlap"] != len(ids[policy]) {
			t.Errorf("policy %q: outcomes %v, want only ok and skipped_overlap, some of each", policy, counts)
		}
		if counts["ok"] > 12 {
			t.Errorf("policy %q: %d ticks ran, want about 20/2.5 = 8: the schedule must not queue up", policy, counts["ok"])
		}
		t.Logf("policy %q: 20 slots of a 1s schedule with a 2.5s handler: %v", policy, counts)
	}
	if o := outs[cut.ID]; len(o) != 1 || o[0].Status != ledger.StatusDeadLettered || o[0].Attempts != 1 {
		t.Errorf("tick with the schedule's 1s timeout and 1 attempt: outcomes %+v, want one dead_lettered after 1 attempt", o)
	}
	e.stop(w)
}

// A schedule's timeout also wins when it is longer than the worker's --timeout: under --timeout 1s, a 2.5 s job
// whose schedule sets 10 s succeeds, and the same job without one is cut at 1 s.
func TestE2EScheduleTimeoutOverridesWorker(t *testing.T) {
	e := setup(t)
	w := e.start([]string{"HANDLER_SLEEP=2500ms"}, "--exec", handlerBin, "--timeout", "1s", "--max-attempts", "1")
	e.waitGroupStable(1)
	now := time.Now().Truncate(time.Second)
	long, plain := tick.New("long", now, 0, 1), tick.New("plain", now, 0, 1)
	long.TimeoutMS = 10_000
	e.emit(e.producer(), e.tickRecord(long), e.tickRecord(plain))
	var outs map[string]ledger.Outcome
	waitFor(t, 30*time.Second, "both outcomes", func() (bool, string) {
		outs = map[string]ledger.Outcome{}
		for _, r := range readAll(t, e.brokers, e.names.Results) {
			os, _ := ledger.Outcomes(r.Value)
			for _, o := range os {
				outs[o.ID] = o
			}
		}
		return len(outs) >= 2, fmt.Sprint(len(outs))
	})
	if o := outs[long.ID]; o.Status != ledger.StatusOK {
		t.Errorf("2.5s job with the schedule's 10s timeout under --timeout 1s: %+v, want ok", o)
	}
	if o := outs[plain.ID]; o.Status != ledger.StatusDeadLettered || o.DurationMS > 2400 {
		t.Errorf("2.5s job with no timeout of its own under --timeout 1s: %+v, want dead_lettered after about 1s", o)
	}
	e.stop(w)
}
