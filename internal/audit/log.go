package audit

import (
	"sort"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Log is what the namespace's topics retain, as Read gathers it and Compare consumes it. Tests fabricate it.
type Log struct {
	// Definitions are the retained versions of each schedule, by name.
	Definitions map[string]*Definition
	// Ticks are the ticks seen in the work or the results topic, by tick ID.
	Ticks map[string]*Tick
	// WorkFrom and ResultsFrom give, per partition, the earliest instant the retained log still covers: the
	// timestamp of the first retained record when older records were deleted by retention. A partition missing
	// from the map is retained from its beginning.
	WorkFrom, ResultsFrom map[int32]time.Time
	// WorkPartitions and ResultsPartitions are the topics' partition counts (0: unknown, assume 1).
	WorkPartitions, ResultsPartitions int
	// Pools holds the same for the pools other than the default (the fields above are the default pool's),
	// by pool name.
	Pools map[string]*Coverage
	// Undecodable counts records that could not be decoded (skipped).
	Undecodable int
	// ForgedCancels counts cancel records of the work topic not written in a transaction (workers refuse them).
	ForgedCancels int
	// Truncated is set when a bound on the records read per partition (ReadSchedule, ReadRecent) cut a read short of
	// its since: its older records were not read, and it is covered only from the first one read (WorkFrom,
	// ResultsFrom), so Compare does not call earlier slots missing.
	Truncated bool
	// Calendars are the retained versions of each calendar, by name, in time order: read only when a retained
	// schedule version excludes calendars (calendars.go).
	Calendars map[string][]CalendarVersion
	// CalendarsPartial is set when older records of the calendars topic are gone (compaction): a calendar is
	// then taken, before its oldest retained record, as that record defines it.
	CalendarsPartial bool

	scheduleGaps []gap // offset ranges of the schedules topic that are no longer retained
	// terms are, with ReadSchedule, the first and last emission of each leader term (producer epoch) among the
	// other schedules' ticks read: what Compare needs of them to tell whether a leader was running.
	terms map[int64]termSpan
}

// Coverage is what one pool's work and results topics retain (see Log.WorkFrom).
type Coverage struct {
	WorkFrom, ResultsFrom             map[int32]time.Time
	WorkPartitions, ResultsPartitions int
}

// coverage returns pool's coverage ("" the default pool's); a pool not read has none.
func (l *Log) coverage(pool string) Coverage {
	if pool == "" {
		return Coverage{WorkFrom: l.WorkFrom, ResultsFrom: l.ResultsFrom, WorkPartitions: l.WorkPartitions, ResultsPartitions: l.ResultsPartitions}
	}
	if c := l.Pools[pool]; c != nil {
		return *c
	}
	return Coverage{}
}

// Version is one retained record of a schedule in the schedules topic.
type Version struct {
	// Offset is the record's offset: the schedule version ticks carry.
	Offset int64
	// At is the record's timestamp (LogAppendTime), the instant the change took effect.
	At time.Time
	// Schedule is the definition, nil for a deletion (tombstone).
	Schedule *schedule.Schedule
}

// Definition is the retained history of one schedule.
type Definition struct {
	Name string
	// Versions are in offset order.
	Versions []Version
	// Partial is set when older versions may be gone (compacted or deleted): slots before Versions[0].At are
	// then not derived.
	Partial bool
}

// Emission is one committed work record of a tick.
type Emission struct {
	Partition       int32     `json:"partition"`
	Offset          int64     `json:"offset"`
	EmittedAt       time.Time `json:"emitted_at"`
	LeaderEpoch     int64     `json:"leader_epoch"`
	ScheduleVersion int64     `json:"schedule_version"`
}

// Tick is everything the log says about one tick ID.
type Tick struct {
	ID       string
	Schedule string
	// Pool is the pool whose work topic holds the tick ("": the default pool).
	Pool string
	Slot time.Time
	// NotBefore is the instant its work record says it starts at (tick.Tick.NotBefore); zero when absent. It is
	// the slot's due instant, or the instant a calendar's move policy runs it at.
	NotBefore time.Time
	Shard     int
	Shards    int
	Trigger   bool
	// Backfill is set for a backfill's tick (ID with "~backfill-"); it is also a Trigger in its work record.
	Backfill bool
	// Limit is the limit its work record names (tick.Tick.Limit; "" for none, and for a record of a build before
	// limits).
	Limit string
	// Emissions are its work records, in the order read.
	Emissions []Emission
	// Ledger holds its valid started, released and outcome entries, in log order.
	Ledger []ledger.Entry
	// Breaches are the deadlines (ledger.DeadlineStartBy, DeadlineFinishBy) its runs breached, each once.
	Breaches []string
}

// Due returns when t is due: its NotBefore, or else sched's due instant of its slot (sched may be nil: the
// slot).
func (t *Tick) Due(sched *schedule.Schedule) time.Time {
	switch {
	case !t.NotBefore.IsZero():
		return t.NotBefore
	case sched != nil:
		return sched.Due(t.Slot)
	}
	return t.Slot
}

// IsTrigger reports whether id is a manual trigger's (ticker schedule trigger).
func IsTrigger(id string) bool { return strings.Contains(id, "~trigger-") }

// IsBackfill reports whether id is a backfill's tick (ticker schedule backfill).
func IsBackfill(id string) bool { return strings.Contains(id, "~backfill-") }

// NewLog returns an empty Log.
func NewLog() *Log {
	return &Log{
		Definitions: map[string]*Definition{},
		Ticks:       map[string]*Tick{},
		Pools:       map[string]*Coverage{},
		WorkFrom:    map[int32]time.Time{},
		ResultsFrom: map[int32]time.Time{},
	}
}

// tick returns the Tick of id, created from what the ID itself says when it is new.
func (l *Log) tick(id string) *Tick {
	if t, ok := l.Ticks[id]; ok {
		return t
	}
	t := &Tick{ID: id, Shards: 1, Trigger: IsTrigger(id), Backfill: IsBackfill(id)}
	name, rest, _ := strings.Cut(id, "@")
	t.Schedule = name
	slot, _, _ := strings.Cut(rest, "~")
	slot, _, _ = strings.Cut(slot, "#")
	if ts, err := time.Parse(time.RFC3339Nano, slot); err == nil {
		t.Slot = ts.UTC()
	}
	l.Ticks[id] = t
	return t
}

// stoppedAfter reports whether a retained version of d pauses or deletes the schedule after a version that
// emitted t (a cancel may then have taken t). With no definition nothing can be said, and it reports true.
func (d *Definition) stoppedAfter(t *Tick) bool {
	if d == nil || len(t.Emissions) == 0 || d.Partial {
		return true // a version may be gone (compaction keeps the newest record of each schedule)
	}
	emitted := t.Emissions[0].ScheduleVersion
	for _, v := range d.Versions {
		if v.Offset <= emitted {
			continue
		}
		if v.Schedule == nil || v.Schedule.Paused() {
			return true
		}
		// A pause with an end cancels only the slots before it.
		if u := v.Schedule.PausedUntil(); u != nil && t.Slot.Before(*u) {
			return true
		}
	}
	return false
}

// excludes reports whether a retained version of d excludes calendars.
func (d *Definition) excludes() bool {
	for _, v := range d.Versions {
		if v.Schedule != nil && len(v.Schedule.Exclude()) > 0 {
			return true
		}
	}
	return false
}

// AddVersion appends a version of schedule name (sched nil: deleted), keeping offset order.
func (l *Log) AddVersion(name string, offset int64, at time.Time, sched *schedule.Schedule) {
	d := l.Definitions[name]
	if d == nil {
		d = &Definition{Name: name}
		l.Definitions[name] = d
	}
	d.Versions = append(d.Versions, Version{Offset: offset, At: at.UTC(), Schedule: sched})
	sort.SliceStable(d.Versions, func(i, j int) bool { return d.Versions[i].Offset < d.Versions[j].Offset })
}
