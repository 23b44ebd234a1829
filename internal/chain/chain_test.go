package chain

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestFollowerEndsSlots: a two-shard upstream's slot ends once both shards have an outcome, as a success when
// both succeeded and a failure when one failed; a second outcome of a tick, a trigger's, a breach record and
// another schedule's outcome end nothing; outcomes in a batch record count as their own.
func TestFollowerEndsSlots(t *testing.T) {
	t.Parallel()
	f := NewFollower(nil, []Upstream{{Schedule: "extract", Shards: 2}}, time.Time{}, slog.New(slog.DiscardHandler))
	s1 := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	s2 := s1.Add(time.Hour)
	outcome := func(id, status string) ledger.Entry {
		return ledger.Entry{Kind: ledger.KindOutcome, ID: id, Status: status, Partition: 0, Worker: "w1", At: s1}
	}
	rec := func(e ledger.Entry) *kgo.Record { return &kgo.Record{Key: []byte(e.ID), Value: ledger.Encode(e)} }
	var ended []Ended
	for _, r := range []*kgo.Record{
		rec(outcome(tick.ID("extract", s1, 0, 2), ledger.StatusOK)),
		rec(outcome(tick.ID("extract", s1, 0, 2), ledger.StatusFailed)), // a second outcome: the first counts
		rec(outcome(tick.ID("other", s1, 0, 1), ledger.StatusOK)),
		rec(outcome(tick.TriggerID("extract", s1, "n1", 1, 2), ledger.StatusOK)),
		{Key: ledger.BreachKey(tick.ID("extract", s1, 1, 2), ledger.DeadlineFinishBy), Value: []byte(`{}`)},
	} {
		ended = f.record(r, ended)
	}
	if len(ended) != 0 {
		t.Fatalf("ended %+v before the second shard's outcome", ended)
	}
	ended = f.record(rec(outcome(tick.ID("extract", s1, 1, 2), ledger.StatusOK)), ended)
	batch := &kgo.Record{Key: ledger.BatchKey(0, "w1", "x"), Value: ledger.AppendBatch(nil, 0, "w1", s2, [][]byte{
		ledger.Encode(outcome(tick.ID("extract", s2, 0, 2), ledger.StatusDeadLettered)),
		ledger.Encode(outcome(tick.ID("extract", s2, 1, 2), ledger.StatusOK)),
	})}
	ended = f.record(batch, ended)
	want := []Ended{{"extract", s1, Success}, {"extract", s2, Failure}}
	if len(ended) != len(want) {
		t.Fatalf("ended %+v, want %+v", ended, want)
	}
	for i := range want {
		if ended[i].Schedule != want[i].Schedule || !ended[i].Slot.Equal(want[i].Slot) || ended[i].Outcome != want[i].Outcome {
			t.Errorf("ended[%d] = %+v, want %+v", i, ended[i], want[i])
		}
	}
}

// TestMatches: success, failure and any against each outcome.
func TestMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		when string
		o    Outcome
		want bool
	}{
		{"", Success, true}, {schedule.WhenSuccess, Failure, false}, {schedule.WhenSuccess, Other, false},
		{schedule.WhenFailure, Failure, true}, {schedule.WhenFailure, Success, false}, {schedule.WhenFailure, Other, false},
		{schedule.WhenAny, Success, true}, {schedule.WhenAny, Failure, true}, {schedule.WhenAny, Other, true},
	} {
		if got := Matches(c.when, c.o); got != c.want {
			t.Errorf("Matches(%q, %s) = %v, want %v", c.when, c.o, got, c.want)
		}
	}
}
