package tickgroup

import (
	"fmt"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Schedule is a schedule as stored on the schedules topic (JSON) and as written in apply files (YAML, read by
// ParseSchedules); its JSON and YAML field names are those of the record format. Name and one of Every (with
// Offset) or Cron (with TZ) are required; the zero value of every other field is a usable default. Validate
// explains every rule.
type Schedule struct {
	// Name identifies the schedule: 1 to 128 characters of a-z, 0-9, '.', '_' and '-'.
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Every is the interval of an interval schedule, at least 1s and a whole number of seconds. Exactly one of
	// Every and Cron is set.
	Every Duration `json:"every,omitempty" yaml:"every,omitempty"`
	// Offset shifts an interval schedule's slots: they are the Unix epoch + Offset + k*Every, with
	// 0 <= Offset < Every. Defaults to 0.
	Offset Duration `json:"offset,omitempty" yaml:"offset,omitempty"`
	// Cron is a cron expression: 5 fields, or 6 with leading seconds, or one of the macros @yearly, @annually,
	// @monthly, @weekly, @daily, @midnight, @hourly.
	Cron string `json:"cron,omitempty" yaml:"cron,omitempty"`
	// TZ is the IANA zone Cron is read in, only with Cron. Defaults to UTC.
	TZ string `json:"tz,omitempty" yaml:"tz,omitempty"`
	// Jitter delays each slot's emission by a deterministic amount in [0, Jitter): less than Every, at most 1h
	// for a cron schedule. Defaults to none.
	Jitter Duration `json:"jitter,omitempty" yaml:"jitter,omitempty"`
	// Shards is the number of ticks per slot, at most 1024. Defaults to 1 (0 and 1 both mean 1).
	Shards int `json:"shards,omitempty" yaml:"shards,omitempty"`
	// Payload is copied into every tick, at most 64 KiB and without a NUL byte. Defaults to empty.
	Payload string `json:"payload,omitempty" yaml:"payload,omitempty"`
	// Catchup is what the leader does with slots that fell due while nobody led. Defaults to DefaultCatchup
	// (CatchupAll).
	Catchup Catchup `json:"catchup,omitempty" yaml:"catchup,omitempty"`
	// CatchupMax caps CatchupAll: at most this many missed slots, the newest, are emitted; at most 100000.
	// Defaults to 100.
	CatchupMax int `json:"catchup_max,omitempty" yaml:"catchup_max,omitempty"`
	// Deadline is how long after its slot a tick is still worth running: a worker records a later one as
	// skipped_late (StatusSkippedLate). Defaults to 0, no deadline.
	Deadline Duration `json:"deadline,omitempty" yaml:"deadline,omitempty"`
	// StartBy and FinishBy watch each scheduled run against deadlines from the instant it is due: a run not
	// started by StartBy, or not finished by FinishBy, is a breach, which the worker records once per slot and
	// kind on the results topic, counts (tickgroup_deadline_breaches_total) and notifies to its
	// WorkerConfig.BreachWebhook. The run goes on: Deadline is what skips a late tick. Each 1s to 7 days, and
	// FinishBy after StartBy when both are set. Defaults to 0, none. Workers of an earlier release ignore them.
	StartBy  Duration `json:"start_by,omitempty" yaml:"start_by,omitempty"`
	FinishBy Duration `json:"finish_by,omitempty" yaml:"finish_by,omitempty"`
	// After makes the schedule a chain: instead of slots of its own (Every, Cron), it runs once for each slot of
	// the schedule After names that ends as When says, as the tick of that slot (NAME@slot), shortly after the
	// slot's last outcome. The upstream must exist, and chains may not form a cycle (ErrInvalidChange); a schedule
	// a chain follows cannot be deleted before the chain. Only the upstream's scheduled slots count (not its
	// manual triggers or backfills). The previous release neither runs nor changes a chain: upgrade every ticker
	// first. Defaults to "", none.
	After string `json:"after,omitempty" yaml:"after,omitempty"`
	// When is the upstream slot's outcome a chain runs on: WhenSuccess (every shard ok; the default), WhenFailure
	// (a shard failed or was dead-lettered) or WhenAny (it ended). Only with After.
	When When `json:"when,omitempty" yaml:"when,omitempty"`
	// Requires gates the schedule's slots on another schedule's: a slot runs only if the latest slot of Requires
	// due within RequiresWithin before it (at or before it) has ended with success by the time the slot is due;
	// otherwise the slot is recorded skipped_gate (StatusSkippedGate) with the reason, and does not run. A gated
	// schedule's ticks are emitted at their instant, not ahead. RequiresWithin is 1s to 31 days. The required
	// schedule must exist, and cannot be deleted while a gate names it (ErrInvalidChange). Not for a chain. The
	// previous release ignores the gate: upgrade every ticker and worker first. Defaults to "", none.
	Requires       string   `json:"requires,omitempty" yaml:"requires,omitempty"`
	RequiresWithin Duration `json:"requires_within,omitempty" yaml:"requires_within,omitempty"`
	// Overlap is what a worker does with a tick whose successor (same schedule and shard) is already due when
	// it could start. Defaults to "", see Overlap.
	Overlap Overlap `json:"overlap,omitempty" yaml:"overlap,omitempty"`
	// Timeout bounds one attempt of a tick: the handler's context ends then, and an exec program gets SIGTERM.
	// At least 1ms, at most 7 days. Defaults to 0, the worker's (WorkerConfig.Timeout).
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// MaxAttempts is how many times a worker tries a tick before it goes to the dead-letter topic, at most 100.
	// Defaults to 0, the worker's (WorkerConfig.MaxAttempts).
	MaxAttempts int `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`
	// Pool is the worker pool that runs the schedule's ticks (WorkerConfig.Pool): 1 to 64 characters of a-z,
	// 0-9, '_' and '-'. Defaults to the namespace's default pool (as does "default").
	Pool string `json:"pool,omitempty" yaml:"pool,omitempty"`
	// Start, if set, is the earliest slot: no slot is before it. Defaults to none.
	Start *time.Time `json:"start,omitempty" yaml:"start,omitempty"`
	// End, if set, is the latest slot: no slot is after it. Must be after Start. Defaults to none.
	End *time.Time `json:"end,omitempty" yaml:"end,omitempty"`
	// Paused stops emission; slots passed while paused are not caught up. Defaults to false.
	Paused bool `json:"paused,omitempty" yaml:"paused,omitempty"`
	// PausedUntil, with Paused, ends the pause at that instant as a resume then would: the first slot at or
	// after it runs, none before it. A leader of an earlier release, which does not know it, keeps the schedule
	// paused. Defaults to none (paused until resumed).
	PausedUntil *time.Time `json:"paused_until,omitempty" yaml:"paused_until,omitempty"`
	// PauseReason, with Paused, says why, for the people who read the schedule: at most 1,024 bytes of
	// printable text. Defaults to none.
	PauseReason string `json:"pause_reason,omitempty" yaml:"pause_reason,omitempty"`
	// Metrics opts the schedule into its own metric series (a schedule label). Defaults to false.
	Metrics bool `json:"metrics,omitempty" yaml:"metrics,omitempty"`
	// Limit names the limit (Limit, Schedules.PutLimit) the schedule's ticks count against: at most its
	// Concurrency runs at once and its Rate starts per Window, across every worker of the schedule's pool. 1 to
	// 64 characters of a-z, 0-9, '_' and '-'. Validate checks only the name's form; Put, Apply and Write refuse
	// a schedule naming a limit the namespace does not have, or one of another pool. A worker of a release
	// before limits dead-letters the ticks of such a schedule rather than run them past the bound. Defaults to
	// none.
	Limit string `json:"limit,omitempty" yaml:"limit,omitempty"`
	// Priority orders the schedule's ticks that wait, for their limit or for a worker's runner: the higher
	// first, then the older slot. 1 to 5; defaults to 0, which means 3.
	Priority int `json:"priority,omitempty" yaml:"priority,omitempty"`
	// Exclude names the calendars (Calendar, Schedules.PutCalendar) whose excluded days the schedule does not run
	// on: a slot is excluded when one of them excludes the slot's date in the calendar's zone. At most 16 names,
	// none twice. Validate checks only the names' form; Put, Apply and Write refuse a calendar the namespace does
	// not have. The leader, next runs (Schedules.Next, NextExcluding), a backfill, ticker status and ticker
	// audit skip the slots they exclude; a change of a calendar applies from the first slot not yet emitted. A
	// ticker of a release before calendars ignores it and runs the excluded slots: upgrade every ticker first.
	// Defaults to none.
	Exclude []string `json:"exclude,omitempty" yaml:"exclude,omitempty"`
	// OnExcluded is what happens to an excluded slot: skipped (OnExcludedSkip), or moved to the same wall-clock
	// time of the next or the previous day that no calendar excludes. Only with Exclude; a move only for a cron
	// schedule (an every schedule's slots are skipped). A moved run is still the tick of its slot (name@slot),
	// due at the moved instant; moved slots landing on a day the schedule runs merge into that run, so the
	// business day runs once. The previous release's leader runs a move as OnExcludedSkip: upgrade every ticker
	// first. Defaults to "", which is OnExcludedSkip.
	OnExcluded OnExcluded `json:"on_excluded,omitempty" yaml:"on_excluded,omitempty"`
}

// Validate reports every problem with s, each naming the field as the record format spells it (for example
// `schedule "scan": cron "61 * * * *": minute 61 out of range 0-59`); several are joined with errors.Join. It
// checks s as a definition to write: a name made only of dots ("." or "..") is refused, though a schedule of an
// earlier release so named is still read, paused, resumed and deleted.
func (s Schedule) Validate() error { return s.spec().ValidateNew() }

// Describe returns a short human description of when s runs: `every 30s`, `every 1m +15s`,
// `cron "0 6 * * MON-FRI" Europe/Berlin`.
func (s Schedule) Describe() string { return s.spec().Describe() }

// Next returns the first n slots of s strictly after `after`, in UTC and in order (fewer when End comes first):
// the slots its definition makes, paused or not (a pause with an end, PausedUntil, counts as a later Start). An
// invalid s is an error (Validate's).
func (s Schedule) Next(after time.Time, n int) ([]time.Time, error) {
	c, err := s.spec().Compile()
	if err != nil {
		return nil, err
	}
	return c.Upcoming(after, n), nil
}

// NextExcluding is Next under the calendars s excludes (Exclude), found by name in calendars: the instants of
// its first n runs after `after`, as the leader emits them: under OnExcludedSkip its slots on the days none of
// the calendars excludes, under a move the instants its slots run at (a run keeps its slot's tick ID; see
// OnExcluded). A calendar that s excludes and calendars lacks is an error (without it, the slots of its days
// would be listed); an invalid s or calendar is Validate's error. Fewer than n come when End comes first, or
// when the calendars exclude every slot for 400 days.
func (s Schedule) NextExcluding(after time.Time, n int, calendars []Calendar) ([]time.Time, error) {
	c, err := s.spec().Compile()
	if err != nil {
		return nil, err
	}
	byName := make(map[string]*calendar.Calendar, len(calendars))
	for _, cal := range calendars {
		compiled, err := cal.internal().Compile()
		if err != nil {
			return nil, err
		}
		byName[cal.Name] = compiled
	}
	skipping, err := excluding(c, byName)
	if err != nil {
		return nil, err
	}
	return skipping.Upcoming(after, n), nil
}

// excluding is c under the calendars it excludes (calendar.Apply), or an error naming those cals lacks.
func excluding(c *schedule.Schedule, cals map[string]*calendar.Calendar) (*schedule.Schedule, error) {
	skipping, missing := calendar.Apply(c, calendar.Getter(cals))
	switch len(missing) {
	case 0:
		return skipping, nil
	case 1:
		return nil, fmt.Errorf("schedule %s excludes calendar %s, which the namespace does not have: its leader emits nothing until it exists",
			errlimit.Quote(c.Name()), errlimit.Quote(missing[0]))
	}
	return nil, fmt.Errorf("schedule %s excludes calendars %s, which the namespace does not have: its leader emits nothing until they exist",
		errlimit.Quote(c.Name()), calendarstore.List(missing, len(missing)))
}

// Zone is the time zone s's slots are read in: TZ for a cron schedule, UTC otherwise (and for an unknown TZ,
// which Validate refuses).
func (s Schedule) Zone() *time.Location { return s.spec().Location() }

// spec is s as package schedule takes it.
func (s Schedule) spec() schedule.Spec {
	return schedule.Spec{
		Name: s.Name, Every: schedule.Duration(s.Every), Offset: schedule.Duration(s.Offset), Cron: s.Cron, TZ: s.TZ,
		Jitter: schedule.Duration(s.Jitter), Shards: s.Shards, Payload: s.Payload, Catchup: string(s.Catchup),
		CatchupMax: s.CatchupMax, Deadline: schedule.Duration(s.Deadline), Overlap: string(s.Overlap),
		StartBy: schedule.Duration(s.StartBy), FinishBy: schedule.Duration(s.FinishBy), After: s.After, When: string(s.When),
		Requires: s.Requires, RequiresWithin: schedule.Duration(s.RequiresWithin),
		Timeout: schedule.Duration(s.Timeout), MaxAttempts: s.MaxAttempts, Pool: s.Pool, Start: copyTime(s.Start),
		End: copyTime(s.End), Paused: s.Paused, Metrics: s.Metrics, PausedUntil: copyTime(s.PausedUntil), PauseReason: s.PauseReason,
		Limit: s.Limit, Priority: s.Priority, Exclude: slices.Clone(s.Exclude), OnExcluded: string(s.OnExcluded),
	}
}

// fromSpec is the Schedule of sp.
func fromSpec(sp schedule.Spec) Schedule {
	return Schedule{
		Name: sp.Name, Every: Duration(sp.Every), Offset: Duration(sp.Offset), Cron: sp.Cron, TZ: sp.TZ,
		Jitter: Duration(sp.Jitter), Shards: sp.Shards, Payload: sp.Payload, Catchup: Catchup(sp.Catchup),
		CatchupMax: sp.CatchupMax, Deadline: Duration(sp.Deadline), Overlap: Overlap(sp.Overlap),
		StartBy: Duration(sp.StartBy), FinishBy: Duration(sp.FinishBy), After: sp.After, When: When(sp.When),
		Requires: sp.Requires, RequiresWithin: Duration(sp.RequiresWithin),
		Timeout: Duration(sp.Timeout), MaxAttempts: sp.MaxAttempts, Pool: sp.Pool, Start: copyTime(sp.Start),
		End: copyTime(sp.End), Paused: sp.Paused, Metrics: sp.Metrics, PausedUntil: copyTime(sp.PausedUntil), PauseReason: sp.PauseReason,
		Limit: sp.Limit, Priority: sp.Priority, Exclude: slices.Clone(sp.Exclude), OnExcluded: OnExcluded(sp.OnExcluded),
	}
}

// copyTime returns a copy of *t, so that a converted schedule shares no memory with its source.
func copyTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// Duration is a time.Duration that reads and writes as a Go duration string ("30s", "1h30m") in JSON and YAML,
// as the durations of a Schedule do. Bare numbers are refused: "every: 30" could mean seconds or nanoseconds.
type Duration time.Duration

// String returns the Go duration string, for example "1h30m0s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return schedule.Duration(d).MarshalJSON() }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error { return (*schedule.Duration)(d).UnmarshalJSON(b) }

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return schedule.Duration(d).MarshalYAML() }

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error { return (*schedule.Duration)(d).UnmarshalYAML(n) }

// Catchup is a catch-up policy (Schedule.Catchup): what the leader does with the slots of a schedule whose due
// time passed while nobody was leading (a failover, an outage of the whole fleet).
type Catchup string

// Catch-up policies.
const (
	// CatchupSkip emits the latest missed slot only if it is at most 2s late, else nothing.
	CatchupSkip Catchup = "skip"
	// CatchupLatest emits the latest missed slot only.
	CatchupLatest Catchup = "latest"
	// CatchupAll emits every missed slot, in order, up to Schedule.CatchupMax of the latest.
	CatchupAll Catchup = "all"
)

// DefaultCatchup is the policy of a Schedule without one (the empty Catchup). It is CatchupAll: a failover or a
// short outage of the whole fleet then drops no slot, and Schedule.CatchupMax bounds the burst after a long
// outage. Schedules whose late ticks are worthless opt out with CatchupLatest or CatchupSkip, or set a Deadline.
const DefaultCatchup Catchup = CatchupAll

// Overlap is an overlap policy (Schedule.Overlap): what a worker does with a tick whose successor (same schedule
// and shard) is already due when it could start. The default, "", is neither of the others: a tick that fell due
// while the run before it was still going is skipped but for the newest (a job that outlasts its period builds
// no queue), and a tick late for another reason (a failover's catch-up, a backlog) runs, in order.
type Overlap string

// Overlap policies other than the default ("").
const (
	// OverlapQueue runs every tick, one after the other.
	OverlapQueue Overlap = "queue"
	// OverlapSkip does not run a tick whose successor is due (it is recorded as StatusSkippedOverlap); the
	// newest due tick always runs. It also skips a catch-up's older slots.
	OverlapSkip Overlap = "skip"
)

// When is the outcome of an upstream slot a chain runs on (Schedule.When).
type When string

// The outcomes a chain runs on.
const (
	// WhenSuccess: every shard of the upstream slot succeeded. The default.
	WhenSuccess When = "success"
	// WhenFailure: a shard of the upstream slot failed or was dead-lettered.
	WhenFailure When = "failure"
	// WhenAny: the upstream slot ended, whatever its outcome (skipped and cancelled slots included).
	WhenAny When = "any"
)

// OnExcluded is a policy for an excluded slot (Schedule.OnExcluded): what happens to a slot on a day that one of
// the schedule's calendars (Schedule.Exclude) excludes.
type OnExcluded string

// Policies for an excluded slot.
const (
	// OnExcludedSkip: the slot does not run. The default.
	OnExcludedSkip OnExcluded = "skip"
	// OnExcludedNextBusinessDay: the slot runs at the same wall-clock time, in the schedule's zone, on the next
	// day that no calendar excludes; slots moved onto one day run once that day.
	OnExcludedNextBusinessDay OnExcluded = "next_business_day"
	// OnExcludedPreviousBusinessDay: as OnExcludedNextBusinessDay, on the previous such day.
	OnExcludedPreviousBusinessDay OnExcluded = "previous_business_day"
)
