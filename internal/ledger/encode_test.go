package ledger

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// FuzzEncodeIsMarshal: Encode's hand-written JSON is json.Marshal's, byte for byte, for any strings, numbers
// and instants.
func FuzzEncodeIsMarshal(f *testing.F) {
	f.Add("started", "scan@2026-11-29T14:00:30Z", "scan", "w-1", "", "", int64(7), 1.5, int64(1795000000), int64(5000), true)
	f.Add("outcome", "a<b>", "\u2028\x00\xff\"\\&", "w", "ok", "boom\n", int64(-1), 0.000001, int64(-62135596801), int64(0), false)
	f.Add("outcome", "x", "y", "z", "failed", "e", int64(math.MaxInt64), 1e21, int64(253402300800), int64(-3), false)
	f.Add("renewed", "x", "", "z", "", "", int64(0), math.NaN(), int64(0), int64(1), true)
	f.Fuzz(func(t *testing.T, kind, id, schedule, worker, status, errText string, n int64, ms float64, sec, lease int64, flag bool) {
		at := time.Unix(sec, n%1_000_000_000)
		slot := at.Add(-time.Second).In(time.FixedZone("", int(n%100_000)))
		e := Entry{V: Version, Kind: kind, ID: id, Schedule: schedule, Slot: &slot, Partition: int32(n), Offset: n, Fence: -n,
			Worker: worker, Attempt: int(n % 7), Attempts: int(n % 5), Status: status, Error: errText, DurationMS: ms,
			Interrupted: flag, Retry: !flag, At: at, LeaseMS: lease}
		if flag {
			e.Slot, e.FinishedAt, e.StartedAt = nil, &at, &slot
		}
		got, ok := appendEntry(nil, &e)
		want, err := json.Marshal(e)
		if ok && (err != nil || string(got) != string(want)) {
			t.Fatalf("appendEntry = %s\njson.Marshal = %s, %v", got, want, err)
		}
		if err != nil {
			return // Encode panics on what json.Marshal refuses: every entry a worker writes marshals
		}
		if enc := Encode(e); string(enc) != string(want) {
			t.Fatalf("Encode = %s\njson.Marshal = %s", enc, want)
		}
	})
}

func TestEncodeWritesStartsItself(t *testing.T) {
	slot := time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC)
	for _, e := range []Entry{
		{V: Version, Kind: KindStarted, ID: "scan@2026-11-29T14:00:30Z", Schedule: "scan", Slot: &slot, Partition: 3, Offset: 42, Fence: 2, Worker: "w-1", Attempt: 1, At: slot, LeaseMS: 5000},
		{V: Version, Kind: KindOutcome, ID: "scan@2026-11-29T14:00:30Z", Partition: 3, Offset: 42, Fence: 2, Worker: "w-1", Attempts: 1, Status: StatusOK, DurationMS: 12.345, At: slot, FinishedAt: &slot},
	} {
		if _, ok := appendEntry(nil, &e); !ok {
			t.Errorf("appendEntry left a %s entry to encoding/json", e.Kind)
		}
	}
}

func BenchmarkEncodeStarted(b *testing.B) {
	slot := time.Date(2026, 11, 29, 14, 0, 30, 0, time.UTC)
	e := Entry{Kind: KindStarted, ID: "scan@2026-11-29T14:00:30Z", Schedule: "scan", Slot: &slot, Partition: 3, Offset: 42, Fence: 2, Worker: "w-1", Attempt: 1, At: slot, LeaseMS: 5000}
	b.ReportAllocs()
	for b.Loop() {
		Encode(e)
	}
}
