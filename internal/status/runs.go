package status

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Run is a schedule's last run: its newest slot due by the report's instant that was emitted or run, as the work
// topic and the execution ledger (<ns>.results) tell it. Of a slot's shards, the one that started latest.
type Run struct {
	Slot   time.Time `json:"slot"`
	TickID string    `json:"tick_id"`
	Shard  int       `json:"shard"`
	// Status is the first outcome's status (ok, failed, dead_lettered, skipped_late, skipped_overlap,
	// interrupted, cancelled), or, without an outcome: running (started), pending (emitted, not started yet) or
	// no_outcome (no outcome the grace after its instant).
	Status string `json:"status"`
	// Attempts is the number of attempts the ledger shows (the outcome's count, or the highest attempt started).
	Attempts int    `json:"attempts"`
	Worker   string `json:"worker,omitempty"`
	// Breaches are the deadlines (start_by, finish_by) the run breached, each once (a breach record on the
	// results topic).
	Breaches []string `json:"breaches,omitempty"`
	// StartedAt is the first attempt's start, from its started entry.
	StartedAt *time.Time `json:"started_at,omitempty"`
	// StartDelaySeconds is how late the tick started: the first attempt's start as its started entry records it
	// minus the tick's instant (the slot plus the schedule's jitter, as tickgroup_worker_start_delay_seconds
	// measures it), 0 for a start recorded ahead of the instant (the handler then waits for it); for a tick not
	// started yet, how long it has waited so far. Nil when the ledger holds the outcome only (the started entry
	// was compacted away). StartDelayFrom says which.
	StartDelaySeconds *float64 `json:"start_delay_seconds"`
	// StartDelayFrom is "started" (the first attempt's started entry), "waiting" (not started yet: the report's
	// instant minus the tick's, or WaitingSince's) or "outcome_only" (no started entry left: the delay is unknown).
	StartDelayFrom string `json:"start_delay_from"`
	// WaitingSince is set for a run that has not started when earlier due ticks of the schedule have not started
	// either: the slot of the oldest of them since the newest one that did. StartDelaySeconds is its wait.
	WaitingSince *time.Time `json:"waiting_since,omitempty"`
	FinishedAt   *time.Time `json:"finished_at,omitempty"`
	DurationMS   float64    `json:"duration_ms,omitempty"`
}

// Where a Run's start delay comes from.
const (
	DelayStarted     = "started"
	DelayWaiting     = "waiting"
	DelayOutcomeOnly = "outcome_only"
)

// readLead is how far before the window the ticks of its slots may have been written (the longest lead).
const readLead = 6 * time.Minute

// readRuns reads the namespace's topics as the audit does (audit.Read): with o.FleetOnly no definition, with
// o.Schedule that schedule's only (audit.ReadRecentOf). When the work and results topics of its pools retain
// more than o.MaxRecords records (negative: no bound), it reads them only from since (audit.ReadSince), and
// returns since: the cost is then that of the window.
func readRuns(ctx context.Context, opts []kgo.Opt, names kafka.Names, adm *kadm.Client, o Options, since time.Time) (*audit.Log, time.Time, error) {
	limit := o.MaxRecords
	from, perPartition := time.Time{}, int64(0)
	if limit >= 0 {
		n, partitions, err := retained(ctx, adm, names)
		if err != nil {
			return nil, time.Time{}, err
		}
		if n > limit {
			// Only the window, and at most limit records of it in all: the newest of each partition.
			from, perPartition = since, max(limit/int64(max(partitions, 1)), 1)
		}
	}
	var l *audit.Log
	var err error
	switch {
	case o.FleetOnly:
		l, err = audit.ReadRecentOf(ctx, opts, names, from, perPartition, nil) // every tick, no definition
	case o.Schedule != "":
		l, err = audit.ReadRecentOf(ctx, opts, names, from, perPartition, func(s string) bool { return s == o.Schedule })
	default:
		l, err = audit.ReadRecent(ctx, opts, names, from, perPartition)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w (ticker status reads <ns>.work and <ns>.results as ticker audit does)", err)
	}
	return l, from, nil
}

// retained returns the records the work and results topics of names' pools retain (each partition's end minus
// its start offset, aborted records and markers included), and their partitions.
func retained(ctx context.Context, adm *kadm.Client, names kafka.Names) (int64, int, error) {
	topics := []string{names.Work, names.Results}
	if tds, err := adm.ListTopics(ctx); err == nil { // a principal that may not list them: the default pool's
		for t := range tds {
			if pool, ok := names.PoolOfWork(t); ok && pool != "" {
				topics = append(topics, t, names.Pool(pool).Results)
			}
		}
	}
	what := strings.Join(topics, ", ") // whose Read a refused request needs
	starts, err := listed(what)(adm.ListStartOffsets(ctx, topics...))
	if err != nil {
		return 0, 0, fmt.Errorf("listing start offsets: %w", err)
	}
	ends, err := listed(what)(adm.ListEndOffsets(ctx, topics...))
	if err != nil {
		return 0, 0, fmt.Errorf("listing end offsets: %w", err)
	}
	var n int64
	partitions := 0
	ends.Each(func(e kadm.ListedOffset) {
		partitions++
		if s, ok := starts.Lookup(e.Topic, e.Partition); ok {
			n += max(e.Offset-s.Offset, 0)
		}
	})
	return n, partitions, nil
}

// listed returns a function that returns the offsets, or the first error of the request (naming the ACL on
// topics that it needs) or of a partition (naming its topic's).
func listed(topics string) func(kadm.ListedOffsets, error) (kadm.ListedOffsets, error) {
	return func(lo kadm.ListedOffsets, err error) (kadm.ListedOffsets, error) {
		if err != nil {
			return nil, kafka.NeedACL(err, "Read", "topic", topics)
		}
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err != nil && err == nil {
				err = fmt.Errorf("%s[%d]: %w", o.Topic, o.Partition, kafka.NeedACL(o.Err, "Read", "topic", o.Topic))
			}
		})
		return lo, err
	}
}

// runFacts fills the schedules of rep with their last run (lastRuns) and the slots they missed in the window:
// audit.Compare over [now - window, now] on what audit.Read gathered, a slot counting as missed when any of its
// ticks is missing (expected and neither emitted nor passed over by catch-up, or emitted without an outcome, the
// grace after its instant).
func runFacts(l *audit.Log, entries map[string]store.Entry, rep *Report, o Options) {
	cmpRep := audit.Compare(l, audit.Options{From: o.Now.Add(-o.Window), To: o.Now, Now: o.Now, Grace: o.Grace, Schedule: o.Schedule})
	bySched := make(map[string]*audit.ScheduleReport, len(cmpRep.Schedules))
	for i := range cmpRep.Schedules {
		bySched[cmpRep.Schedules[i].Name] = &cmpRep.Schedules[i]
	}
	last := lastRuns(l, entries, o)
	for i := range rep.Schedules {
		s := &rep.Schedules[i]
		s.LastRun = last[s.Name]
		missed := 0
		if sr := bySched[s.Name]; sr != nil {
			s.MissedSlots = missedSlots(sr)
			missed = len(s.MissedSlots)
			s.Notes = append(s.Notes, sr.Notes...)
		}
		s.Missed = &missed
	}
	// cmpRep.Notes (undecodable records, forged cancels) are the audit's to report: the broken schedule records
	// are in rep.Broken already.
}

// missedSlots returns the slots of sr with a missing tick, in order (a slot of several shards once).
func missedSlots(sr *audit.ScheduleReport) []time.Time {
	var out []time.Time
	for _, t := range sr.Ticks {
		if slices.Contains(t.Problems, audit.ProblemMissing) && (len(out) == 0 || !out[len(out)-1].Equal(t.Slot)) {
			out = append(out, t.Slot.UTC())
		}
	}
	return out
}

// lastRuns returns the last run of each schedule of entries (o.Schedule's only, when set) that the log holds.
// A tick counts once its instant (by the current definition's jitter) is past; manual triggers do not count. A
// last run that has not started waits since the oldest due tick not started after the newest one that did: its
// delay is that tick's wait (a stuck pool shows how long it has been stuck, not the newest tick's wait alone).
func lastRuns(l *audit.Log, entries map[string]store.Entry, o Options) map[string]*Run {
	out := map[string]*Run{}
	ranTo := map[string]time.Time{} // the newest due slot that started or has an outcome
	due := func(t *audit.Tick) (time.Time, bool) {
		if t.Trigger || t.Backfill || t.Slot.IsZero() || (len(t.Emissions) == 0 && len(t.Ledger) == 0) ||
			(o.Schedule != "" && t.Schedule != o.Schedule) {
			return time.Time{}, false
		}
		e, ok := entries[t.Schedule]
		if !ok {
			return time.Time{}, false
		}
		d := t.Due(e.Schedule)    // its NotBefore: under a calendar's move, not its slot's due instant
		return d, !d.After(o.Now) // one emitted ahead (ticker run --lead) is held by the workers until its instant
	}
	for _, t := range l.Ticks {
		d, ok := due(t)
		if !ok {
			continue
		}
		if ran(t) && t.Slot.After(ranTo[t.Schedule]) {
			ranTo[t.Schedule] = t.Slot
		}
		cur := out[t.Schedule]
		if cur != nil && t.Slot.Before(cur.Slot) {
			continue
		}
		r := runOf(t, d, o.Now, o.Grace)
		if cur == nil || r.Slot.After(cur.Slot) || later(r, cur) {
			out[t.Schedule] = r
		}
	}
	waiting := map[string]time.Time{} // the oldest due instant not started after ranTo, of the schedules waiting
	for name, r := range out {
		if r.StartDelayFrom == DelayWaiting {
			waiting[name] = time.Time{}
		}
	}
	if len(waiting) == 0 {
		return out
	}
	for _, t := range l.Ticks {
		if w, ok := waiting[t.Schedule]; !ok || ran(t) || !t.Slot.After(ranTo[t.Schedule]) || (!w.IsZero() && !t.Slot.Before(w)) {
			continue
		}
		if _, ok := due(t); ok {
			waiting[t.Schedule] = t.Slot
		}
	}
	for name, slot := range waiting {
		if r := out[name]; !slot.IsZero() && slot.Before(r.Slot) {
			since := slot.UTC()
			r.WaitingSince = &since
			r.StartDelaySeconds = seconds(o.Now.Sub(entries[name].Schedule.Due(slot)))
		}
	}
	return out
}

// ran reports whether t started or has an outcome.
func ran(t *audit.Tick) bool {
	for _, e := range t.Ledger {
		switch e.Kind {
		case ledger.KindStarted, ledger.KindReleased, ledger.KindOutcome:
			return true
		}
	}
	return false
}

// runOf reads tick t (due at due) as the ledger tells it at now.
func runOf(t *audit.Tick, due, now time.Time, grace time.Duration) *Run {
	r := &Run{Slot: t.Slot.UTC(), TickID: t.ID, Shard: t.Shard, Breaches: slices.Clone(t.Breaches)}
	var first *time.Time
	var outcome *ledger.Entry
	for i, e := range t.Ledger {
		switch e.Kind {
		case ledger.KindStarted:
			at := e.At
			if e.StartedAt != nil {
				at = *e.StartedAt
			}
			if first == nil || at.Before(*first) {
				at := at.UTC()
				first = &at
			}
			r.Attempts = max(r.Attempts, e.Attempt)
			if outcome == nil {
				r.Worker = e.Worker
			}
		case ledger.KindReleased:
			r.Attempts = max(r.Attempts, e.Attempt)
		case ledger.KindOutcome:
			if outcome == nil { // the first outcome is the tick's, as the audit counts it
				outcome = &t.Ledger[i]
				r.Worker = e.Worker
			}
			r.Attempts = max(r.Attempts, e.Attempts)
		}
	}
	settled := !now.Before(due.Add(grace))
	switch {
	case outcome != nil:
		r.Status, r.DurationMS = outcome.Status, outcome.DurationMS
		if outcome.FinishedAt != nil {
			f := outcome.FinishedAt.UTC()
			r.FinishedAt = &f
		}
	case first != nil && !settled:
		r.Status = audit.StateRunning
	case first == nil && !settled:
		r.Status = audit.StatePending
	default:
		r.Status = audit.StateNoOutcome
	}
	switch {
	case first != nil:
		r.StartedAt = first
		// A worker records a held tick's start a little ahead of its instant (worker.Config.PreStart) and starts
		// the handler on the instant: a start recorded early is a start on time.
		r.StartDelaySeconds, r.StartDelayFrom = seconds(max(first.Sub(due), 0)), DelayStarted
	case outcome != nil:
		r.StartDelayFrom = DelayOutcomeOnly
	default:
		r.StartDelaySeconds, r.StartDelayFrom = seconds(now.Sub(due)), DelayWaiting
	}
	return r
}

// later reports whether r, of the same slot as cur, is the one to show: the shard that started latest (one
// still waiting counts as starting now), or that failed.
func later(r, cur *Run) bool {
	if !r.Slot.Equal(cur.Slot) {
		return false
	}
	rd, cd := delayOr(r), delayOr(cur)
	if rd != cd {
		return rd > cd
	}
	if rok, cok := r.Status == ledger.StatusOK, cur.Status == ledger.StatusOK; rok != cok {
		return cok
	}
	return r.Shard < cur.Shard // the same either way: the lowest shard, so that the report is stable
}

func delayOr(r *Run) float64 {
	if r.StartDelaySeconds == nil {
		return -1e18
	}
	return *r.StartDelaySeconds
}

func seconds(d time.Duration) *float64 {
	s := d.Seconds()
	return &s
}

// Late reports whether s started its last run later than d after its instant (or has waited longer than d to
// start) or missed a slot in the window.
func (s Schedule) Late(d time.Duration) bool {
	if s.Missed != nil && *s.Missed > 0 {
		return true
	}
	return s.LastRun != nil && s.LastRun.StartDelaySeconds != nil && *s.LastRun.StartDelaySeconds > d.Seconds()
}

// fmtDelay is a Run's start delay for a person.
func fmtDelay(r *Run) string {
	switch {
	case r == nil:
		return "-"
	case r.StartDelaySeconds == nil:
		return "outcome only"
	}
	d := fmtDuration(time.Duration(*r.StartDelaySeconds * float64(time.Second)))
	if r.StartDelayFrom == DelayWaiting {
		return "waiting " + d
	}
	return d
}

// fmtDuration rounds d for a column: milliseconds below 10 s, tenths of a second below a minute, seconds above.
func fmtDuration(d time.Duration) string {
	switch a := max(d, -d); {
	case a < 10*time.Second:
		return d.Round(time.Millisecond).String()
	case a < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// fmtWindow is a window for a column header: 1h, 30m, 1h30m, 45s.
func fmtWindow(d time.Duration) string {
	s := d.String()
	s, _ = strings.CutSuffix(s, "m0s")
	if len(s) < len(d.String()) {
		s += "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// attemptsText is a Run's attempts for a column.
func attemptsText(r *Run) string {
	if r == nil || r.Attempts == 0 {
		return "-"
	}
	return fmt.Sprint(r.Attempts)
}
