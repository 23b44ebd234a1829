package schedule

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// Limits and defaults of a Spec. They bound what one schedule can cost the leader (payload bytes per tick, ticks
// per slot, slots per catch-up) and are part of the contract with `ticker schedule apply`.
const (
	// MaxNameLen is the longest schedule name. Names end up in tick IDs and record keys.
	MaxNameLen = 128
	// MinEvery is the shortest interval: slots are whole seconds (tick IDs carry RFC 3339 seconds).
	MinEvery = time.Second
	// MaxCronJitter bounds a cron schedule's jitter. Cron slots are irregular, so "less than the period" cannot be
	// checked; an hour keeps a daily job recognisably daily.
	MaxCronJitter = time.Hour
	// MaxShards is the most ticks one slot can fan out to.
	MaxShards = 1024
	// MaxPayload is the largest payload in bytes; it is copied into every tick of every slot.
	MaxPayload = 64 << 10
	// DefaultCatchupMax is the cap for catch-up "all" when CatchupMax is 0.
	DefaultCatchupMax = 100
	// MaxCatchupMax is the largest CatchupMax accepted.
	MaxCatchupMax = 100_000
	// MaxTimeout is the longest Timeout accepted.
	MaxTimeout = 7 * 24 * time.Hour
	// MaxPoolLen is the longest pool name.
	MaxPoolLen = 64
	// MaxReasonLen is the longest pause reason, in bytes.
	MaxReasonLen = 1024
	// DefaultPool names the default pool (as does an empty Pool).
	DefaultPool = "default"
	// MaxMaxAttempts is the largest MaxAttempts accepted.
	MaxMaxAttempts = 100
	// MinPriority and MaxPriority bound Priority; DefaultPriority is a schedule's without one.
	MinPriority, MaxPriority, DefaultPriority = 1, 5, 3
	// MaxLimitLen is the longest limit name.
	MaxLimitLen = 64
	// MaxExclude is the most calendars one schedule excludes. Every slot is tested against each, and a move
	// searches days on which none excludes the slot, so the count bounds a slot's cost.
	MaxExclude = 16
)

// Policies for a slot on a day that a calendar of Spec.Exclude excludes (Spec.OnExcluded). They are the values of
// package calendar's OnExcluded, spelt out here because calendar imports this package (for the naming rule); a
// test of the root package holds the two to the same strings.
const (
	OnExcludedSkip                = "skip"                  // no run: the default
	OnExcludedNextBusinessDay     = "next_business_day"     // the same wall-clock time, on the next day no calendar excludes
	OnExcludedPreviousBusinessDay = "previous_business_day" // the same wall-clock time, on the previous such day
)

// Catch-up policies: what the leader does with slots whose due time passed while nobody was leading.
const (
	CatchupSkip   = "skip"   // emit the latest slot only if it is at most SkipGrace late, else nothing
	CatchupLatest = "latest" // emit the latest slot only
	CatchupAll    = "all"    // emit every missed slot, up to CatchupMax of the latest (the default)
)

// Overlap policies (Spec.Overlap). The default (empty) is neither: ticks that fell due while the run before them
// was still going are skipped but for the newest (a job that outlasts its period would otherwise build a queue
// that only grows), and ticks late for another reason all run, in order (with catch-up "all" the default, a
// failover emits the slots it missed at once, and skip would run only the newest of them). Queue runs every
// tick; skip also skips the catch-up.
const (
	OverlapQueue = "queue"
	OverlapSkip  = "skip"
)

// DefaultCatchup is the policy of a Spec without one. It is "all": a failover or a short outage of the whole
// fleet then drops no slot (the slots that fell due meanwhile are emitted late, in order), CatchupMax bounds the
// burst after a long outage, and tickgroup_slots_missed_total counts only real losses (the cap, or an opt-in
// "latest" or "skip"). Schedules whose late ticks are worthless opt out with "latest" or "skip", or set a
// Deadline so workers skip ticks that are too late to matter.
const DefaultCatchup = CatchupAll

// Duration is a time.Duration that reads/writes as a Go duration string ("30s", "1h30m") in JSON and YAML.
// Bare numbers are refused: "every: 30" could mean seconds or nanoseconds, and guessing wrong is silent.
type Duration time.Duration

// String returns the Go duration string, for example "1h30m0s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if n := len(b); n >= 2 && b[0] == '"' && b[n-1] == '"' && !bytes.ContainsAny(b[1:n-1], "\\\"") {
		// A plain string, the form Encode writes: parsed without a second pass of the JSON decoder (a leader
		// decodes a million schedules at start-up).
		return d.parse(string(b[1 : n-1]))
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\", got %s", errlimit.Text(string(b)))
	}
	return d.parse(s)
}

// MarshalYAML writes the duration as a Go duration string.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return fmt.Errorf("duration must be a string like \"30s\", got %s", errlimit.Quote(n.Value))
	}
	return d.parse(n.Value)
}

func (d *Duration) parse(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("parsing duration: %w", errlimit.Wrap(err))
	}
	*d = Duration(v)
	return nil
}

// Spec is a schedule as stored (JSON) and as written in apply files (YAML). The zero value of every field except
// Name and one of Every/Cron is a usable default. Validate explains every rule.
type Spec struct {
	// Name identifies the schedule: [a-z0-9._-], 1 to MaxNameLen characters.
	Name string `json:"name,omitempty" yaml:"name,omitempty"`
	// Every is the interval of an interval schedule, at least 1s and a whole number of seconds. Exactly one of
	// Every and Cron is set.
	Every Duration `json:"every,omitempty" yaml:"every,omitempty"`
	// Offset shifts an interval schedule's slots: they are the Unix epoch + Offset + k*Every. 0 <= Offset < Every.
	Offset Duration `json:"offset,omitempty" yaml:"offset,omitempty"`
	// Cron is a cron expression: 5 fields, or 6 with leading seconds, or one of the macros @yearly, @annually,
	// @monthly, @weekly, @daily, @midnight, @hourly.
	Cron string `json:"cron,omitempty" yaml:"cron,omitempty"`
	// TZ is the IANA zone Cron is read in. Defaults to UTC. Only with Cron.
	TZ string `json:"tz,omitempty" yaml:"tz,omitempty"`
	// Jitter delays each slot's emission by a deterministic amount in [0, Jitter).
	Jitter Duration `json:"jitter,omitempty" yaml:"jitter,omitempty"`
	// Shards is the number of ticks per slot. 0 and 1 both mean 1; at most MaxShards.
	Shards int `json:"shards,omitempty" yaml:"shards,omitempty"`
	// Payload is copied into every tick; at most MaxPayload bytes.
	Payload string `json:"payload,omitempty" yaml:"payload,omitempty"`
	// Catchup is the catch-up policy: CatchupSkip, CatchupLatest or CatchupAll. Defaults to DefaultCatchup (all).
	Catchup string `json:"catchup,omitempty" yaml:"catchup,omitempty"`
	// CatchupMax caps CatchupAll. Defaults to DefaultCatchupMax; at most MaxCatchupMax.
	CatchupMax int `json:"catchup_max,omitempty" yaml:"catchup_max,omitempty"`
	// Deadline is how long after its slot a tick is still worth running; 0 means no deadline.
	Deadline Duration `json:"deadline,omitempty" yaml:"deadline,omitempty"`
	// StartBy and FinishBy are the deadlines a run is watched against, from the instant it is due (its slot's
	// due instant, or the instant a calendar's move runs it at): a run that has not started by StartBy, or not
	// finished by FinishBy, is a breach, recorded once per slot and kind, counted and notified (package
	// worker). It still runs: Deadline is what skips a late tick. 0 means none; each at most MaxWatchDeadline,
	// and FinishBy after StartBy when both are set.
	StartBy  Duration `json:"start_by,omitempty" yaml:"start_by,omitempty"`
	FinishBy Duration `json:"finish_by,omitempty" yaml:"finish_by,omitempty"`
	// After makes the schedule a chain: it has no slots of its own (no every or cron), and runs once for each
	// slot of the schedule After names that ends as When says, as the tick of that slot (name@slot). A schedule
	// name, not its own; that it exists, and that the chains form no cycle, is checked when it is written.
	After string `json:"after,omitempty" yaml:"after,omitempty"`
	// When is the upstream outcome a chain runs on: WhenSuccess (the default, as is empty), WhenFailure or
	// WhenAny. Only with After.
	When string `json:"when,omitempty" yaml:"when,omitempty"`
	// Requires gates the schedule's slots on another's: a slot runs only if the latest slot of the schedule
	// Requires names that is due within RequiresWithin before it (at or before it) ended with success by the time
	// it is due; otherwise it is recorded skipped_gate, with the reason. Not for a chain; RequiresWithin is then
	// required, 1s to MaxRequiresWithin. That the schedule exists is checked when it is written.
	Requires       string   `json:"requires,omitempty" yaml:"requires,omitempty"`
	RequiresWithin Duration `json:"requires_within,omitempty" yaml:"requires_within,omitempty"`
	// Overlap is what a worker does with a tick whose successor (same schedule and shard) is already due when
	// it could start: OverlapQueue (it runs: every tick runs, one after the other), OverlapSkip (it does not run
	// and is recorded as skipped_overlap; the newest due tick always runs), or empty, the default: skip for a
	// tick that fell due while the run before it was still going (a run that outlasted its period builds no
	// queue), queue for a tick late for any other reason (a failover's catch-up, a backlog).
	Overlap string `json:"overlap,omitempty" yaml:"overlap,omitempty"`
	// Timeout bounds one attempt of a tick: the handler's context ends then, and an exec program gets SIGTERM.
	// 0 means the worker's --timeout, which defaults to none. At most MaxTimeout.
	Timeout Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// MaxAttempts is how many times a worker tries a tick before it goes to the dead-letter topic. 0 means the
	// worker's --max-attempts (default 3). At most MaxMaxAttempts.
	MaxAttempts int `json:"max_attempts,omitempty" yaml:"max_attempts,omitempty"`
	// Pool is the worker pool that runs the schedule's ticks: its own work topic, ledger and worker group
	// (`worker run --pool`). Empty or DefaultPool: the namespace's default pool. [a-z0-9_-], 1 to MaxPoolLen.
	Pool string `json:"pool,omitempty" yaml:"pool,omitempty"`
	// Start, if set, is the earliest slot: no slot is before it.
	Start *time.Time `json:"start,omitempty" yaml:"start,omitempty"`
	// End, if set, is the latest slot: no slot is after it. Must be after Start.
	End *time.Time `json:"end,omitempty" yaml:"end,omitempty"`
	// Paused stops emission; slots passed while paused are not caught up (see Plan).
	Paused bool `json:"paused,omitempty" yaml:"paused,omitempty"`
	// PausedUntil, with Paused, ends the pause at that instant, as a resume then would: the first slot at or
	// after it is emitted, and none before it (a reader of an older release, which does not know the field,
	// keeps the schedule paused).
	PausedUntil *time.Time `json:"paused_until,omitempty" yaml:"paused_until,omitempty"`
	// PauseReason, with Paused, says why it is paused, for the people who read it; at most MaxReasonLen bytes
	// of printable text.
	PauseReason string `json:"pause_reason,omitempty" yaml:"pause_reason,omitempty"`
	// Metrics opts the schedule into its own metric series. Carried, not interpreted, by this package.
	Metrics bool `json:"metrics,omitempty" yaml:"metrics,omitempty"`
	// Limit names the limit (package limit: at most N runs at once, at most R starts per window) the schedule's
	// ticks count against, across every worker of its pool; empty: none. [a-z0-9_-], 1 to MaxLimitLen. That the
	// limit exists, in the schedule's pool, is checked when the schedule is written, not by Validate.
	Limit string `json:"limit,omitempty" yaml:"limit,omitempty"`
	// Priority orders the ticks held by their limit: the higher first (aged by their wait), then the longer
	// waiting. MinPriority to MaxPriority; 0 means DefaultPriority. Ticks waiting for a worker's runner keep
	// their usual order.
	Priority int `json:"priority,omitempty" yaml:"priority,omitempty"`
	// Exclude names the calendars (package calendar) whose excluded days the schedule does not run on: a slot is
	// excluded when one of them excludes the slot's date in the calendar's zone. At most MaxExclude names, each a
	// calendar name (the schedules' naming rule), none twice. That each calendar exists is checked when the
	// schedule is written, not by Validate.
	Exclude []string `json:"exclude,omitempty" yaml:"exclude,omitempty"`
	// OnExcluded is what happens to an excluded slot: OnExcludedSkip (the default, as is empty),
	// OnExcludedNextBusinessDay or OnExcludedPreviousBusinessDay. Only with Exclude; a move only for a cron
	// schedule.
	OnExcluded string `json:"on_excluded,omitempty" yaml:"on_excluded,omitempty"`
}

// The outcomes of an upstream slot a chain runs on (Spec.When).
const (
	WhenSuccess = "success" // every shard of the slot succeeded
	WhenFailure = "failure" // a shard of the slot failed or was dead-lettered
	WhenAny     = "any"     // the slot ended, whatever its outcome
)

// MaxRequiresWithin bounds Spec.RequiresWithin: 31 days.
const MaxRequiresWithin = 31 * 24 * time.Hour

// MaxWatchDeadline bounds StartBy and FinishBy: a week.
const MaxWatchDeadline = 7 * 24 * time.Hour

// FieldError is one problem with one field of a Spec.
type FieldError struct {
	Schedule string // the schedule's name as written, possibly invalid or empty
	Field    string // the JSON/YAML field name, for example "cron"
	Value    string // the offending value as written; empty when the problem is a missing value
	Msg      string // what is wrong
}

// Error reads like `schedule "scan": cron "61 * * * *": minute 61 out of range 0-59`.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("schedule")
	if e.Schedule != "" {
		b.WriteString(" " + errlimit.Quote(e.Schedule))
	}
	b.WriteString(": ")
	b.WriteString(e.Field)
	if e.Value != "" {
		b.WriteString(" " + errlimit.Quote(e.Value))
	}
	b.WriteString(": ")
	b.WriteString(errlimit.Text(e.Msg))
	return b.String()
}

// Validate reports every problem with s. Each problem is a *FieldError; with several, they are joined with
// errors.Join (errors.As finds the first), so an apply file's author sees them all at once. It is the rule of a
// record read back: a definition about to be written is checked by ValidateNew.
func (s Spec) Validate() error {
	_, err := s.compile(false)
	return err
}

// ValidateNew is Validate for a definition about to be written (a put, an apply file): it also refuses what only
// the records of earlier releases may hold, which readers go on accepting. That is a name made only of dots:
// "." and ".." are path segments that browsers and HTTP routers rewrite, so the console could never show them.
func (s Spec) ValidateNew() error {
	_, err := s.compile(true)
	return err
}

// validator collects FieldErrors for one spec.
type validator struct {
	name string
	errs []error
}

func (v *validator) fail(field, value, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Schedule: v.name, Field: field, Value: value, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error {
	switch len(v.errs) {
	case 0:
		return nil
	case 1:
		return v.errs[0]
	}
	return errors.Join(v.errs...)
}

// ValidName reports whether name is a name a stored schedule can have: 1 to MaxNameLen characters of a-z, 0-9,
// '.', '_' and '-'. A new schedule's name must also not be made only of dots (ValidateNew).
func ValidName(name string) bool { return validName(name) }

func validName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// onlyDots reports whether name is made only of dots ("." and ".." among them).
func onlyDots(name string) bool { return name != "" && strings.Trim(name, ".") == "" }

// compile validates s and, if it is valid, builds its Schedule. Validation and building share one pass so that
// what Validate accepts is exactly what Compile can build (the cron expression and the zone are parsed once).
// With write, it checks s as ValidateNew does.
func (s Spec) compile(write bool) (*Schedule, error) {
	v := &validator{name: s.Name}
	s.checkName(v, write)
	// A pause with an end emits from that end on, as a schedule with a later Start would: it is not paused in
	// the leader's sense (Paused), only Pausing.
	sch := &Schedule{name: s.Name, payload: s.Payload, jitter: s.Jitter, paused: s.Paused && s.PausedUntil == nil, metrics: s.Metrics}
	if s.Cron != "" || s.TZ != "" || s.Start != nil || s.End != nil || s.Deadline != 0 || s.StartBy != 0 || s.FinishBy != 0 || s.Timeout != 0 || s.MaxAttempts != 0 || s.Pool != "" ||
		s.PausedUntil != nil || s.PauseReason != "" || s.Limit != "" || s.Priority != 0 || s.Exclude != nil || s.OnExcluded != "" || s.After != "" || s.Requires != "" {
		c := s.clone()
		sch.x = &rare{cronExpr: s.Cron, tz: s.TZ, start: c.Start, end: c.End, deadline: s.Deadline, startBy: s.StartBy, finishBy: s.FinishBy,
			timeout: s.Timeout, maxAttempts: int32(s.MaxAttempts),
			pool: s.Pool, pausedUntil: c.PausedUntil, pauseReason: s.PauseReason, limit: s.Limit, priority: int8(s.Priority),
			exclude: c.Exclude, onExcluded: s.OnExcluded, after: s.After, when: s.When, requires: s.Requires, requiresWithin: s.RequiresWithin}
	}
	switch {
	case s.After != "":
		s.checkChain(v)
	case s.When != "":
		v.fail("when", s.When, "is only for a chain (after)")
	case s.Every != 0 && s.Cron != "":
		v.fail("cron", s.Cron, "set either every or cron, not both")
	case s.Every == 0 && s.Cron == "":
		v.fail("every", "", "one of every or cron is required (or after, for a chain)")
	case s.Every != 0:
		s.compileEvery(v, sch)
	default:
		s.compileCron(v, sch)
	}
	s.checkRun(v)
	s.checkGate(v)
	s.checkPolicies(v)
	s.checkExclude(v)
	if err := v.err(); err != nil {
		return nil, err
	}
	sch.shards, sch.catchupCap = int32(s.Shards), int32(s.CatchupMax)
	sch.catchup = uint8(slices.Index(catchups[:], s.Catchup))
	sch.overlap = uint8(slices.Index(overlaps[:], s.Overlap))
	return sch, nil
}

// checkName checks the name (at write time, the stricter rule too).
func (s Spec) checkName(v *validator, write bool) {
	switch {
	case !validName(s.Name):
		v.fail("name", s.Name, "must be 1 to %d characters of a-z, 0-9, '.', '_' and '-'", MaxNameLen)
	case write && onlyDots(s.Name):
		v.fail("name", s.Name, "must not be made only of dots: \".\" and \"..\" cannot be named in a URL path")
	}
}

// compileEvery checks an interval schedule's timing and sets sch's.
func (s Spec) compileEvery(v *validator, sch *Schedule) {
	every, offset, jitter := time.Duration(s.Every), time.Duration(s.Offset), time.Duration(s.Jitter)
	switch {
	case every < MinEvery:
		v.fail("every", s.Every.String(), "must be at least %s", MinEvery)
	case every%time.Second != 0:
		// Slots are identified by RFC 3339 seconds; a fractional interval would give two slots one ID.
		v.fail("every", s.Every.String(), "must be a whole number of seconds")
	}
	switch {
	case offset < 0 || offset >= every:
		v.fail("offset", s.Offset.String(), "must be at least 0 and less than every (%s)", s.Every)
	case offset%time.Second != 0:
		v.fail("offset", s.Offset.String(), "must be a whole number of seconds")
	}
	if s.TZ != "" {
		// An interval is counted in real seconds from the epoch, so a zone would change nothing; refusing it
		// stops someone believing "every: 24h, tz: Europe/Berlin" means "daily at Berlin midnight".
		v.fail("tz", s.TZ, "only applies to cron schedules (every is counted in real time from the Unix epoch)")
	}
	if jitter < 0 || jitter >= every {
		v.fail("jitter", s.Jitter.String(), "must be at least 0 and less than every (%s)", s.Every)
	}
	sch.every, sch.offset = int64(every/time.Second), int64(offset/time.Second)
}

// compileCron checks a cron schedule's timing and sets sch's.
func (s Spec) compileCron(v *validator, sch *Schedule) {
	if s.Offset != 0 {
		v.fail("offset", s.Offset.String(), "only applies to every schedules")
	}
	loc := time.UTC
	if s.TZ != "" {
		var err error
		loc, err = loadZone(s.TZ)
		if err != nil {
			v.fail("tz", s.TZ, "%v", err)
		}
	}
	if jitter := time.Duration(s.Jitter); jitter < 0 || jitter > MaxCronJitter {
		v.fail("jitter", s.Jitter.String(), "must be between 0 and %s for cron schedules", MaxCronJitter)
	}
	c, err := parseCron(s.Cron, loc)
	if err != nil {
		v.fail("cron", s.Cron, "%v", err)
	}
	if sch.x != nil {
		sch.x.cron = c
	}
}

// checkRun checks what a tick carries and how it runs: shards, payload, catch-up, deadline, timeout, pool,
// attempts (in the order the problems are listed).
func (s Spec) checkRun(v *validator) {
	if s.Shards < 0 || s.Shards > MaxShards {
		v.fail("shards", fmt.Sprint(s.Shards), "must be between 0 and %d (0 means 1)", MaxShards)
	}
	if len(s.Payload) > MaxPayload {
		v.fail("payload", "", "is %d bytes, more than the limit of %d", len(s.Payload), MaxPayload)
	}
	if i := strings.IndexByte(s.Payload, 0); i >= 0 {
		v.fail("payload", "", "contains a NUL byte (at byte %d): an exec handler's TICK_PAYLOAD environment variable cannot carry it", i)
	}
	switch s.Catchup {
	case "", CatchupSkip, CatchupLatest, CatchupAll:
	default:
		v.fail("catchup", s.Catchup, "must be %q, %q or %q", CatchupSkip, CatchupLatest, CatchupAll)
	}
	if s.CatchupMax < 0 || s.CatchupMax > MaxCatchupMax {
		v.fail("catchup_max", fmt.Sprint(s.CatchupMax), "must be between 0 and %d (0 means %d)", MaxCatchupMax, DefaultCatchupMax)
	}
	if s.Deadline < 0 {
		v.fail("deadline", s.Deadline.String(), "must not be negative")
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{{"start_by", s.StartBy}, {"finish_by", s.FinishBy}} {
		if d.v < 0 || time.Duration(d.v) > MaxWatchDeadline || (d.v > 0 && time.Duration(d.v) < time.Second) {
			v.fail(d.field, d.v.String(), "must be between 1s and %s (0 means none)", MaxWatchDeadline)
		}
	}
	if s.StartBy > 0 && s.FinishBy > 0 && s.FinishBy <= s.StartBy {
		v.fail("finish_by", s.FinishBy.String(), "must be after start_by (%s): a run cannot finish before it starts", s.StartBy)
	}
	switch {
	case s.Timeout < 0 || time.Duration(s.Timeout) > MaxTimeout:
		v.fail("timeout", s.Timeout.String(), "must be between 0 and %s (0 means the worker's --timeout)", MaxTimeout)
	case s.Timeout > 0 && time.Duration(s.Timeout) < time.Millisecond:
		v.fail("timeout", s.Timeout.String(), "must be at least 1ms")
	}
	if !ValidPool(s.Pool) {
		v.fail("pool", s.Pool, "must be empty or 1 to %d characters of a-z, 0-9, '_' and '-'", MaxPoolLen)
	}
	if s.MaxAttempts < 0 || s.MaxAttempts > MaxMaxAttempts {
		v.fail("max_attempts", fmt.Sprint(s.MaxAttempts), "must be between 0 and %d (0 means the worker's --max-attempts)", MaxMaxAttempts)
	}
	if s.Limit != "" && !ValidLimit(s.Limit) {
		v.fail("limit", s.Limit, "must be empty or 1 to %d characters of a-z, 0-9, '_' and '-'", MaxLimitLen)
	}
	if s.Priority != 0 && (s.Priority < MinPriority || s.Priority > MaxPriority) {
		v.fail("priority", fmt.Sprint(s.Priority), "must be between %d and %d (0 means %d)", MinPriority, MaxPriority, DefaultPriority)
	}
}

// checkChain checks a chain (After set): a schedule's name, not its own, a known When, and none of the fields
// that make time slots, which a chain has not.
func (s Spec) checkChain(v *validator) {
	switch {
	case !validName(s.After) || onlyDots(s.After):
		v.fail("after", s.After, "is no schedule name: 1 to %d characters of a-z, 0-9, '.', '_' and '-', not only dots", MaxNameLen)
	case s.After == s.Name:
		v.fail("after", s.After, "is the schedule itself: a chain runs after another schedule")
	}
	switch s.When {
	case "", WhenSuccess, WhenFailure, WhenAny:
	default:
		v.fail("when", s.When, "must be %q, %q or %q", WhenSuccess, WhenFailure, WhenAny)
	}
	for _, f := range []struct {
		field string
		set   bool
	}{{"every", s.Every != 0}, {"cron", s.Cron != ""}, {"tz", s.TZ != ""}, {"offset", s.Offset != 0}, {"jitter", s.Jitter != 0},
		{"catchup", s.Catchup != ""}, {"catchup_max", s.CatchupMax != 0}, {"start", s.Start != nil}, {"end", s.End != nil},
		{"exclude", len(s.Exclude) > 0}, {"on_excluded", s.OnExcluded != ""}} {
		if f.set {
			v.fail(f.field, "", "does not apply to a chain (after): it runs when %s's slots end, not on slots of its own", s.After)
		}
	}
}

// checkGate checks Requires and RequiresWithin.
func (s Spec) checkGate(v *validator) {
	switch {
	case s.Requires == "" && s.RequiresWithin != 0:
		v.fail("requires_within", s.RequiresWithin.String(), "is only for a gate (requires)")
	case s.Requires == "":
	case !validName(s.Requires) || onlyDots(s.Requires):
		v.fail("requires", s.Requires, "is no schedule name: 1 to %d characters of a-z, 0-9, '.', '_' and '-', not only dots", MaxNameLen)
	case s.Requires == s.Name:
		v.fail("requires", s.Requires, "is the schedule itself")
	case s.After != "":
		v.fail("requires", s.Requires, "does not apply to a chain (after): a chain already runs on its upstream's outcome")
	case s.RequiresWithin < Duration(time.Second) || time.Duration(s.RequiresWithin) > MaxRequiresWithin:
		v.fail("requires_within", s.RequiresWithin.String(), "must be between 1s and %s: how far before a slot the required schedule's slot may be", MaxRequiresWithin)
	}
}

// ValidLimit reports whether name can name a limit: 1 to MaxLimitLen characters of a-z, 0-9, '_' and '-'.
func ValidLimit(name string) bool {
	if len(name) == 0 || len(name) > MaxLimitLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkPolicies checks overlap, the start and end, and the pause.
func (s Spec) checkPolicies(v *validator) {
	switch s.Overlap {
	case "", OverlapQueue, OverlapSkip:
	default:
		v.fail("overlap", s.Overlap, "must be %q or %q", OverlapQueue, OverlapSkip)
	}
	if s.Start != nil && s.End != nil && !s.End.After(*s.Start) {
		v.fail("end", s.End.Format(time.RFC3339Nano), "must be after start (%s)", s.Start.Format(time.RFC3339Nano))
	}
	if s.PausedUntil != nil && !s.Paused {
		v.fail("paused_until", s.PausedUntil.Format(time.RFC3339Nano), "is only for a paused schedule")
	}
	switch {
	case s.PauseReason != "" && !s.Paused:
		v.fail("pause_reason", "", "is only for a paused schedule")
	case len(s.PauseReason) > MaxReasonLen:
		v.fail("pause_reason", "", "is %d bytes, more than the limit of %d", len(s.PauseReason), MaxReasonLen)
	case !Printable(s.PauseReason):
		v.fail("pause_reason", "", "must be printable UTF-8 text without control characters")
	}
}

// checkExclude checks the calendars a schedule excludes and its policy for an excluded slot.
func (s Spec) checkExclude(v *validator) {
	if len(s.Exclude) > MaxExclude {
		v.fail("exclude", "", "lists %d calendars, more than the limit of %d", len(s.Exclude), MaxExclude)
	} else {
		seen := make(map[string]bool, len(s.Exclude))
		for _, name := range s.Exclude {
			switch {
			case !validName(name) || onlyDots(name):
				v.fail("exclude", name, "is no calendar name: 1 to %d characters of a-z, 0-9, '.', '_' and '-', not only dots", MaxNameLen)
			case seen[name]:
				v.fail("exclude", name, "is listed twice")
			}
			seen[name] = true
		}
	}
	switch s.OnExcluded {
	case "", OnExcludedSkip, OnExcludedNextBusinessDay, OnExcludedPreviousBusinessDay:
	default:
		v.fail("on_excluded", s.OnExcluded, "must be %q, %q or %q", OnExcludedSkip, OnExcludedNextBusinessDay, OnExcludedPreviousBusinessDay)
		return
	}
	switch {
	case s.OnExcluded != "" && len(s.Exclude) == 0:
		v.fail("on_excluded", s.OnExcluded, "is only for a schedule that excludes calendars (exclude)")
	case s.Every != 0 && s.OnExcluded != "" && s.OnExcluded != OnExcludedSkip:
		// A move keeps the slot's wall-clock time on another day: for an interval counted in real seconds from
		// the epoch that is no slot of the schedule, and no zone says whose wall clock. Its slots are skipped.
		v.fail("on_excluded", s.OnExcluded, "only applies to cron schedules: an every schedule's excluded slots are skipped (on_excluded: %s, the default)", OnExcludedSkip)
	}
}

// CatchupPolicy is the catch-up policy the leader applies to s: Catchup, or DefaultCatchup when s has none.
func (s Spec) CatchupPolicy() string { return catchupPolicy(s.Catchup) }

// catchupPolicy is a catch-up policy as written, "" read as DefaultCatchup.
func catchupPolicy(written string) string {
	if written == "" {
		return DefaultCatchup
	}
	return written
}

// Location is the zone s's slots are read in: TZ for a cron schedule, UTC otherwise, and UTC for a TZ that
// Validate refuses (an unknown zone, or "Local"). The one rule for every reader that shows a slot in the
// schedule's zone (tickgroup.Schedule.Zone, ticker status, the console).
func (s Spec) Location() *time.Location {
	if s.Cron == "" || s.TZ == "" {
		return time.UTC
	}
	loc, err := loadZone(s.TZ)
	if err != nil {
		return time.UTC
	}
	return loc
}

// loadZone loads an IANA zone. "Local" is refused: it is whatever the host says, so replicas could disagree.
func loadZone(name string) (*time.Location, error) {
	if name == "Local" {
		return nil, errors.New("unknown time zone: \"Local\" depends on the host; name an IANA zone such as \"Europe/Berlin\"")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone (want an IANA name such as \"Europe/Berlin\"): %w", err)
	}
	return loc, nil
}

// clone returns a copy of s that shares no memory with it, so a Schedule cannot be changed through its Spec.
func (s Spec) clone() Spec {
	if s.Start != nil {
		t := *s.Start
		s.Start = &t
	}
	if s.End != nil {
		t := *s.End
		s.End = &t
	}
	if s.PausedUntil != nil {
		t := *s.PausedUntil
		s.PausedUntil = &t
	}
	s.Exclude = slices.Clone(s.Exclude)
	return s
}

// Printable reports whether s is valid UTF-8 without control characters: free text (a reason, a name) that is
// shown in terminals and pages.
func Printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// Describe returns a short human description: `every 30s`, `every 1m +15s`, `cron "0 6 * * MON-FRI" Europe/Berlin`.
func (s Spec) Describe() string {
	if s.After != "" {
		return fmt.Sprintf("after %s (when %s)", s.After, cmp.Or(s.When, WhenSuccess))
	}
	if s.Cron != "" {
		tz := s.TZ
		if tz == "" {
			tz = "UTC"
		}
		return fmt.Sprintf("cron %q %s", s.Cron, tz)
	}
	d := "every " + time.Duration(s.Every).String()
	if s.Offset != 0 {
		d += " +" + time.Duration(s.Offset).String()
	}
	return d
}

// ValidPool reports whether name is a valid pool name (empty: the default pool).
func ValidPool(name string) bool {
	if len(name) > MaxPoolLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
