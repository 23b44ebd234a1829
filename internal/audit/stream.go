package audit

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// PassSchedules is about how many schedules a pass of Stream keeps, when Passes chooses the number of passes:
// their definitions and their ticks in the range, so that an audit of ten million schedules holds about a
// tenth of them at a time.
const PassSchedules = 1_000_000

// Passes returns the number of passes Stream needs to keep about PassSchedules schedules each: one per
// PassSchedules records the schedules topic retains (live schedules, their older versions and tombstones).
func Passes(ctx context.Context, opts []kgo.Opt, names kafka.Names) (int, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, names.Schedules)
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", names.Schedules, kafka.NeedACL(err, "Describe", "topic", names.Schedules))
	}
	ends, err := adm.ListEndOffsets(ctx, names.Schedules)
	if err != nil {
		return 0, fmt.Errorf("listing %s: %w", names.Schedules, kafka.NeedACL(err, "Describe", "topic", names.Schedules))
	}
	var records int64
	ends.Each(func(e kadm.ListedOffset) {
		if s, ok := starts.Lookup(e.Topic, e.Partition); ok && e.Err == nil && s.Err == nil {
			records += max(e.Offset-s.Offset, 0)
		}
	})
	return int(max((records+PassSchedules-1)/PassSchedules, 1)), nil
}

// Stream is Run for a namespace too large to hold at once. It reads the topics in passes: pass p keeps the
// records of the schedules whose name hashes to p of passes (the hash of the ticker leaders), and of the other
// schedules' ticks only each leader term's first and last emission, which is what tells a slot passed over by
// the catch-up policy from a missing one (exact with one leader, close with several, as for ReadSchedule).
// After each pass fn is given its report: its schedules, sorted by name, with their triggers and backfills, and
// the totals of those. A pass reads the work and results topics whole: the time grows with passes, the memory
// with what one pass keeps.
//
// Stream returns the audit's summary: the Report of every pass together less its lists (Schedules, Triggers and
// Backfills empty), its totals, notes and result. With passes 1 (or o.Schedule set) it is Run, and fn is given
// the whole report.
func Stream(ctx context.Context, opts []kgo.Opt, names kafka.Names, o Options, passes int, fn func(*Report) error) (*Report, error) {
	if passes < 1 || o.Schedule != "" {
		passes = 1
	}
	o.Now = cmp.Or(o.Now, time.Now()) // one instant for every pass's comparison
	var (
		sum                         *Report
		unnamed, forged, undecoding int
	)
	for p := range passes {
		r := newReader()
		if passes > 1 {
			r.only = func(schedule string) bool { return kafka.LeaderOf(schedule, passes) == int32(p) }
			r.unnamed = p == 0
		}
		l, err := readRecent(ctx, opts, names, time.Time{}, 0, r)
		if err != nil {
			return nil, fmt.Errorf("audit pass %d of %d: %w", p+1, passes, err)
		}
		forged, undecoding = forged+l.ForgedCancels, undecoding+l.Undecodable
		for _, t := range l.Ticks {
			if t.Slot.IsZero() {
				unnamed++
			}
		}
		rep := Compare(l, o)
		if sum == nil {
			sum = &Report{From: rep.From, To: rep.To, At: rep.At, GraceSeconds: rep.GraceSeconds, Strict: rep.Strict, OK: true,
				Totals: Counts{Outcomes: map[string]int{}}, TriggerTotals: Counts{Outcomes: map[string]int{}}, BackfillTotals: Counts{Outcomes: map[string]int{}}}
		}
		sum.Totals.add(rep.Totals)
		sum.TriggerTotals.add(rep.TriggerTotals)
		sum.BackfillTotals.add(rep.BackfillTotals)
		sum.OK = sum.OK && rep.OK
		if err := fn(rep); err != nil {
			return nil, err
		}
	}
	if o.Schedule != "" {
		unnamed = 0
	}
	sum.Notes = logNotes(unnamed, forged, undecoding)
	normalize(sum)
	return sum, nil
}
