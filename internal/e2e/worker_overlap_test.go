package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// overlap: skip keeps the backlog bounded: a handler that takes 2.5 periods of a 1 s schedule, 20 slots; older
// ticks whose successor is already due are skipped (skipped_overlap), the runs never fall behind, and every
// tick has an outcome soon after the last slot.
func TestE2EOverlapSkipBoundsBacklog(t *testing.T) {
	e := setup(t)
	w := e.start([]string{"HANDLER_SLEEP=2500ms"}, "--exec", handlerBin)
	e.waitGroupStable(1)
	prod := e.producer()
	var ids []string
	slot := time.Now().Truncate(time.Second)
	tk := time.NewTicker(time.Second)
	for range 20 {
		<-tk.C
		slot = slot.Add(time.Second)
		x := tick.New("slow", slot, 0, 1)
		x.Overlap = tick.OverlapSkip
		ids = append(ids, x.ID)
		e.emit(prod, []*kgo.Record{e.tickRecord(x)}...)
	}
	tk.Stop()
	last := slot
	var outs map[string]worker.Outcome
	waitFor(t, 10*time.Second, "an outcome for every tick within two periods of the last slot", func() (bool, string) {
		outs = map[string]worker.Outcome{}
		for _, r := range readAll(t, e.brokers, e.names.Results) {
			var o worker.Outcome
			if jsonUnmarshal(r.Value, &o) == nil && o.Kind == "outcome" {
				outs[o.ID] = o
			}
		}
		return len(outs) >= len(ids), fmt.Sprintf("%d of %d", len(outs), len(ids))
	})
	if late := time.Since(last); late > 8*time.Second {
		t.Errorf("the backlog drained %s after the last slot, want within a few periods", late)
	}
	counts := map[string]int{}
	for _, id := range ids {
		counts[outs[id].Status]++
	}
	if counts["ok"] == 0 || counts["skipped_overlap"] == 0 || counts["ok"]+counts["skipped_overlap"] != len(ids) {
		t.Errorf("outcomes %v, want only ok and skipped_overlap, some of each", counts)
	}
	if counts["ok"] > 12 {
		t.Errorf("%d ticks ran, want about 20/2.5 = 8: a skip schedule must not queue up", counts["ok"])
	}
	t.Logf("20 slots of a 1s schedule with a 2.5s handler: %v", counts)
	e.stop(w)
}
