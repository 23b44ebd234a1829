package ledger

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// FuzzOutcomeIsMarshal: the outcome record's hand-written JSON is json.Marshal's, byte for byte.
func FuzzOutcomeIsMarshal(f *testing.F) {
	f.Add("scan@2026-11-29T14:00:30Z", "scan", "w-1", "ok", "", int64(7), 1.5, int64(1795000000), true)
	f.Add("a<b>", "\u2028\x00\xff\"\\&", "w", "failed", "boom\n", int64(-1), 0.0, int64(-62135596801), false)
	f.Add("x", "", "z", "dead_lettered", "e", int64(math.MaxInt64), 1e21, int64(253402300800), false)
	f.Add("x", "y", "z", "", "", int64(0), math.Inf(1), int64(0), true)
	f.Fuzz(func(t *testing.T, id, schedule, worker, status, errText string, n int64, ms float64, sec int64, flag bool) {
		at := time.Unix(sec, n%1_000_000_000).In(time.FixedZone("", int(n%100_000)))
		o := Outcome{V: 1, Kind: "outcome", ID: id, Schedule: schedule, Status: status, Attempts: int(n % 9), DurationMS: ms,
			Worker: worker, Error: errText, Partition: int32(n), Offset: n, FinishedAt: at, Fence: n % 3, Interrupted: flag}
		if flag {
			o.Slot = &at
		}
		got, ok := appendOutcome(nil, &o)
		want, err := json.Marshal(o)
		if ok && (err != nil || string(got) != string(want)) {
			t.Fatalf("appendOutcome = %s\njson.Marshal = %s, %v", got, want, err)
		}
	})
}

// TestOutcomeRecordDecodes: the Log applies a worker's own outcomes without decoding them (it remembers
// OutcomeEntry); that entry must be the one the record decodes to, and Outcomes must read the Outcome back.
func TestOutcomeRecordDecodes(t *testing.T) {
	slot := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	o := Outcome{ID: "scan@2026-12-02T12:00:00Z", Schedule: "scan", Slot: &slot, Status: StatusFailed, Attempts: 3,
		DurationMS: 12.5, Worker: "w1", Error: "exit status 3", Partition: 2, Offset: 41,
		FinishedAt: slot.Add(time.Second), Fence: 7, Interrupted: true}
	v := MarshalOutcome(o)
	got, err := Decode(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := OutcomeEntry(o); !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v\nentry   %+v", got, want)
	}
	outs, err := Outcomes(v)
	if err != nil {
		t.Fatal(err)
	}
	o.V, o.Kind = Version, KindOutcome
	if len(outs) != 1 || !reflect.DeepEqual(outs[0], o) {
		t.Fatalf("Outcomes = %+v\nwant       %+v", outs, o)
	}
}
