package store

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// TestFoldTakesRecordsInOrderOnly: a record at or before the last one folded for its key changes nothing, so a
// schedule read twice (the whole topic, then its share; a share read again) never goes back.
func TestFoldTakesRecordsInOrderOnly(t *testing.T) {
	rec := func(offset int64, every time.Duration) *kgo.Record {
		r := &kgo.Record{Key: []byte("s"), Offset: offset, Timestamp: time.Unix(offset, 0)}
		if every > 0 {
			v, err := schedule.Encode(schedule.Spec{Name: "s", Every: schedule.Duration(every)})
			if err != nil {
				t.Fatal(err)
			}
			r.Value = v
		}
		return r
	}
	f := newFold()
	for _, r := range []*kgo.Record{rec(5, time.Minute), rec(9, 2*time.Minute), rec(5, time.Minute)} {
		if err := f.apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if e, ok := f.get("s"); !ok || e.Version != 9 {
		t.Fatalf("after @5, @9 and @5 again: %+v (%v), want version 9", e, ok)
	}
	for _, r := range []*kgo.Record{rec(12, 0), rec(9, 2*time.Minute), rec(5, time.Minute)} {
		if err := f.apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if e, ok := f.get("s"); ok {
		t.Fatalf("deleted at @12, then @9 and @5 read again: %+v, want deleted", e)
	}
	if err := f.apply(rec(14, 3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if e, ok := f.get("s"); !ok || e.Version != 14 {
		t.Fatalf("put again at @14: %+v (%v)", e, ok)
	}
}
