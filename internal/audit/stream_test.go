package audit

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// TestStreamIsRun: an audit in passes finds what one read finds: the same schedule reports (each in the pass
// its name hashes to), triggers, backfills, totals, notes and result, the slots an outage passed over
// included, which a pass tells from the other schedules' ticks it does not keep.
func TestStreamIsRun(t *testing.T) {
	t.Parallel()
	b, base, _, _, _ := manySchedules(t)
	o := Options{From: base, To: base.Add(125 * time.Second), Now: base.Add(20 * time.Minute), Lead: -1}
	want, err := Run(b.ctx, b.opts, b.names, o)
	if err != nil {
		t.Fatal(err)
	}
	if want.Totals.PassedOver == 0 || want.Totals.Missing == 0 || len(want.Triggers) == 0 || len(want.Backfills) == 0 {
		t.Fatalf("the fixture's audit has nothing to compare: %+v", want.Totals)
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
