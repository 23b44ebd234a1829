package main

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// arrivalOf reads from a tick record what decoding it would give.
func TestArrivalOf(t *testing.T) {
	slot := time.Date(2026, 12, 1, 16, 43, 0, 0, time.UTC)
	tk := tick.New("load-0000042", slot, 0, 1)
	tk.LeaderEpoch = 7
	tk.EmittedAt = slot.Add(-9 * time.Second)
	v, err := tick.Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := arrivalOf(&kgo.Record{Key: []byte(tk.ID), Value: v}, 5)
	if !ok || a.slot != slot.Unix() || a.epoch != 7 || a.sched != 42 || a.seen != 5 {
		t.Fatalf("arrivalOf(%s) = %+v, %v", v, a, ok)
	}
	trig := tick.Source{Schedule: "load-0000042"}.Trigger(slot, "n1")[0]
	if _, ok := arrivalOf(&kgo.Record{Key: []byte(trig.ID)}, 5); ok {
		t.Fatalf("a trigger (%s) counted as a slot", trig.ID)
	}
}
