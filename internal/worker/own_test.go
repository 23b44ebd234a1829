package worker

import (
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
)

// TestOutcomeEntryIsItsRecordDecoded: the ledger reader applies a worker's own outcomes without decoding them
// (ledger.Log remembers them); the entry it applies must be the one its record decodes to.
func TestOutcomeEntryIsItsRecordDecoded(t *testing.T) {
	slot := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	o := Outcome{ID: "scan@2026-12-02T12:00:00Z", Schedule: "scan", Slot: &slot, Status: StatusFailed, Attempts: 3,
		DurationMS: 12.5, Worker: "w1", Error: "exit status 3", Partition: 2, Offset: 41,
		FinishedAt: slot.Add(time.Second), Fence: 7, Interrupted: true}
	w := &Worker{}
	w.names.Results = "x.results"
	rec := w.resultRecord(&kgo.Record{Partition: 2, Offset: 41, Key: []byte(o.ID)}, o, 12)
	got, err := ledger.Decode(rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	if want := o.entry(); !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v\nentry   %+v", got, want)
	}
}
