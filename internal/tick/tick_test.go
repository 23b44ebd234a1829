package tick

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"
)

func TestID(t *testing.T) {
	t.Parallel()
	slot := time.Date(2026, 11, 29, 15, 0, 30, 0, time.FixedZone("X", 3600))
	tests := []struct {
		shard, shards int
		want          string
	}{
		{0, 1, "scan@2026-11-29T14:00:30Z"},
		{3, 4, "scan@2026-11-29T14:00:30Z#3"},
	}
	for _, tt := range tests {
		if got := ID("scan", slot, tt.shard, tt.shards); got != tt.want {
			t.Errorf("ID(shard %d/%d) = %q, want %q", tt.shard, tt.shards, got, tt.want)
		}
	}
	trig := TriggerID("scan", slot, "ab12", 0, 1)
	if trig == ID("scan", slot, 0, 1) {
		t.Fatalf("trigger ID %q collides with the scheduled ID", trig)
	}
}

func TestPartitionSpreadsShards(t *testing.T) {
	t.Parallel()
	seen := map[int32]bool{}
	for shard := range 12 {
		p := Partition("scan", shard, 12)
		if p < 0 || p >= 12 {
			t.Fatalf("partition %d out of range", p)
		}
		if seen[p] {
			t.Fatalf("shard %d reuses partition %d", shard, p)
		}
		seen[p] = true
	}
	if a, b := Partition("scan", 1, 12), Partition("scan", 1, 12); a != b {
		t.Fatal("partition is not stable")
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	in := New("scan", time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC), 1, 2)
	in.Payload = `{"table":"x"}`
	in.LeaderEpoch = 7
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if out.ID != in.ID || out.Payload != in.Payload || !out.Slot.Equal(in.Slot) || out.LeaderEpoch != 7 {
		t.Fatalf("round trip: got %+v, want %+v", out, in)
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in    string
		wantVersion bool
	}{
		{"garbage", "\x00\x01not json", false},
		{"empty", "", false},
		{"future version", `{"v":4,"id":"a@2026-01-01T00:00:00Z","schedule":"a","slot":"2026-01-01T00:00:00Z"}`, true},
		{"no version", `{"id":"a@2026-01-01T00:00:00Z","schedule":"a","slot":"2026-01-01T00:00:00Z"}`, true},
		{"no slot", `{"v":1,"id":"a@x","schedule":"a"}`, false},
		{"foreign id", `{"v":1,"id":"b@2026-01-01T00:00:00Z","schedule":"a","slot":"2026-01-01T00:00:00Z"}`, false},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.in))
		if err == nil {
			t.Errorf("%s: Decode succeeded", tt.name)
			continue
		}
		if got := errors.Is(err, ErrUnknownVersion); got != tt.wantVersion {
			t.Errorf("%s: errors.Is(ErrUnknownVersion) = %v, want %v (%v)", tt.name, got, tt.wantVersion, err)
		}
	}
	// Unknown fields are ignored.
	if _, err := Decode([]byte(`{"v":1,"id":"a@2026-01-01T00:00:00Z","schedule":"a","slot":"2026-01-01T00:00:00Z","new":1}`)); err != nil {
		t.Errorf("unknown field: %v", err)
	}
}

// Encode writes exactly what json.Marshal writes for the same Tick, whatever its strings and times hold.
func TestEncodeIsMarshal(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 29, 2, 30, 0, 123456789, time.FixedZone("", 5*3600+1800))
	slot := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tk := range []Tick{
		{},
		New("beat", slot, 0, 1),
		{V: 1, ID: "a@x#3", Schedule: "a", Slot: slot, Shard: 3, Shards: 7, Payload: `{"k":"<v>&\u2028é` + "\x00\xff\"\\", Deadline: &at, NotBefore: &slot,
			Trigger: true, Backfill: "20261201t000000-ab", Overlap: "skip", Metrics: true, TimeoutMS: 90_000, MaxAttempts: 7, ScheduleVersion: -4, LeaderEpoch: 1 << 40, EmittedAt: at},
		{Payload: "plain ascii ~!@#$%^*()_+=-`[]{}|;':,./?", EmittedAt: far},                         // a year json.Marshal refuses
		{Schedule: "z", Slot: slot, EmittedAt: slot.In(time.FixedZone("", 24*3600))},                 // and a zone offset
		{Schedule: "z", Slot: slot, EmittedAt: slot.In(time.FixedZone("", -24*3600))},                // either way
		{Schedule: "z", Slot: slot, EmittedAt: slot.In(time.FixedZone("", -(23*3600 + 59*60 + 59)))}, // the last it accepts
		{Schedule: "z", Slot: slot, EmittedAt: slot.In(time.FixedZone("", 23*3600+59*60+59))},        // either way
	} {
		want := tk
		if want.V == 0 {
			want.V = Version
		}
		wantJSON, wantErr := json.Marshal(want)
		got, err := Encode(tk)
		if (err != nil) != (wantErr != nil) || string(got) != string(wantJSON) {
			t.Errorf("Encode = %s, %v\njson.Marshal = %s, %v", got, err, wantJSON, wantErr)
		}
	}
}

func TestBackfillTicks(t *testing.T) {
	t.Parallel()
	slot := time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)
	src := Source{Schedule: "scan", Shards: 2, Payload: "p", Version: 7, Deadline: time.Minute}
	ticks := src.Backfill(slot, slot.Add(time.Hour), "20261201t000000-ab")
	if len(ticks) != 2 {
		t.Fatalf("%d ticks, want one per shard", len(ticks))
	}
	for i, tk := range ticks {
		if want := "scan@2026-11-29T14:00:00Z~backfill-20261201t000000-ab#" + strconv.Itoa(i); tk.ID != want {
			t.Errorf("ID %s, want %s", tk.ID, want)
		}
		if !tk.Trigger || tk.Backfill != "20261201t000000-ab" || tk.Deadline != nil || tk.NotBefore != nil || !tk.Slot.Equal(slot) {
			t.Errorf("tick %+v: want a trigger and backfill, its slot, no deadline, no instant", tk)
		}
		if id, ok := IsBackfillID(tk.ID); !ok || id != tk.Backfill {
			t.Errorf("IsBackfillID(%s) = %s, %v", tk.ID, id, ok)
		}
		v, err := Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(v)
		if err != nil || got.Backfill != tk.Backfill || !got.Trigger {
			t.Errorf("round trip: %+v, %v", got, err)
		}
	}
	for _, id := range []string{"scan@2026-11-29T14:00:00Z", "scan@2026-11-29T14:00:00Z~trigger-ab", "scan@x~backfill-"} {
		if _, ok := IsBackfillID(id); ok {
			t.Errorf("%s is no backfill tick", id)
		}
	}
}
