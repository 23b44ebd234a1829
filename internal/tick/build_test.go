package tick

import (
	"strings"
	"testing"
	"time"
)

func TestSourceAppendSlot(t *testing.T) {
	t.Parallel()
	slot := time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC)
	emitted := slot.Add(5 * time.Millisecond)
	src := Source{Schedule: "scan", Shards: 3, Payload: "p", Version: 42, Deadline: time.Minute, LeaderEpoch: 7}
	got := src.AppendSlot(nil, slot, time.Time{}, emitted)
	if len(got) != 3 {
		t.Fatalf("got %d ticks, want 3", len(got))
	}
	for i, tk := range got {
		if tk.ID != ID("scan", slot, i, 3) || tk.Shard != i || tk.Shards != 3 || tk.Trigger {
			t.Errorf("tick %d: id %q shard %d/%d trigger %v", i, tk.ID, tk.Shard, tk.Shards, tk.Trigger)
		}
		if tk.Payload != "p" || tk.ScheduleVersion != 42 || tk.LeaderEpoch != 7 || !tk.EmittedAt.Equal(emitted) {
			t.Errorf("tick %d: fields not copied: %+v", i, tk)
		}
		if tk.Deadline == nil || !tk.Deadline.Equal(slot.Add(time.Minute)) {
			t.Errorf("tick %d: deadline %v, want slot + 1m", i, tk.Deadline)
		}
		if _, err := Decode(mustEncode(t, tk)); err != nil {
			t.Errorf("tick %d does not decode: %v", i, err)
		}
	}
	if one := (Source{Schedule: "beat"}).AppendSlot(got[:0], slot, slot.Add(time.Second), emitted); len(one) != 1 || one[0].ID != "beat@2026-11-29T14:00:30Z" || one[0].Deadline != nil ||
		one[0].NotBefore == nil || !one[0].NotBefore.Equal(slot.Add(time.Second)) || !one[0].StartAt().Equal(slot.Add(time.Second)) {
		t.Errorf("one-shard source without deadline: %+v", one)
	}
}

func TestSourceTrigger(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 14, 3, 7, 500_000_000, time.UTC)
	got := Source{Schedule: "scan", Shards: 2, Deadline: time.Hour}.Trigger(at, "1a2b3c4d")
	if len(got) != 2 {
		t.Fatalf("got %d ticks, want 2", len(got))
	}
	for i, tk := range got {
		if !tk.Trigger || tk.ID != TriggerID("scan", at, "1a2b3c4d", i, 2) || !strings.Contains(tk.ID, "~trigger-") {
			t.Errorf("trigger %d: id %q trigger %v", i, tk.ID, tk.Trigger)
		}
		if !tk.Slot.Equal(at) || !tk.EmittedAt.Equal(at) || tk.Deadline == nil || !tk.Deadline.Equal(at.Add(time.Hour)) {
			t.Errorf("trigger %d: slot %v emitted %v deadline %v", i, tk.Slot, tk.EmittedAt, tk.Deadline)
		}
		if tk.Partition(12) != Partition("scan", i, 12) {
			t.Errorf("trigger %d: partition %d, want the shard's", i, tk.Partition(12))
		}
	}
}

func mustEncode(t *testing.T, tk Tick) []byte {
	t.Helper()
	b, err := Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
