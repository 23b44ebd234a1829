package forward

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/tick"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

// rec is a tick record at offset o of partition p, due at t0+due.
func rec(t *testing.T, p int32, o int64, due time.Duration) *kgo.Record {
	t.Helper()
	tk := tick.New("s", t0.Add(time.Duration(o)*time.Second), 0, 1)
	at := t0.Add(due)
	tk.NotBefore = &at
	v, err := tick.Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Partition: p, Offset: o, Key: []byte(tk.ID), Value: v}
}

func offsets(recs []*kgo.Record) string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprintf("%d/%d", r.Partition, r.Offset))
	}
	return fmt.Sprint(out)
}

// A record is taken on its instant and never before one held ahead of it; a partition that keeps records
// commits the offset of its first held one, so a crash delivers it again.
func TestHeldTakesTheDuePrefix(t *testing.T) {
	h := New(nil)
	h.Assign([]int32{0, 1})
	h.Hold([]*kgo.Record{rec(t, 0, 0, 0), rec(t, 0, 1, 10*time.Second), rec(t, 0, 2, 0), rec(t, 1, 5, time.Second)})

	got, commitAt := h.Take(t0)
	if offsets(got) != "[0/0]" {
		t.Fatalf("took %s at t0, want [0/0] (0/2 waits behind 0/1)", offsets(got))
	}
	if want := map[int32]int64{0: 1, 1: 5}; !maps.Equal(commitAt, want) {
		t.Fatalf("commit offsets %v, want %v", commitAt, want)
	}
	if wait, any := h.NextWait(t0); !any || wait != time.Second {
		t.Fatalf("NextWait %s %v, want 1s true", wait, any)
	}
	got, commitAt = h.Take(t0.Add(10 * time.Second))
	slices.SortFunc(got, func(a, b *kgo.Record) int { return int(a.Partition-b.Partition)*1000 + int(a.Offset-b.Offset) })
	if offsets(got) != "[0/1 0/2 1/5]" || len(commitAt) != 0 {
		t.Fatalf("took %s with commits %v at t0+10s, want [0/1 0/2 1/5] and none", offsets(got), commitAt)
	}
	if _, any := h.NextWait(t0); any {
		t.Fatal("something still held")
	}
}

// After a transaction that did not commit the session delivers again from the committed offset: what is held
// from there on is replaced, not doubled.
func TestHeldRewindReplaces(t *testing.T) {
	h := New(nil)
	h.Assign([]int32{0})
	for o := range int64(5) {
		h.Hold([]*kgo.Record{rec(t, 0, o, time.Hour)})
	}
	h.Hold([]*kgo.Record{rec(t, 0, 2, 0), rec(t, 0, 3, 0)})
	got, commitAt := h.Take(t0)
	if offsets(got) != "[]" || commitAt[0] != 0 {
		t.Fatalf("took %s (commit %v), want nothing: offset 0 is due in an hour", offsets(got), commitAt)
	}
	got, _ = h.Take(t0.Add(time.Hour))
	if offsets(got) != "[0/0 0/1 0/2 0/3]" {
		t.Fatalf("took %s, want [0/0 0/1 0/2 0/3]: each offset once, offset 4 dropped by the rewind", offsets(got))
	}
}

// Records of a partition released (or not assigned) are not held; an assignment starts empty; records taken
// for a transaction that never began go back in front.
func TestHeldFollowsTheAssignment(t *testing.T) {
	h := New(nil)
	if n := h.Assign([]int32{0, 1}); n != 2 {
		t.Fatalf("Assign: %d partitions, want 2", n)
	}
	h.Hold([]*kgo.Record{rec(t, 0, 0, time.Hour), rec(t, 1, 0, 0), rec(t, 2, 0, 0)})
	if n := h.Release([]int32{0}); n != 1 {
		t.Fatalf("Release: %d partitions, want 1", n)
	}
	got, _ := h.Take(t0)
	if offsets(got) != "[1/0]" {
		t.Fatalf("took %s, want [1/0]: partition 0 released, 2 never assigned", offsets(got))
	}
	h.Hold([]*kgo.Record{rec(t, 1, 1, 0)})
	h.Restore(got)
	got, _ = h.Take(t0)
	if offsets(got) != "[1/0 1/1]" {
		t.Fatalf("took %s after Restore, want [1/0 1/1]", offsets(got))
	}
	h.Hold([]*kgo.Record{rec(t, 1, 2, time.Hour)})
	h.Assign([]int32{1})
	if _, any := h.NextWait(t0); any {
		t.Fatal("a partition assigned again kept what was held before")
	}
	h.Hold([]*kgo.Record{rec(t, 1, 3, time.Hour)})
	h.Drop()
	if _, any := h.NextWait(t0); any {
		t.Fatal("Drop kept records")
	}
}

// A cancel record not written in a transaction is reported and not remembered; a genuine one would be (the
// transactional attribute cannot be set outside kgo, so this test reads only the refusal).
func TestHeldRefusesForgedCancels(t *testing.T) {
	var forged []int32
	h := New(func(p int32) { forged = append(forged, p) })
	h.Assign([]int32{3})
	c := tick.Cancel{Schedule: "s", Before: 10, After: t0.Add(-time.Hour), Reason: tick.ReasonPaused}
	recs := cancel.Records(c, "work", 4)
	recs[3].Offset = 7
	h.Hold(recs[3:])
	if !slices.Equal(forged, []int32{3}) {
		t.Fatalf("forged cancels reported for partitions %v, want [3]", forged)
	}
	tk := tick.New("s", t0, 0, 1)
	if got := h.Cancelled(tk); got != nil {
		t.Fatalf("a forged cancel applies: %+v", got)
	}
	got, _ := h.Take(t0)
	if offsets(got) != "[3/7]" {
		t.Fatalf("took %s, want the cancel record at once (it is dead-lettered in its turn)", offsets(got))
	}
}
