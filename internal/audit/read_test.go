package audit

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func workRecord(t *testing.T, name string, slot time.Time, partition int32, offset int64) *kgo.Record {
	t.Helper()
	tk := tick.New(name, slot, 0, 1)
	tk.EmittedAt, tk.LeaderEpoch = slot, 3
	v, err := tick.Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Key: []byte(tk.ID), Value: v, Partition: partition, Offset: offset}
}

func resultRecord(id string, e ledger.Entry, partition int32, offset int64) *kgo.Record {
	e.ID = id
	return &kgo.Record{Key: []byte(id), Value: ledger.Encode(e), Partition: partition, Offset: offset}
}

func TestReaderResults(t *testing.T) {
	slot := at(10)
	id := tick.ID("s", slot, 0, 1)
	claim := func(worker string, fence int64) ledger.Entry {
		return ledger.Entry{Kind: ledger.KindClaim, Partition: 1, Worker: worker, Fence: fence}
	}
	start := func(worker string, fence int64, attempt int) ledger.Entry {
		return ledger.Entry{Kind: ledger.KindStarted, Partition: 1, Offset: 0, Worker: worker, Fence: fence, Attempt: attempt}
	}
	outcome := ledger.Entry{Kind: ledger.KindOutcome, Partition: 1, Offset: 0, Worker: "w2", Status: ledger.StatusOK, Attempts: 2}
	cases := []struct {
		name    string
		records []*kgo.Record
		want    []string // kind/worker of the tick's ledger entries, in order
	}{
		{
			name: "a start by a worker that lost the partition never ran",
			records: []*kgo.Record{
				{Key: ledger.ClaimKey(1), Value: ledger.Encode(claim("w1", 1)), Partition: 1, Offset: 0},
				{Key: ledger.ClaimKey(1), Value: ledger.Encode(claim("w2", 2)), Partition: 1, Offset: 1},
				resultRecord(id, start("w1", 1, 1), 1, 2),
				resultRecord(id, start("w2", 2, 2), 1, 3),
				resultRecord(id, outcome, 1, 4),
			},
			want: []string{"started/w2", "outcome/w2"},
		},
		{
			name: "a tombstone deletes the key's entries in its partition",
			records: []*kgo.Record{
				resultRecord(id, outcome, 1, 0),
				{Key: []byte(id), Partition: 1, Offset: 1},
			},
			want: []string{},
		},
		{
			name: "entries after the tombstone, or in another partition, stay",
			records: []*kgo.Record{
				resultRecord(id, outcome, 2, 0),
				resultRecord(id, outcome, 1, 0),
				{Key: []byte(id), Partition: 1, Offset: 1},
				resultRecord(id, outcome, 1, 2),
			},
			want: []string{"outcome/w2", "outcome/w2"},
		},
		{
			name: "a legacy outcome (no kind) is an outcome",
			records: []*kgo.Record{
				{Key: []byte(id), Value: []byte(`{"id":"` + id + `","status":"ok","attempts":1,"worker":"w9","partition":1,"offset":0}`), Partition: 1},
			},
			want: []string{"outcome/w9"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReader()
			r.work(workRecord(t, "s", slot, 1, 0))
			for _, rec := range tc.records {
				r.result(rec)
			}
			got := []string{}
			for _, e := range r.l.Ticks[id].Ledger {
				got = append(got, e.Kind+"/"+e.Worker)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ledger %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("ledger %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestReaderWork(t *testing.T) {
	r := newReader()
	r.work(workRecord(t, "s", at(10), 0, 0))
	r.work(workRecord(t, "s", at(10), 0, 1)) // doubled
	r.work(&kgo.Record{Key: []byte("junk"), Value: []byte("{"), Offset: 2})
	tk := r.l.Ticks[tick.ID("s", at(10), 0, 1)]
	if tk == nil || len(tk.Emissions) != 2 || tk.Emissions[1].LeaderEpoch != 3 || !tk.Slot.Equal(at(10)) {
		t.Errorf("tick %+v", tk)
	}
	if r.l.Undecodable != 1 {
		t.Errorf("undecodable %d, want 1", r.l.Undecodable)
	}
}

func TestMarkPartial(t *testing.T) {
	spec := func(paused bool) []byte {
		b, err := schedule.Encode(schedule.Spec{Name: "s", Every: schedule.Duration(10 * time.Second), Paused: paused})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name         string
		gaps         []gap
		tickVersion  int64
		wantPartial  bool
		wantVersions []int64
	}{
		{name: "every record retained", wantVersions: []int64{0, 5}},
		{name: "records compacted before the first retained version", gaps: []gap{{0, 3}}, tickVersion: 3, wantPartial: true, wantVersions: []int64{3, 5}},
		{name: "a gap between versions: only the later is trusted", gaps: []gap{{4, 5}}, tickVersion: 3, wantPartial: true, wantVersions: []int64{5}},
		{name: "a tick names a version that is gone", tickVersion: 1, wantPartial: true, wantVersions: []int64{3, 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newReader()
			first := int64(3)
			if tc.wantVersions[0] == 0 {
				first = 0
			}
			r.schedule(&kgo.Record{Key: []byte("s"), Value: spec(false), Offset: first, Timestamp: at(0)})
			r.schedule(&kgo.Record{Key: []byte("s"), Value: spec(true), Offset: 5, Timestamp: at(50)})
			wr := workRecord(t, "s", at(10), 0, 0)
			tk, _ := tick.Decode(wr.Value)
			tk.ScheduleVersion = tc.tickVersion
			wr.Value, _ = tick.Encode(tk)
			r.work(wr)
			r.l.scheduleGaps = tc.gaps
			r.l.markPartial()
			d := r.l.Definitions["s"]
			var got []int64
			for _, v := range d.Versions {
				got = append(got, v.Offset)
			}
			if d.Partial != tc.wantPartial || len(got) != len(tc.wantVersions) || got[0] != tc.wantVersions[0] {
				t.Errorf("partial %v versions %v, want %v %v", d.Partial, got, tc.wantPartial, tc.wantVersions)
			}
		})
	}
}
