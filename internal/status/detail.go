package status

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// maxMissedRows bounds the missed slots PrintSchedule lists (--json has them all).
const maxMissedRows = 20

// PrintSchedule writes rep, a report on one schedule (Options.Schedule), for a person: the schedule in detail,
// then its pool's lag.
func PrintSchedule(w io.Writer, rep *Report) {
	if len(rep.Schedules) == 0 { // filtered out by --late
		fmt.Fprintf(w, "namespace   %s\n(not late: it started its last run at most %s after its instant and missed no slot in the last %s)\n",
			rep.Namespace, fmtWindow(durationOf(rep.LateSeconds)), window(rep))
		printErrors(w, rep)
		return
	}
	s := rep.Schedules[0]
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "%-11s %s\n", label, fmt.Sprintf(format, args...))
	}
	line("namespace", "%s", rep.Namespace)
	line("schedule", "%s (version %d)", s.Name, s.Version)
	line("definition", "%s", s.Schedule)
	if p := pause(s); s.Paused && p != "" {
		line("state", "paused, %s", p)
	} else {
		line("state", "%s", state(s, rep.At))
	}
	line("pool", "%s", s.Pool)
	if s.Limit != "" {
		line("limit", "%s", describeLimit(s.Limit, rep.Limits))
	}
	if s.Priority != 0 {
		line("priority", "%d (1 to 5: of the ticks waiting for their limit, the higher starts first)", s.Priority)
	}
	leader := "NONE"
	for _, l := range rep.Leaders {
		if l.Partition == s.Leader {
			leader = fmt.Sprintf("%s (host %s, producer %d, epoch %d)", l.ClientID, l.Host, l.ProducerID, l.Epoch)
		}
	}
	line("leader", "partition %d of the ticker topic: %s", s.Leader, leader)
	line("last slot", "%s (the last slot emitted)", fmtTime(s.LastSlot))
	line("last run", "%s", describeRun(s.LastRun))
	if s.Missed == nil {
		line("missed", "unknown (the runs could not be read)")
	} else {
		line("missed", "%d slots in the last %s (expected, and not emitted nor passed over by catch-up, or without an outcome %s after their instant)",
			*s.Missed, window(rep), fmtWindow(durationOf(rep.GraceSeconds)))
		for i, m := range s.MissedSlots {
			if i == maxMissedRows {
				line("", "... and %d more (--json lists them all; ticker history %s shows each slot)", len(s.MissedSlots)-i, s.Name)
				break
			}
			line("", "%s", m.Format(time.RFC3339))
		}
	}
	switch {
	case s.Paused && s.PausedUntil == nil:
		line("next slots", "paused (none until it is resumed)")
	case len(s.Upcoming) == 0:
		line("next slots", "none (past its end)")
	case s.Zone == "" || s.Zone == time.UTC.String():
		for i, u := range s.Upcoming {
			line(map[bool]string{true: "next slots"}[i == 0], "%s", u.Slot.Format(time.RFC3339))
		}
	default:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "%-11s UTC\t%s\n", "next slots", s.Zone)
		for _, u := range s.Upcoming {
			fmt.Fprintf(tw, "%-11s %s\t%s\n", "", u.Slot.Format(time.RFC3339), u.Local)
		}
		_ = tw.Flush()
	}
	for _, n := range s.Notes {
		line("note", "%s", n)
	}
	for _, pl := range rep.Pools {
		if pl.Name == s.Pool {
			line("work lag", "%d ticks waiting in pool %s (%d workers), the oldest %s late", pl.LagSum, pl.Name, pl.Workers,
				fmtDuration(durationOf(pl.LateSeconds)))
		}
	}
	for _, b := range rep.Broken {
		what := b.Error
		if what == "" {
			what = "a repair that came after a newer definition"
		}
		line("broken", "record at offset %d: %s (the replicas keep the last valid definition; the leader repairs it)", b.Offset, what)
	}
	printErrors(w, rep)
}

// describeRun is a Run in a line.
func describeRun(r *Run) string {
	if r == nil {
		return "none retained"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, slot %s", r.Status, r.Slot.Format(time.RFC3339))
	if r.Shard > 0 {
		fmt.Fprintf(&b, " shard %d", r.Shard)
	}
	switch r.StartDelayFrom {
	case DelayStarted:
		fmt.Fprintf(&b, ", started %s after its instant", fmtDuration(durationOf(*r.StartDelaySeconds)))
	case DelayWaiting:
		if r.WaitingSince != nil {
			fmt.Fprintf(&b, ", not started yet, nor any slot since %s (waiting %s)", r.WaitingSince.Format(time.RFC3339),
				fmtDuration(durationOf(*r.StartDelaySeconds)))
		} else {
			fmt.Fprintf(&b, ", not started yet (waiting %s)", fmtDuration(durationOf(*r.StartDelaySeconds)))
		}
	case DelayOutcomeOnly:
		b.WriteString(", start unknown (the ledger holds the outcome only)")
	}
	if r.Attempts > 0 {
		fmt.Fprintf(&b, ", %d attempt%s", r.Attempts, map[bool]string{true: "s"}[r.Attempts > 1])
	}
	if r.Worker != "" {
		fmt.Fprintf(&b, ", worker %s", r.Worker)
	}
	if r.DurationMS > 0 {
		fmt.Fprintf(&b, ", took %s", fmtDuration(time.Duration(r.DurationMS*float64(time.Millisecond))))
	}
	return b.String()
}

func printErrors(w io.Writer, rep *Report) {
	printBackfills(w, rep)
	printRunsSince(w, rep)
	for _, e := range rep.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
}
