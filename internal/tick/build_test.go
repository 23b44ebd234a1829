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

// A Writer writes the bytes of ID and AppendEncode for AppendSlot's ticks. One Writer is reused across all the
// cases, in an order where consecutive instants are equal, differ in their zone only (same instant or same wall
// clock) or in a nanosecond, so that what it keeps from one record to the next is checked as well.
func TestWriterIsAppendSlot(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 29, 0, 59, 59, 0, time.UTC) // an hour before Berlin's clocks go forward
	instants := []time.Time{
		base, base, base.In(berlin), base.Add(time.Nanosecond), base.Add(time.Nanosecond).In(berlin),
		base.Add(time.Second).In(berlin), // past the change: another offset
		base,
		time.Date(2026, 3, 29, 0, 59, 59, 0, time.FixedZone("", 3600)), // base's wall clock, another instant
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.FixedZone("", -(23*3600+59*60))),
		base.Add(123456789 * time.Nanosecond), base,
		time.Date(2026, 3, 29, 0, 59, 59, 0, time.FixedZone("", 24*3600)), // an offset MarshalJSON refuses
		base,
	}
	sources := []Source{
		{Schedule: "scan"},
		{Schedule: "scan", Shards: 3, Payload: `{"table":"orders"}`, Version: 42, Deadline: time.Minute, LeaderEpoch: 7, Overlap: OverlapSkip, Metrics: true, Timeout: 90 * time.Second, MaxAttempts: 5},
		{Schedule: "tenant/<a&b>", Payload: "line\nbreak \u00e9 \"quoted\"", Version: 1 << 40, Deadline: time.Nanosecond, Overlap: OverlapQueue},
	}
	var w Writer
	var key, value []byte
	for i, slot := range instants {
		notBefore := instants[(i+1)%len(instants)]
		emitted := instants[(i+3)%len(instants)]
		for _, nb := range []time.Time{notBefore, {}} {
			for _, src := range sources {
				for _, tk := range src.AppendSlot(nil, slot, nb, emitted) {
					key = w.AppendID(key[:0], src.Schedule, slot, tk.Shard, tk.Shards)
					if string(key) != tk.ID {
						t.Errorf("AppendID = %s, ID = %s", key, tk.ID)
					}
					want, err := AppendEncode(nil, tk)
					var ok bool
					value, ok = w.AppendTick(value[:0], src, key, slot, slot, nb, emitted, tk.Shard)
					if err != nil { // a time past 9999 (a deadline or a zone from the last day of 9999)
						if ok || len(value) != 0 {
							t.Errorf("AppendTick = %s, %v; AppendEncode: %v", value, ok, err)
						}
						continue
					}
					if !ok || string(value) != string(want) {
						t.Errorf("AppendTick = %s (%v)\nAppendEncode = %s", value, ok, want)
					}
				}
			}
		}
	}
	// A year json.Marshal refuses: nothing is appended, and false reported.
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, ok := w.AppendTick([]byte("x"), sources[0], []byte("scan@x"), far, far, time.Time{}, base, 0); ok || string(got) != "x" {
		t.Errorf("AppendTick in year 10000 = %q, %v; want nothing and false", got, ok)
	}
	if got := w.AppendID(nil, "scan", far, 0, 1); string(got) != ID("scan", far, 0, 1) {
		t.Errorf("AppendID in year 10000 = %s, want %s", got, ID("scan", far, 0, 1))
	}
}

func BenchmarkWriter(b *testing.B) {
	slot := time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC)
	src := Source{Schedule: "load-0000042", Version: 42, LeaderEpoch: 7}
	var w Writer
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = w.AppendID(buf[:0], src.Schedule, slot, 0, 1)
		buf, _ = w.AppendTick(buf, src, buf, slot, slot, slot, slot, 0)
	}
}
