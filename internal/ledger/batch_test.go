package ledger

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBatchCountsAsItsEntries: a batch's entries decode in order, as if each were its own record.
func TestBatchCountsAsItsEntries(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	started := Encode(tickE(KindStarted, "w", "a@1", 5, 10))
	outcome := Encode(tickE(KindOutcome, "w", "b@1", 5, 11))
	legacy := []byte(`{"id":"c@1","status":"ok","worker":"w","fence":5,"partition":0,"offset":12}`)
	v := AppendBatch(nil, 0, `w"1`, at, [][]byte{started, outcome, legacy})
	es, err := Entries(v)
	if err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	if len(es) != 3 || es[0].Kind != KindStarted || es[1].Kind != KindOutcome || es[2].Kind != KindOutcome || es[2].ID != "c@1" {
		t.Fatalf("entries %+v", es)
	}
	f := NewFold(0)
	f.Apply(claimE("w", 5, 1000), 0, at)
	for _, e := range es {
		if why := f.Apply(e, 1, at); why != "" {
			t.Fatalf("%s refused: %s", e.ID, why)
		}
	}
	if s := f.Tick(10, "a@1"); s == nil || !s.Started || s.FirstAt != 1 {
		t.Fatalf("a@1: %+v", s)
	}
	if s := f.Tick(11, "b@1"); s == nil || !s.Finished() {
		t.Fatalf("b@1: %+v", s)
	}
	// A single entry stands for itself.
	if es, err := Entries(started); err != nil || len(es) != 1 || es[0].ID != "a@1" {
		t.Fatalf("single: %v %+v", err, es)
	}
	if !IsBatchKey(BatchKey(3, "w", "n")) || IsBatchKey(ClaimKey(3)) {
		t.Fatal("IsBatchKey")
	}
}

// TestBatchRefused: a batch that no worker writes does not decode.
func TestBatchRefused(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	one := Encode(tickE(KindStarted, "w", "a@1", 5, 10))
	many := make([][]byte, MaxBatch+1)
	for i := range many {
		many[i] = one
	}
	for name, v := range map[string][]byte{
		"empty":           AppendBatch(nil, 0, "w", at, nil),
		"too many":        AppendBatch(nil, 0, "w", at, many),
		"claim inside":    AppendBatch(nil, 0, "w", at, [][]byte{Encode(claimE("w", 6, 1000))}),
		"batch inside":    AppendBatch(nil, 0, "w", at, [][]byte{AppendBatch(nil, 0, "w", at, [][]byte{one})}),
		"other partition": AppendBatch(nil, 1, "w", at, [][]byte{one}),
		"bad entry":       AppendBatch(nil, 0, "w", at, [][]byte{[]byte(`{"v":1,"kind":"started","partition":0}`)}),
		"other version":   AppendBatch(nil, 0, "w", at, [][]byte{[]byte(`{"v":2,"kind":"started","id":"a","partition":0}`)}),
		"entries outside": []byte(`{"v":1,"kind":"started","id":"a","entries":[` + string(one) + `]}`),
	} {
		if _, err := Decode(v); err == nil {
			t.Errorf("%s: decoded %.120s", name, v)
		} else if len(err.Error()) > 300 || strings.Contains(err.Error(), string(one)) {
			t.Errorf("%s: error quotes the record: %v", name, err)
		}
	}
}

// TestTakeKeepsAloneEntriesApart: an entry to be written alone is a record of its own: the batches end before
// it and after it.
func TestTakeKeepsAloneEntriesApart(t *testing.T) {
	o := &outbox{}
	entry := func(name string, alone bool) *outEntry {
		return &outEntry{key: []byte(name), value: []byte(`{}`), alone: alone}
	}
	q := &outQueue{queue: []*outEntry{entry("a", false), entry("b", false), entry("c", true), entry("d", true), entry("e", false)}}
	var got []string
	for len(q.queue) > 0 {
		var names []string
		for _, x := range o.takeLocked(0, q) {
			names = append(names, string(x.key))
		}
		got = append(got, strings.Join(names, ""))
	}
	if want := []string{"ab", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("records %q, want %q", got, want)
	}
}
