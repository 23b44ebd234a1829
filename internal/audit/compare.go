package audit

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Options select what Compare compares.
type Options struct {
	// From and To bound the slots compared (inclusive). A zero From means everything retained; a zero To, Now.
	From, To time.Time
	// Now is the instant of the comparison. Defaults to time.Now().
	Now time.Time
	// Grace is how long after its due time a tick may still be unemitted or unfinished without being missing.
	// Defaults to 5m.
	Grace time.Duration
	// ChangeSlack is how close to a schedule change a slot's due time must be for the slot to be optional (the
	// leader learns of a change a little after it). Defaults to 3s.
	ChangeSlack time.Duration
	// Lead is the tickers' --lead: a change finds the slots of the next Lead emitted already, under the version
	// before it. Defaults to DefaultLead; a negative value means 0.
	Lead time.Duration
	// Schedule, when set, limits the comparison to that schedule.
	Schedule string
	// AllTicks reports every tick in the range, not only those with a problem (ticker history).
	AllTicks bool
	// MaxTicks bounds the expected ticks derived per schedule, so a 1s schedule over a year cannot exhaust
	// memory. Defaults to 5,000,000.
	MaxTicks int
	// Strict makes any re-run a failure (Report.OK false): marked re-runs and retries after failures too, not
	// only the ticks that ran twice unmarked.
	Strict bool
}

const (
	defaultGrace       = 5 * time.Minute
	defaultChangeSlack = 3 * time.Second
	// DefaultLead is `ticker run --lead`'s default.
	DefaultLead     = 10 * time.Second
	defaultMaxTicks = 5_000_000
)

// expectation is one tick a definition produces.
type expectation struct {
	slot     time.Time
	at       time.Time // when it runs: slot, or where the calendars' move policy moved it (calendars.go)
	due      time.Time // when it is due, when not the schedule's due instant of at (a chain's: chains.go)
	shard    int
	sched    *schedule.Schedule // with its calendars, as in force when the slot fell due
	optional bool
	excluded bool // the calendars exclude it: not expected (calendars.go)
}

// Compare derives the expected ticks of every schedule in l from its retained definitions and compares them
// with the ticks emitted and executed. It is pure: l is not changed.
func Compare(l *Log, o Options) *Report {
	o.Now = cmp.Or(o.Now, time.Now())
	o.To = cmp.Or(o.To, o.Now)
	if o.To.After(o.Now) {
		o.To = o.Now // slots in the future are not expected yet
	}
	o.Grace = cmp.Or(o.Grace, defaultGrace)
	o.ChangeSlack = cmp.Or(o.ChangeSlack, defaultChangeSlack)
	o.Lead = max(cmp.Or(o.Lead, DefaultLead), 0)
	o.MaxTicks = cmp.Or(o.MaxTicks, defaultMaxTicks)
	rep := &Report{To: o.To.UTC(), At: o.Now.UTC(), GraceSeconds: o.Grace.Seconds(), Totals: Counts{Outcomes: map[string]int{}}}
	if !o.From.IsZero() {
		f := o.From.UTC()
		rep.From = &f
	}
	idx := newEmissionIndex(l)
	triggers := ScheduleReport{Counts: Counts{Outcomes: map[string]int{}}}
	backfills := ScheduleReport{Counts: Counts{Outcomes: map[string]int{}}}

	byName := map[string][]*Tick{}
	unnamed := 0
	for _, t := range l.Ticks {
		if t.Slot.IsZero() {
			unnamed++ // a results entry whose key is no tick ID (a worker keys keyless records by coordinates)
			continue
		}
		if o.Schedule != "" && t.Schedule != o.Schedule {
			continue
		}
		if t.Slot.Before(o.From) || t.Slot.After(o.To) {
			continue
		}
		if t.Backfill {
			// A backfill's tick: never one of the schedule's slots; counted apart, as the triggers are.
			tr := classify(t, false, !o.Now.Before(t.Slot.Add(o.Grace)))
			tr.Due = t.Slot
			backfills.count(&tr, false)
			rep.Backfills = append(rep.Backfills, tr)
			continue
		}
		if t.Trigger {
			tr := classify(t, false, !o.Now.Before(t.Slot.Add(o.Grace)))
			tr.Due = t.Slot
			triggers.count(&tr, false) // a trigger is never expected: no outcome is not "missing"
			rep.Triggers = append(rep.Triggers, tr)
			continue
		}
		byName[t.Schedule] = append(byName[t.Schedule], t)
	}
	names := map[string]bool{}
	for name := range byName {
		names[name] = true
	}
	for name := range l.Definitions {
		if o.Schedule == "" || name == o.Schedule {
			names[name] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, name := range sorted {
		sr := compareSchedule(l, idx, name, byName[name], o)
		rep.Totals.add(sr.Counts)
		rep.Schedules = append(rep.Schedules, sr)
	}
	sort.Slice(rep.Triggers, func(i, j int) bool { return lessTick(rep.Triggers[i], rep.Triggers[j]) })
	sort.Slice(rep.Backfills, func(i, j int) bool { return lessTick(rep.Backfills[i], rep.Backfills[j]) })
	if o.Schedule != "" {
		unnamed = 0
	}
	rep.Notes = logNotes(unnamed, l.ForgedCancels, l.Undecodable)
	rep.TriggerTotals = triggers.Counts
	rep.BackfillTotals = backfills.Counts
	normalize(rep)
	rep.Strict = o.Strict
	rep.OK = rep.Totals.Missing == 0 && rep.Totals.Doubled == 0 && rep.Totals.RanTwice == 0 &&
		triggers.Doubled == 0 && triggers.RanTwice == 0 && backfills.Doubled == 0 && backfills.RanTwice == 0
	if o.Strict {
		rep.OK = rep.OK && rep.Totals.ReRun == 0 && triggers.ReRun == 0 && backfills.ReRun == 0
	}
	return rep
}

// logNotes are a report's notes on what the records read held: results keys that name no tick, forged cancels
// and undecodable records.
func logNotes(unnamed, forged, undecodable int) []string {
	var notes []string
	if unnamed > 0 {
		notes = append(notes, fmt.Sprintf("%d results keys are not tick IDs and were skipped", unnamed))
	}
	if forged > 0 {
		notes = append(notes, fmt.Sprintf("%d cancel records on the work topic were not written in a transaction "+
			"(not the leader's): workers refuse and dead-letter them; who wrote them?", forged))
	}
	if undecodable > 0 {
		notes = append(notes, fmt.Sprintf("%d records could not be decoded and were skipped", undecodable))
	}
	return notes
}

func lessTick(a, b TickReport) bool { return CompareTicks(a, b) < 0 }

// CompareTicks orders ticks as a Report lists them: by slot, shard, then ID.
func CompareTicks(a, b TickReport) int {
	if c := a.Slot.Compare(b.Slot); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Shard, b.Shard); c != 0 {
		return c
	}
	return strings.Compare(a.ID, b.ID)
}

// compareSchedule compares one schedule; ticks are its scheduled (not triggered) ticks in the range.
func compareSchedule(l *Log, idx *emissionIndex, name string, ticks []*Tick, o Options) ScheduleReport {
	sr := ScheduleReport{Name: name, Counts: Counts{Outcomes: map[string]int{}}}
	def := l.Definitions[name]
	audited := o.From // slots before it are not compared with a definition
	defined := def != nil && len(def.Versions) > 0
	if defined {
		for _, v := range def.Versions {
			vr := VersionReport{Version: v.Offset, At: v.At, Deleted: v.Schedule == nil}
			if v.Schedule != nil {
				s := v.Schedule.Spec()
				vr.Spec = &s
			}
			sr.Versions = append(sr.Versions, vr)
		}
		if def.Partial {
			sr.HistoryPartial = true
			first := def.Versions[0].At
			sr.Notes = append(sr.Notes, fmt.Sprintf("the schedules topic no longer holds every record before version %d "+
				"(compaction), so older versions may be gone: slots before %s are not derived", def.Versions[0].Offset, first.Format(time.RFC3339)))
			audited = later(audited, first)
		}
	} else {
		sr.Notes = append(sr.Notes, "no definition is retained (deleted and compacted away, or never written): nothing is expected")
	}
	// Records deleted by retention: slots before the first retained record of the schedule's partitions.
	dataFrom := dataCoverage(l, name, def)
	if !dataFrom.IsZero() && dataFrom.After(o.From) {
		why := "are deleted (retention)"
		if l.Truncated {
			why = "were not read (the read's bound per partition) or are deleted (retention)"
		}
		sr.Notes = append(sr.Notes, fmt.Sprintf("older work or results records %s; slots before %s are not audited",
			why, dataFrom.Format(time.RFC3339)))
	}
	resultsAudited := later(o.From, dataFrom)
	audited = later(audited, dataFrom)
	if !audited.IsZero() {
		a := audited.UTC()
		sr.AuditedFrom = &a
	}

	expected := map[string]expectation{}
	auditedTo := o.To
	if up, when, since := chainVersion(def); up != "" {
		expected = sr.expectChain(l, def, up, when, since, audited, o)
	} else if defined {
		expected, auditedTo = sr.expect(l, def, audited, o)
	}

	seen := map[string]bool{}
	add := func(tr TickReport) {
		if o.AllTicks || len(tr.Problems) > 0 || tr.State == StatePassedOver || len(tr.Breaches) > 0 {
			sr.Ticks = append(sr.Ticks, tr)
		}
	}
	for id, e := range expected {
		t := l.Ticks[id]
		seen[id] = true
		due := e.due
		if due.IsZero() {
			due = e.sched.Due(e.at)
		}
		settled := !o.Now.Before(due.Add(o.Grace))
		if t == nil || (len(t.Emissions) == 0 && len(t.Ledger) == 0) {
			if e.optional {
				continue // may or may not be emitted: only counted when it was
			}
			tr := TickReport{ID: id, Schedule: name, Slot: e.slot, Shard: e.shard, Due: due, Expected: true, State: StatePending}
			sr.Expected++
			switch {
			case !settled:
				sr.Pending++
			case idx.passedOver(name, e, due):
				tr.State = StatePassedOver
				sr.PassedOver++
			default:
				tr.State = StateMissing
				tr.Problems = append(tr.Problems, ProblemMissing)
				sr.Missing++
				sr.MissingNotEmitted++
			}
			add(tr)
			continue
		}
		tr := classify(t, true, settled)
		tr.Due = due
		sr.Expected++
		sr.count(&tr, true)
		if tr.State == ledger.StatusCancelled && !def.stoppedAfter(t) {
			// A cancel takes only ticks of a schedule paused or deleted after they were emitted: this one was
			// cancelled by a record that no such change explains, and the slot was lost.
			tr.Problems = append(tr.Problems, ProblemCancelledUnpaused, ProblemMissing)
			sr.Missing++
		}
		add(tr)
	}
	for _, t := range ticks {
		if seen[t.ID] {
			continue
		}
		tr := classify(t, false, !o.Now.Before(t.Slot.Add(o.Grace)))
		tr.Due = t.Slot
		// Before the audited range, a tick cannot be called unexpected; it still must have an outcome when its
		// results are retained.
		inAudit := defined && !t.Slot.Before(audited) && !t.Slot.After(auditedTo)
		if inAudit {
			tr.Problems = append(tr.Problems, ProblemUnexpected)
			sr.Unexpected++
		}
		sr.count(&tr, inAudit || !t.Slot.Before(resultsAudited))
		add(tr)
	}
	sort.Slice(sr.Ticks, func(i, j int) bool { return lessTick(sr.Ticks[i], sr.Ticks[j]) })
	return sr
}

// expect derives the expected ticks of def from audited on (deriveExpected), counts those its calendars exclude
// and notes what limits the derivation. auditedTo is o.To, or the last slot derived when the derivation was cut:
// later ticks cannot be called unexpected.
func (sr *ScheduleReport) expect(l *Log, def *Definition, audited time.Time, o Options) (expected map[string]expectation, auditedTo time.Time) {
	expected, auditedTo = map[string]expectation{}, o.To
	var last time.Time
	n, truncated := deriveExpected(def, audited, l.Calendars, o, func(id string, e expectation) {
		last = e.at
		if e.excluded {
			sr.Excluded++ // never missing; a tick of it emitted anyway is unexpected (compareSchedule)
			return
		}
		expected[id] = e
	})
	if truncated {
		auditedTo = last
		sr.Notes = append(sr.Notes, fmt.Sprintf("more than %d expected ticks: only the first %d are compared; narrow --from/--to", o.MaxTicks, n))
	}
	if l.CalendarsPartial && def.excludes() {
		sr.Notes = append(sr.Notes, "the calendars topic no longer holds every record (compaction): before a calendar's oldest "+
			"retained record, the calendar is taken as that record defines it, which may not be what the leader used then")
	}
	return expected, auditedTo
}

// count adds an emitted (or executed) tick's report to the counts; outcomeDue says whether a missing outcome is
// a problem (its results would be retained).
func (sr *ScheduleReport) count(tr *TickReport, outcomeDue bool) {
	if len(tr.Emissions) > 0 {
		sr.Emitted++
	}
	for _, b := range tr.Breaches {
		switch b {
		case ledger.DeadlineStartBy:
			sr.BreachedStartBy++
		case ledger.DeadlineFinishBy:
			sr.BreachedFinishBy++
		}
	}
	for _, x := range tr.Executions {
		if isOutcome(x.Status) {
			sr.Executed++
			break
		}
	}
	switch tr.State {
	case StatePending, StateRunning:
		sr.Pending++
	case StateNoOutcome:
		if outcomeDue {
			tr.Problems = append(tr.Problems, ProblemMissing)
			sr.Missing++
			sr.MissingNoOutcome++
		}
	default:
		sr.Outcomes[tr.State]++
	}
	for _, p := range tr.Problems {
		switch p {
		case ProblemDoubled:
			sr.Doubled++
		case ProblemRanTwice:
			sr.RanTwice++
		case ProblemReRun:
			sr.ReRun++
			if !slices.Contains(tr.Problems, ProblemRanTwice) && !slices.Contains(tr.Problems, ProblemMarkedReRun) {
				sr.Retried++
			}
		case ProblemMarkedReRun:
			sr.MarkedReRun++
		case ProblemInterrupted:
			sr.Interrupted++
		}
	}
}

func isOutcome(status string) bool {
	switch status {
	case ExecRunning, ExecNoOutcome, ExecReleased, ExecInterrupted, ExecRetried:
		return false
	}
	return true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// dataCoverage returns the first instant from which the work and results partitions of the schedule's ticks are
// retained (zero: from their beginning).
func dataCoverage(l *Log, name string, def *Definition) time.Time {
	shards := 1
	if def != nil {
		for _, v := range def.Versions {
			if v.Schedule != nil {
				shards = max(shards, v.Schedule.Spec().Shards)
			}
		}
	}
	pools := map[string]bool{"": def == nil}
	if def != nil {
		for _, v := range def.Versions {
			if v.Schedule != nil {
				pools[v.Schedule.Pool()] = true
			}
		}
	}
	var from time.Time
	for pool := range pools {
		c := l.coverage(pool)
		wp, rp := max(c.WorkPartitions, 1), max(c.ResultsPartitions, 1)
		for _, p := range tick.SchedulePartitions(name, shards, limitsOf(def), wp) {
			from = later(from, c.WorkFrom[p])
			from = later(from, c.ResultsFrom[p%int32(rp)])
		}
	}
	return from
}

// deriveExpected calls fn for every tick the definition's versions produce with a slot in [from, o.To] (from
// zero: no bound). It returns how many it produced and whether it stopped at o.MaxTicks.
//
// Version i is in force from its change time to the next version's: its slots are after its change time, up to
// the second of the next change, and those due after the next change (plus slack) are dropped, as the leader
// drops them. Optional, because the leader may or may not emit them:
//   - slots due within ChangeSlack of a change (the leader sees a change a little after it);
//   - slots after a change but not after the previous version's next slot: a leader that was running keeps that
//     slot as its base (planner.set keeps the later base), while a new leader term starts from the change time.
//
// With a lead L, the slots due up to L after a change may have been emitted under the version before it (they
// run, or are cancelled by a pause or a deletion): they are optional under that version, and the next version
// starts after them.
//
// A version that excludes calendars classifies each slot by the calendars in force over its span (calendars.go):
// an excluded slot is passed to fn marked excluded (and counts towards o.MaxTicks: it is derived too), one the
// calendars' changes make uncertain is optional. Under a move policy the runs are derived instead, each named
// by its slot and due at its instant; a run the calendars' changes make uncertain is optional.
func deriveExpected(def *Definition, from time.Time, cals map[string][]CalendarVersion, o Options, fn func(string, expectation)) (int, bool) {
	n := 0
	var carry time.Time // a running leader's base after the previous version: its next slot, minus 1ns
	for i, v := range def.Versions {
		var next *Version
		if i+1 < len(def.Versions) {
			next = &def.Versions[i+1]
		}
		if v.Schedule == nil {
			carry = time.Time{} // a deleted schedule's base is forgotten
			continue
		}
		sched := v.Schedule
		spec := sched.Spec()
		if sched.Paused() {
			continue // the base stays; nothing is emitted (a pause with an end emits from it on: its Next says so)
		}
		base := carry
		if next != nil {
			carry = time.Time{}
			start := later(v.At, next.At.Add(o.Lead-time.Duration(spec.Jitter)-time.Nanosecond))
			s := sched.Next(start)
			for !s.IsZero() && !sched.Due(s).After(next.At.Add(o.Lead)) {
				s = sched.Next(s)
			}
			if !s.IsZero() {
				carry = s.Add(-time.Nanosecond)
			}
		}
		shards := max(spec.Shards, 1)
		ep := epochsOf(sched, cals)
		after := v.At // the leader never catches up slots at or before a change
		if !from.IsZero() && from.Add(-time.Nanosecond).After(after) {
			after = from.Add(-time.Nanosecond)
		}
		runs := sched
		if ep != nil && ep.moves {
			runs = ep.runs(after) // the run instants of the calendars in force (calendars.go)
		}
		for s := runs.Next(after); !s.IsZero() && !s.After(o.To); s = runs.Next(s) {
			due := sched.Due(s)
			optional := due.Sub(v.At) <= o.ChangeSlack || !s.After(base)
			if next != nil {
				if s.Unix() > next.At.Add(o.Lead).Unix() {
					break // the next version's slot
				}
				switch {
				case due.After(next.At.Add(o.Lead + o.ChangeSlack)):
					continue // due after the change was seen: dropped by the leader
				case due.After(next.At.Add(-o.ChangeSlack)):
					optional = true
				}
			}
			x := expectation{slot: s, at: s, sched: sched, optional: optional}
			switch {
			case ep != nil && ep.moves:
				var uncertain bool
				x.slot, uncertain, x.sched = ep.classifyRun(s, due, o)
				x.optional = x.optional || uncertain
			case ep != nil:
				var uncertain bool
				x.excluded, uncertain, x.sched = ep.classify(s, due, o)
				x.optional = x.optional || uncertain
			}
			for shard := range shards {
				if n >= o.MaxTicks {
					return n, true
				}
				x.shard = shard
				fn(tick.ID(def.Name, x.slot, shard, shards), x)
				n++
			}
		}
	}
	return n, false
}

// classify reports what happened to an emitted or executed tick. settled says whether its grace has passed.
func classify(t *Tick, expected, settled bool) TickReport {
	tr := TickReport{ID: t.ID, Schedule: t.Schedule, Pool: cmp.Or(t.Pool, kafka.DefaultPool), Slot: t.Slot, Shard: t.Shard, Expected: expected}
	tr.Emissions = append([]Emission{}, t.Emissions...)
	tr.Breaches = slices.Clone(t.Breaches)
	tr.Executions = executions(t.Ledger, settled)
	var outcomes []ledger.Entry
	started, interrupted := map[int]bool{}, false
	maxAttempts := 0
	for _, e := range t.Ledger {
		interrupted = interrupted || e.Interrupted
		switch e.Kind {
		case ledger.KindStarted:
			started[e.Attempt] = true
		case ledger.KindReleased:
			interrupted = interrupted || !e.Retry && !e.Unstarted
		case ledger.KindOutcome:
			outcomes = append(outcomes, e)
			maxAttempts = max(maxAttempts, e.Attempts)
			if e.Status == ledger.StatusInterrupted {
				interrupted = true
			}
		}
	}
	for _, x := range tr.Executions {
		if x.Status == ExecInterrupted || x.Status == ExecNoOutcome {
			interrupted = true
		}
	}
	switch {
	case len(outcomes) > 0:
		tr.State = outcomes[0].Status
	case len(started) > 0 && settled:
		tr.State = StateNoOutcome
	case len(started) > 0:
		tr.State = StateRunning
	case settled:
		tr.State = StateNoOutcome
	default:
		tr.State = StatePending
	}
	if len(t.Emissions) > 1 {
		tr.Problems = append(tr.Problems, ProblemDoubled)
	}
	runs := runsOf(t.Ledger)
	class := classOf(runs)
	if class == reRunUnmarked {
		tr.Problems = append(tr.Problems, ProblemRanTwice)
	}
	if len(outcomes) > 1 || len(started) > 1 || maxAttempts > 1 || len(runs) > 1 || class != reRunNone {
		tr.Problems = append(tr.Problems, ProblemReRun)
	}
	if class == reRunMarked {
		tr.Problems = append(tr.Problems, ProblemMarkedReRun)
	}
	if interrupted {
		tr.Problems = append(tr.Problems, ProblemInterrupted)
	}
	return tr
}

// executions turns a tick's ledger entries into attempts: a started entry opens one, a release (one marked retry
// too) or the worker's outcome closes it; an outcome whose started entry is gone (compacted) is an attempt of its own.
func executions(entries []ledger.Entry, settled bool) []Execution {
	var xs []Execution
	open := func(match func(Execution) bool) int {
		for i := len(xs) - 1; i >= 0; i-- {
			if xs[i].Status == ledger.KindStarted && match(xs[i]) {
				return i
			}
		}
		return -1
	}
	for _, e := range entries {
		switch e.Kind {
		case ledger.KindStarted:
			// An attempt still open when another starts was cut off (another worker) or retried (the same one).
			if i := open(func(Execution) bool { return true }); i >= 0 {
				if xs[i].Worker == e.Worker {
					xs[i].Status = ExecRetried
				} else {
					xs[i].Status = ExecInterrupted
				}
			}
			at := e.At
			if e.StartedAt != nil {
				at = *e.StartedAt
			}
			xs = append(xs, Execution{Worker: e.Worker, Attempt: e.Attempt, Status: ledger.KindStarted, StartedAt: timePtr(at), Interrupted: e.Interrupted})
		case ledger.KindReleased:
			if e.Unstarted { // its runner took the start back: nothing ran
				if i := open(func(x Execution) bool { return x.Attempt == e.Attempt && x.Worker == e.Worker }); i >= 0 {
					xs = append(xs[:i], xs[i+1:]...)
				}
				continue
			}
			if e.Retry { // the attempt failed; another follows (here or at the partition's next owner)
				if i := open(func(x Execution) bool { return x.Attempt == e.Attempt && x.Worker == e.Worker }); i >= 0 {
					xs[i].Status, xs[i].Error = ExecRetried, e.Error
					xs[i].FinishedAt = timePtr(e.At)
				} else {
					xs = append(xs, Execution{Worker: e.Worker, Attempt: e.Attempt, Status: ExecRetried, Error: e.Error, FinishedAt: timePtr(e.At)})
				}
			} else if i := open(func(x Execution) bool { return x.Attempt == e.Attempt }); i >= 0 {
				xs[i].Status = ExecReleased
			} else {
				xs = append(xs, Execution{Worker: e.Worker, Attempt: e.Attempt, Status: ExecReleased})
			}
		case ledger.KindOutcome:
			i := open(func(x Execution) bool { return x.Worker == e.Worker })
			if i < 0 {
				i = open(func(x Execution) bool { return x.Attempt == e.Attempts })
			}
			if i < 0 {
				xs = append(xs, Execution{Worker: e.Worker, Attempt: e.Attempts, StartedAt: e.StartedAt})
				i = len(xs) - 1
			}
			x := &xs[i]
			x.Status, x.DurationMS, x.Error, x.Output = e.Status, e.DurationMS, e.Error, e.Output
			x.Interrupted = x.Interrupted || e.Interrupted
			x.Attempt = max(x.Attempt, e.Attempts)
			switch {
			case e.FinishedAt != nil:
				x.FinishedAt = timePtr(*e.FinishedAt)
			case !e.At.IsZero():
				x.FinishedAt = timePtr(e.At)
			}
		}
	}
	for i := range xs {
		if xs[i].Status == ledger.KindStarted {
			xs[i].Status = ExecRunning
			if settled {
				xs[i].Status = ExecNoOutcome
			}
		}
	}
	return xs
}

func timePtr(t time.Time) *time.Time {
	t = t.UTC()
	return &t
}

// normalize makes every list of the report a JSON array, never null: scripts can iterate without checks.
func normalize(rep *Report) {
	ticks := func(ts []TickReport) []TickReport {
		if ts == nil {
			ts = []TickReport{}
		}
		for i := range ts {
			ts[i].Problems = orEmpty(ts[i].Problems)
			ts[i].Emissions = orEmpty(ts[i].Emissions)
			ts[i].Executions = orEmpty(ts[i].Executions)
		}
		return ts
	}
	rep.Schedules = orEmpty(rep.Schedules)
	rep.Triggers = ticks(rep.Triggers)
	rep.Backfills = ticks(rep.Backfills)
	rep.Notes = orEmpty(rep.Notes)
	for i := range rep.Schedules {
		s := &rep.Schedules[i]
		s.Versions = orEmpty(s.Versions)
		s.Ticks = ticks(s.Ticks)
		s.Notes = orEmpty(s.Notes)
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
