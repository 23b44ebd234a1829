package audit

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestStreamIsRun: an audit in passes finds what one read finds: the same schedule reports (each in the pass
// its name hashes to), triggers, backfills, totals, notes (each undecodable record counted once) and result, the
// slots an outage passed over included, which a pass tells from the other schedules' ticks it does not keep
// (with 5 and 8 passes, alpha has a pass of its own).
func TestStreamIsRun(t *testing.T) {
	t.Parallel()
	b, base, alpha, beta, _ := manySchedules(t)
	// Records no pass keeps whole: undecodable results under keys of no schedule (a batch's, a breach's, a
	// coordinate key), of a tick, and undecodable work records: each counted once, whatever the passes.
	at := base.Add(time.Minute)
	for _, key := range []string{string(ledger.BatchKey(0, "w1", "n9")), string(ledger.BreachKey(tick.ID(alpha, base, 0, 2), "start_by")), "3-17",
		tick.ID(beta, base, 0, 1)} {
		b.produce(&kgo.Record{Topic: b.names.Results, Partition: 0, Key: []byte(key), Value: []byte("{not json"), Timestamp: at})
	}
	b.produce(&kgo.Record{Topic: b.names.Work, Partition: 1, Key: []byte(tick.ID(beta, base, 0, 1)), Value: []byte("{not json"), Timestamp: at},
		&kgo.Record{Topic: b.names.Work, Partition: 2, Key: []byte("no-schedule"), Value: []byte("{not json"), Timestamp: at})
	o := Options{From: base, To: base.Add(125 * time.Second), Now: base.Add(20 * time.Minute), Lead: -1}
	want, err := Run(b.ctx, b.opts, b.names, o)
	if err != nil {
		t.Fatal(err)
	}
	if want.Totals.PassedOver == 0 || want.Totals.Missing == 0 || len(want.Triggers) == 0 || len(want.Backfills) == 0 {
		t.Fatalf("the fixture's audit has nothing to compare: %+v", want.Totals)
	}
	if !slices.Contains(want.Notes, "6 records could not be decoded and were skipped") {
		t.Fatalf("notes of one read: %q, want 6 undecodable records", want.Notes)
	}
	for _, passes := range []int{1, 2, 3, 5, 8} {
		var got Report
		n := 0
		sum, err := Stream(b.ctx, b.opts, b.names, o, passes, func(rep *Report) error {
			for _, s := range rep.Schedules {
				if passes > 1 && kafka.LeaderOf(s.Name, passes) != int32(n) {
					t.Errorf("%d passes: %s in pass %d", passes, s.Name, n)
				}
			}
			got.Schedules = append(got.Schedules, rep.Schedules...)
			got.Triggers = append(got.Triggers, rep.Triggers...)
			got.Backfills = append(got.Backfills, rep.Backfills...)
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != passes {
			t.Errorf("%d passes: fn called %d times", passes, n)
		}
		slices.SortFunc(got.Schedules, func(a, b ScheduleReport) int { return strings.Compare(a.Name, b.Name) })
		slices.SortFunc(got.Triggers, func(a, b TickReport) int { return strings.Compare(a.ID, b.ID) })
		slices.SortFunc(got.Backfills, func(a, b TickReport) int { return strings.Compare(a.ID, b.ID) })
		same := func(what string, g, w any) {
			if !reflect.DeepEqual(g, w) {
				gj, _ := json.MarshalIndent(g, "", " ")
				wj, _ := json.MarshalIndent(w, "", " ")
				t.Errorf("%d passes: %s differ:\n got %s\nwant %s", passes, what, gj, wj)
			}
		}
		same("schedules", got.Schedules, want.Schedules)
		same("triggers", got.Triggers, want.Triggers)
		same("backfills", got.Backfills, want.Backfills)
		same("totals", []Counts{sum.Totals, sum.TriggerTotals, sum.BackfillTotals}, []Counts{want.Totals, want.TriggerTotals, want.BackfillTotals})
		same("notes and result", []any{sum.Notes, sum.OK, sum.From, sum.To}, []any{want.Notes, want.OK, want.From, want.To})
		if len(sum.Schedules) != 0 || len(sum.Triggers) != 0 {
			t.Errorf("%d passes: the summary lists %d schedules and %d triggers, want none", passes, len(sum.Schedules), len(sum.Triggers))
		}
	}
}
