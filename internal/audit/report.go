package audit

import (
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Report is the result of Compare, and the --json output of `ticker audit` and `ticker history`: a stable
// contract (fields are only ever added).
type Report struct {
	// From is the start of the audited slot range; nil when unbounded (everything retained).
	From *time.Time `json:"from"`
	// To is the end of the range (inclusive), At the instant the comparison was made.
	To time.Time `json:"to"`
	At time.Time `json:"at"`
	// GraceSeconds: a tick is missing only once its due time is this far in the past.
	GraceSeconds float64          `json:"grace_seconds"`
	Schedules    []ScheduleReport `json:"schedules"`
	// Triggers are the manual triggers (IDs with "~trigger-") in the range; they are never expected.
	Triggers []TickReport `json:"triggers"`
	// Backfills are the backfills' ticks (IDs with "~backfill-") whose slots are in the range: past slots run
	// again on request, never one of the schedules' expected ticks.
	Backfills []TickReport `json:"backfills"`
	// Totals sums the schedules; TriggerTotals the triggers; BackfillTotals the backfills' ticks.
	Totals         Counts `json:"totals"`
	TriggerTotals  Counts `json:"trigger_totals"`
	BackfillTotals Counts `json:"backfill_totals"`
	// Notes say what the retained log could not tell (compacted versions, deleted records).
	Notes []string `json:"notes"`
	// Strict is set when the comparison was made with Options.Strict: then any re-run makes OK false.
	Strict bool `json:"strict"`
	// OK is false when a tick is missing or any tick (triggers included) was doubled or ran twice (run again
	// unmarked): exit status 1. With Strict, also when any tick re-ran (marked re-runs and retries included).
	OK bool `json:"ok"`
}

// Counts are the tallies of one schedule (or all). Every count is in ticks: slot x shard.
type Counts struct {
	// Expected: ticks the definition requires in the range, plus optional ones (near a change) that were emitted.
	Expected int `json:"expected"`
	// Emitted: ticks with at least one committed work record.
	Emitted int `json:"emitted"`
	// Executed: ticks with at least one outcome.
	Executed int `json:"executed"`
	// Missing = MissingNotEmitted + MissingNoOutcome.
	Missing           int `json:"missing"`
	MissingNotEmitted int `json:"missing_not_emitted"`
	MissingNoOutcome  int `json:"missing_no_outcome"`
	// Doubled: ticks with more than one work record.
	Doubled int `json:"doubled"`
	// RanTwice: ticks run again unmarked: a later run neither marked interrupted (its handler not told) nor a
	// retry after a failed attempt, after a run that may have had its effects (two ok outcomes where the later
	// run is not marked, a start after an ok outcome, a start after a run cut off). A subset of ReRun.
	RanTwice int `json:"ran_twice"`
	// ReRun: more than one started attempt, run or outcome, or an outcome of more than one attempt: every tick
	// that ran more than once (ran twice, marked re-runs and retries).
	ReRun int `json:"re_run"`
	// MarkedReRun: ticks run again after an interruption their handler was told of: a later run marked
	// interrupted, none unmarked (two ok outcomes included, when the later run was marked). A subset of ReRun.
	MarkedReRun int `json:"marked_re_run"`
	// Retried: the other re-runs (ReRun - RanTwice - MarkedReRun): retries after failed attempts.
	Retried int `json:"retried"`
	// Interrupted: an attempt released, cut off or marked interrupted, or started with no outcome after the grace.
	Interrupted int `json:"interrupted"`
	// PassedOver: expected ticks the catch-up policy legitimately passed over after an outage (not missing).
	PassedOver int `json:"passed_over"`
	// Pending: expected ticks not emitted or not finished yet, within the grace.
	Pending int `json:"pending"`
	// Unexpected: emitted ticks the definitions do not produce.
	Unexpected int `json:"unexpected"`
	// Excluded: ticks of slots that the schedule's calendars exclude (on_excluded skip): not expected, never
	// missing (a tick of one that was emitted anyway is unexpected).
	Excluded int `json:"excluded"`
	// BreachedStartBy and BreachedFinishBy: ticks whose run breached the schedule's start_by or finish_by (a
	// breach record on the results topic; not a problem of the audit: the run still counts as it ran).
	BreachedStartBy  int `json:"breached_start_by,omitempty"`
	BreachedFinishBy int `json:"breached_finish_by,omitempty"`
	// Outcomes counts ticks by their (first) outcome status.
	Outcomes map[string]int `json:"outcomes"`
}

func (c *Counts) add(o Counts) {
	c.Expected += o.Expected
	c.Emitted += o.Emitted
	c.Executed += o.Executed
	c.Missing += o.Missing
	c.MissingNotEmitted += o.MissingNotEmitted
	c.MissingNoOutcome += o.MissingNoOutcome
	c.Doubled += o.Doubled
	c.RanTwice += o.RanTwice
	c.ReRun += o.ReRun
	c.MarkedReRun += o.MarkedReRun
	c.Retried += o.Retried
	c.Interrupted += o.Interrupted
	c.PassedOver += o.PassedOver
	c.Pending += o.Pending
	c.Unexpected += o.Unexpected
	c.Excluded += o.Excluded
	c.BreachedStartBy += o.BreachedStartBy
	c.BreachedFinishBy += o.BreachedFinishBy
	for k, v := range o.Outcomes {
		c.Outcomes[k] += v
	}
}

// ScheduleReport is one schedule's part of a Report.
type ScheduleReport struct {
	Name string `json:"name"`
	// Versions are the retained versions the expected slots were derived from.
	Versions []VersionReport `json:"versions"`
	// HistoryPartial is set when older versions are gone from the schedules topic (compaction).
	HistoryPartial bool `json:"history_partial"`
	// AuditedFrom: slots before it are counted (emitted, executed, ...) but not compared with the definition,
	// because the definition or the records of that time are no longer retained. Nil: no bound.
	AuditedFrom *time.Time `json:"audited_from"`
	Counts
	// Ticks lists the ticks with a problem or passed over (every tick in the range for history).
	Ticks []TickReport `json:"ticks"`
	Notes []string     `json:"notes"`
}

// VersionReport is one retained version of a schedule.
type VersionReport struct {
	Version int64          `json:"version"`
	At      time.Time      `json:"at"`
	Deleted bool           `json:"deleted"`
	Spec    *schedule.Spec `json:"spec,omitempty"`
}

// Tick states.
const (
	StateMissing    = "missing"     // expected, never emitted, past the grace
	StatePassedOver = "passed_over" // expected, passed over by the catch-up policy after an outage
	StatePending    = "pending"     // not emitted or not finished yet, within the grace
	StateRunning    = "running"     // started, no outcome yet, within the grace
	StateNoOutcome  = "no_outcome"  // emitted (or started), no outcome past the grace
	// Otherwise the state is the first outcome's status (ledger.StatusOK, ...).
)

// Problems of a tick.
const (
	ProblemMissing = "missing"
	ProblemDoubled = "doubled"
	// ProblemRanTwice: run again unmarked (Counts.RanTwice); the tick also has ProblemReRun.
	ProblemRanTwice = "ran_twice"
	// ProblemReRun: ran more than once in any way (Counts.ReRun).
	ProblemReRun = "re_run"
	// ProblemMarkedReRun: run again after an interruption its handler was told of (Counts.MarkedReRun); the tick
	// also has ProblemReRun.
	ProblemMarkedReRun = "marked_re_run"
	ProblemInterrupted = "interrupted"
	ProblemUnexpected  = "unexpected"
	// ProblemCancelledUnpaused: the tick's outcome is cancelled, but no retained version of its schedule paused
	// or deleted it after the tick was emitted.
	ProblemCancelledUnpaused = "cancelled_unpaused"
)

// TickReport is what happened to one tick.
type TickReport struct {
	ID       string `json:"id"`
	Schedule string `json:"schedule"`
	// Pool is the pool whose work topic holds the tick (empty for a tick never emitted).
	Pool  string    `json:"pool,omitempty"`
	Slot  time.Time `json:"slot"`
	Shard int       `json:"shard"`
	// Due is when the leader should have emitted it (slot + jitter); the slot itself for unexpected ticks.
	Due time.Time `json:"due"`
	// Expected: the definition requires it (false for optional, unexpected, unaudited and trigger ticks).
	Expected bool     `json:"expected"`
	State    string   `json:"state"`
	Problems []string `json:"problems"`
	// Breaches are the deadlines its runs breached (start_by, finish_by), each once.
	Breaches   []string    `json:"breaches,omitempty"`
	Emissions  []Emission  `json:"emissions"`
	Executions []Execution `json:"executions"`
}

// Execution is one attempt of a tick as the ledger tells it. Started entries may have been compacted away once
// an outcome exists; then the outcome alone is the execution.
type Execution struct {
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
	// Status is the outcome's status, or: running or no_outcome (started, nothing after it), released (cut off,
	// its process gone), interrupted (another worker started it again), retried (the same worker started it again).
	Status      string     `json:"status"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	DurationMS  float64    `json:"duration_ms"`
	Interrupted bool       `json:"interrupted,omitempty"`
	Error       string     `json:"error,omitempty"`
	// Output is the tail of the attempt's output, when its worker records it (worker run --record-output).
	Output string `json:"output,omitempty"`
}

// Execution statuses besides the outcome statuses.
const (
	ExecRunning     = "running"
	ExecNoOutcome   = "no_outcome"
	ExecReleased    = "released"
	ExecInterrupted = "interrupted"
	ExecRetried     = "retried"
)

// History is one schedule's ticks in a range, every one of them: the output of `ticker history --json` (a stable
// contract, like Report).
type History struct {
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	ScheduleReport
	// Triggers are the schedule's manual triggers in the range; Backfills its backfills' ticks whose slots are in
	// it.
	Triggers  []TickReport `json:"triggers"`
	Backfills []TickReport `json:"backfills"`
}

// HistoryOf returns schedule name's part of rep (made with Options.AllTicks) and whether the log knows name.
func HistoryOf(rep *Report, name string, since time.Time) (History, bool) {
	h := History{Since: since.UTC(), At: rep.At}
	found := false
	for _, s := range rep.Schedules {
		if s.Name == name {
			h.ScheduleReport, found = s, true
		}
	}
	for _, t := range rep.Triggers {
		if t.Schedule == name {
			h.Triggers = append(h.Triggers, t)
			found = true
		}
	}
	for _, t := range rep.Backfills {
		if t.Schedule == name {
			h.Backfills = append(h.Backfills, t)
			found = true
		}
	}
	if !found {
		h.Name = name
	}
	h.Versions, h.Ticks, h.Notes = orEmpty(h.Versions), orEmpty(h.Ticks), orEmpty(h.Notes)
	h.Triggers, h.Backfills = orEmpty(h.Triggers), orEmpty(h.Backfills)
	return h, found
}
