// Package changelog keeps the record of who changed which schedule, when, why, and from what to what: one record
// per change on the namespace's change-log topic (<ns>.changes, not compacted: its retention bounds it), written
// by the client that makes the change right after the schedule record it describes, and read back by `ticker
// schedule log`.
//
// Anyone with Write on the topic can write to it, so a reader trusts a record only as far as the schedules topic
// confirms it. A change names the schedules-topic record it made (its offset), and the reader checks that
// record's key and value: a record that the schedules topic contradicts (another key, another value, no such
// offset), that was logged before the record it claims existed (both topics stamp LogAppendTime, so a claim
// cannot be written ahead for the next offsets), or that claims an offset an earlier change already claimed, is
// counted as forged and not shown; one whose schedule record compaction has removed since is shown as
// unconfirmed. A record that does not decode as a
// change is counted and skipped.
//
// A change of a named limit (package limit) is recorded the same way, checked against the limits topic: its
// record is keyed limit.Key(name), "~limit/NAME", which no schedule's name can be, so that a reader keyed by
// schedule (ReadSchedule) never takes it for a schedule's, and its ops (limit_put, limit_delete) are ones a
// reader of an earlier release does not know: it counts the record invalid and does not show it. A change of a
// named calendar (package calendarstore) is recorded alike, keyed calendarstore.Key(name), "~calendar/NAME",
// with the ops calendar_put and calendar_delete, checked against the calendars topic. A bulk apply's changes
// are recorded up to MaxBulk a record (op apply_bulk, keyed BulkKey), each by its schedule and offset only: a
// reader expands such a record into a change per item (Change.Expand). The who and the reason of
// a confirmed change are as trustworthy as the ACL on the topic: grant Write on it only to those who may change
// schedules.
package changelog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Version is the major version of the record format written by this build.
const Version = 1

// Kind marks a change record ("kind").
const Kind = "schedule_change"

// The operations a change records.
const (
	OpPut    = "put"
	OpPause  = "pause"
	OpResume = "resume"
	OpDelete = "delete"
	OpApply  = "apply" // a put or a delete of `schedule apply`
	// A backfill's request and its cancellation: their records are on the backfills topic (Offset is theirs,
	// After their value), not on the schedules topic.
	OpBackfill       = "backfill"
	OpBackfillCancel = "backfill_cancel"
	// A manual trigger: its tick is on the work topic (Offset is its record's there, Trigger its ID), which the
	// change log's reader does not read: a trigger's change is shown unconfirmed.
	OpTrigger = "trigger"
	// A limit's put and deletion: their records are on the limits topic (Offset is theirs, Before and After
	// limit records), and Limit names the limit where Schedule is empty.
	OpLimitPut    = "limit_put"
	OpLimitDelete = "limit_delete"
	// A calendar's put and deletion: their records are on the calendars topic (Offset is theirs, Before and
	// After calendar records), and Calendar names the calendar where Schedule is empty.
	OpCalendarPut    = "calendar_put"
	OpCalendarDelete = "calendar_delete"
	// A bulk apply's changes, up to MaxBulk in one record keyed BulkKey: each by its schedule and the offset of
	// the record it wrote, without definitions (Items). A reader expands it into one change of op apply per item
	// (Expand), checked against the schedules topic by key, and by value or tombstone. A reader of an earlier
	// release does not know the op: it counts the record invalid and does not show it.
	OpApplyBulk = "apply_bulk"
)

// BulkKey is the key of a bulk apply's records: no schedule's name (names are [a-z0-9._-]).
const BulkKey = "~apply"

// MaxBulk is the most changes one bulk record holds: with names of at most schedule.MaxNameLen bytes, a record
// stays under 320 KB, within the broker's default limit of a message (1 MB).
const MaxBulk = 2000

// Item is one change of a bulk apply: the schedule, the schedules-topic record it wrote, and whether that
// record deleted it (a tombstone).
type Item struct {
	Schedule string `json:"s"`
	Offset   int64  `json:"o"`
	Deleted  bool   `json:"d,omitempty"`
}

var ops = map[string]bool{OpPut: true, OpPause: true, OpResume: true, OpDelete: true, OpApply: true, OpBackfill: true, OpBackfillCancel: true, OpTrigger: true,
	OpLimitPut: true, OpLimitDelete: true, OpCalendarPut: true, OpCalendarDelete: true, OpApplyBulk: true}

// BackfillID returns the ID of the backfill whose request or cancellation b is ("" when it is not one).
func BackfillID(b []byte) string {
	var named struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(b, &named) != nil {
		return ""
	}
	return named.ID
}

// IsBackfill reports whether op's record is on the backfills topic.
func IsBackfill(op string) bool { return op == OpBackfill || op == OpBackfillCancel }

// IsLimit reports whether op is a limit's change, whose record is on the limits topic.
func IsLimit(op string) bool { return op == OpLimitPut || op == OpLimitDelete }

// IsCalendar reports whether op is a calendar's change, whose record is on the calendars topic.
func IsCalendar(op string) bool { return op == OpCalendarPut || op == OpCalendarDelete }

// Limits of a record's free text.
const (
	MaxReason = schedule.MaxReasonLen
	MaxWho    = 256
)

// CheckText reports what makes s no free text of a record (a reason, a name): more than max bytes, invalid
// UTF-8, or a control character. The error names field ("reason: 1,200 bytes, at most 1,024").
func CheckText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return fmt.Errorf("%s: %s bytes, at most %s", field, thousands(len(s)), thousands(max))
	case !utf8.ValidString(s):
		return fmt.Errorf("%s: not valid UTF-8", field)
	case !schedule.Printable(s):
		return fmt.Errorf("%s: holds a control character", field)
	}
	return nil
}

// CleanText returns s made valid free text of at most max bytes: invalid UTF-8 and control characters replaced
// by '?', cut on a character boundary. It is for the text a writer records of itself (its host, its user), which
// must never make a change fail.
func CleanText(s string, max int) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) > max {
		n := max
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return s
}

// thousands writes n with a comma between each group of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Who is who made a change, as far as the writer knows it.
type Who struct {
	// Principal is the Kafka principal of the writer's connection where the client knows it: User:NAME for a
	// SASL user, User:CN=... for a TLS client certificate.
	Principal string `json:"principal,omitempty"`
	// User and Host are the operating-system user and host that ran the command or program.
	User string `json:"user,omitempty"`
	Host string `json:"host,omitempty"`
	// Name is what a Go caller names itself (tickgroup.By), a deploy job say.
	Name string `json:"name,omitempty"`
}

// String reads "alice@host-1 (User:alice)", with the parts that are known.
func (w Who) String() string {
	s := w.Name
	if w.User != "" || w.Host != "" {
		if s != "" {
			s += " "
		}
		s += w.User + "@" + w.Host
	}
	if w.Principal != "" {
		if s != "" {
			s += " "
		}
		s += "(" + w.Principal + ")"
	}
	if s == "" {
		return "unknown"
	}
	return s
}

// Change is one change of one schedule, or of one limit, or of one calendar.
type Change struct {
	V        int    `json:"v"`
	Kind     string `json:"kind"`
	Op       string `json:"op"`
	Schedule string `json:"schedule"`
	// Limit is the limit a limit's change (IsLimit) changed; Schedule is then empty.
	Limit string `json:"limit,omitempty"`
	// Calendar is the calendar a calendar's change (IsCalendar) changed; Schedule is then empty.
	Calendar string `json:"calendar,omitempty"`
	// At is when the writer made the change (its clock); the record's own timestamp is the broker's.
	At     time.Time `json:"at"`
	By     Who       `json:"by"`
	Reason string    `json:"reason,omitempty"`
	// Before is the schedule record that the change replaced (absent: the schedule did not exist); After the one
	// it wrote (absent: a deletion), both in the schedules topic's form; a limit's change has the limits topic's,
	// a calendar's the calendars topic's.
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
	// Offset is the schedules-topic record the change wrote (a limit's change: the limits topic's; a calendar's:
	// the calendars topic's).
	Offset int64 `json:"schedule_offset"`
	// Trigger is the ID of a trigger's (first) tick, for op trigger.
	Trigger string `json:"trigger,omitempty"`
	// Items are a bulk apply's changes, for op apply_bulk (Offset is then the first item's), and Applied the
	// number of changes of the whole apply, whose records hold them all.
	Items   []Item `json:"items,omitempty"`
	Applied int    `json:"applied,omitempty"`

	// bulk marks a change Expand made of a bulk record's item; deleted says that it wrote a tombstone. Verify
	// checks such a change by the record's key and by value or tombstone: it records no definition.
	bulk, deleted bool
}

// Bulk reports whether c is an item of a bulk record (Expand): it records no definitions, and Deleted tells a
// deletion.
func (c Change) Bulk() bool { return c.bulk }

// Deleted reports whether c deleted its schedule.
func (c Change) Deleted() bool {
	if c.bulk {
		return c.deleted
	}
	return c.Op == OpDelete || c.Op == OpApply && c.After == nil
}

// Expand returns the changes of a bulk record, one of op apply per item, each with the record's time, author
// and reason; any other change alone.
func (c Change) Expand() []Change {
	if c.Op != OpApplyBulk {
		return []Change{c}
	}
	out := make([]Change, len(c.Items))
	for i, it := range c.Items {
		out[i] = Change{V: c.V, Kind: c.Kind, Op: OpApply, Schedule: it.Schedule, At: c.At, By: c.By, Reason: c.Reason, Offset: it.Offset,
			bulk: true, deleted: it.Deleted}
	}
	return out
}

// Key is the key of c's record: its schedule, limit.Key of its limit, or calendarstore.Key of its calendar.
func (c Change) Key() string {
	switch {
	case IsLimit(c.Op):
		return limit.Key(c.Limit)
	case IsCalendar(c.Op):
		return calendarstore.Key(c.Calendar)
	case c.Op == OpApplyBulk:
		return BulkKey
	}
	return c.Schedule
}

// Encode returns c's record value, checking it as Decode would.
func Encode(c Change) ([]byte, error) {
	c.V, c.Kind = Version, Kind
	c.At = c.At.UTC()
	if err := c.check(); err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// Decode reads a change record's value. A value that is not a valid change is an error: its reader counts it
// and passes over it.
func Decode(b []byte) (Change, error) {
	var c Change
	if err := json.Unmarshal(b, &c); err != nil {
		return Change{}, fmt.Errorf("decoding change: %w", errlimit.Wrap(err))
	}
	if c.V != Version {
		return Change{}, fmt.Errorf("decoding change: version %d: want %d", c.V, Version)
	}
	if err := c.check(); err != nil {
		return Change{}, err
	}
	return c, nil
}

// check reports what makes c no valid change.
func (c Change) check() error {
	switch {
	case c.Kind != Kind:
		return fmt.Errorf("change: kind %s, want %s", errlimit.Quote(c.Kind), Kind)
	case !ops[c.Op]:
		return fmt.Errorf("change: unknown op %s", errlimit.Quote(c.Op))
	case c.At.IsZero():
		return errors.New("change: no time")
	case c.Offset < 0:
		return fmt.Errorf("change: schedule offset %d", c.Offset)
	}
	if err := CheckText("reason", c.Reason, MaxReason); err != nil {
		return fmt.Errorf("change: %w", err)
	}
	for _, f := range []struct{ field, s string }{{"by", c.By.Name}, {"principal", c.By.Principal}, {"user", c.By.User}, {"host", c.By.Host}} {
		if err := CheckText(f.field, f.s, MaxWho); err != nil {
			return fmt.Errorf("change: %w", err)
		}
	}
	switch {
	case IsLimit(c.Op):
		return c.checkLimit()
	case IsCalendar(c.Op):
		return c.checkCalendar()
	case c.Limit != "":
		return fmt.Errorf("change: a %s names a limit", c.Op)
	case c.Calendar != "":
		return fmt.Errorf("change: a %s names a calendar", c.Op)
	case c.Op == OpApplyBulk:
		return c.checkBulk()
	case c.Items != nil || c.Applied != 0:
		return fmt.Errorf("change: a %s with bulk items", c.Op)
	}
	if c.Op == OpTrigger {
		if c.Before != nil || c.After != nil || c.Trigger == "" || len(c.Trigger) > 1024 {
			return errors.New("change: a trigger names its tick, and writes no definition")
		}
		return nil
	}
	if IsBackfill(c.Op) {
		// After is the backfill's request or cancellation record, checked against the backfills topic (Verify).
		if c.Before != nil || BackfillID(c.After) == "" {
			return fmt.Errorf("change: a %s without the backfill record it wrote", c.Op)
		}
		return nil
	}
	if err := checkSpec(c.Schedule, c.Before); err != nil {
		return fmt.Errorf("change: before: %w", err)
	}
	if err := checkSpec(c.Schedule, c.After); err != nil {
		return fmt.Errorf("change: after: %w", err)
	}
	switch {
	case c.Op == OpDelete && c.After != nil:
		return errors.New("change: a delete with a definition written")
	case c.Op != OpDelete && c.Op != OpApply && c.After == nil:
		return fmt.Errorf("change: a %s without the definition it wrote", c.Op)
	}
	return nil
}

// checkBulk checks a bulk record: no schedule or definition of its own, 1 to MaxBulk items of valid names at
// increasing offsets, the first of which is its Offset.
func (c Change) checkBulk() error {
	switch {
	case c.Schedule != "" || c.Before != nil || c.After != nil || c.Trigger != "":
		return errors.New("change: a bulk record names a schedule or a definition of its own")
	case len(c.Items) == 0 || len(c.Items) > MaxBulk:
		return fmt.Errorf("change: a bulk record of %d items: want 1 to %d", len(c.Items), MaxBulk)
	case c.Applied < len(c.Items):
		return fmt.Errorf("change: a bulk record of %d items, of an apply of %d", len(c.Items), c.Applied)
	case c.Offset != c.Items[0].Offset:
		return fmt.Errorf("change: a bulk record at offset %d whose first item is at %d", c.Offset, c.Items[0].Offset)
	}
	for i, it := range c.Items {
		switch {
		case !schedule.ValidName(it.Schedule):
			return fmt.Errorf("change: bulk item %d: %s is no schedule name", i, errlimit.Quote(it.Schedule))
		case i > 0 && it.Offset <= c.Items[i-1].Offset:
			return fmt.Errorf("change: bulk item %d: offset %d after %d", i, it.Offset, c.Items[i-1].Offset)
		}
	}
	return nil
}

// checkLimit checks a limit's change: a valid limit name and no schedule, the records before and after valid
// records of that limit, a put that wrote one and a deletion that did not.
func (c Change) checkLimit() error {
	switch {
	case !schedule.ValidLimit(c.Limit):
		return fmt.Errorf("change: limit %s: no limit can have that name", errlimit.Quote(c.Limit))
	case c.Schedule != "" || c.Trigger != "" || c.Calendar != "":
		return fmt.Errorf("change: a %s names a schedule, a trigger or a calendar", c.Op)
	case c.Op == OpLimitPut && c.After == nil:
		return errors.New("change: a limit_put without the limit it wrote")
	case c.Op == OpLimitDelete && c.After != nil:
		return errors.New("change: a limit_delete with a limit written")
	}
	for _, raw := range []json.RawMessage{c.Before, c.After} {
		if raw == nil {
			continue
		}
		if _, err := limit.Decode(c.Limit, raw); err != nil {
			return fmt.Errorf("change: %w", err)
		}
	}
	return nil
}

// DecodeLimit decodes a limit of a limit's change of name (its Before or After); nil for an absent one.
func DecodeLimit(name string, raw json.RawMessage) *limit.Limit {
	if raw == nil {
		return nil
	}
	l, err := limit.Decode(name, raw)
	if err != nil {
		return nil
	}
	return &l
}

// checkCalendar checks a calendar's change: a name a calendar can have and no schedule, the records before and
// after valid records of that calendar, a put that wrote one and a deletion that did not.
func (c Change) checkCalendar() error {
	switch {
	case !schedule.ValidName(c.Calendar):
		return fmt.Errorf("change: calendar %s: no calendar can have that name", errlimit.Quote(c.Calendar))
	case c.Schedule != "" || c.Trigger != "" || c.Limit != "":
		return fmt.Errorf("change: a %s names a schedule, a trigger or a limit", c.Op)
	case c.Op == OpCalendarPut && c.After == nil:
		return errors.New("change: a calendar_put without the calendar it wrote")
	case c.Op == OpCalendarDelete && c.After != nil:
		return errors.New("change: a calendar_delete with a calendar written")
	}
	for _, raw := range []json.RawMessage{c.Before, c.After} {
		if raw == nil {
			continue
		}
		if _, err := calendarstore.Decode(c.Calendar, raw); err != nil {
			return fmt.Errorf("change: %w", err)
		}
	}
	return nil
}

// DecodeCalendar decodes a calendar of a calendar's change of name (its Before or After); nil for an absent one.
func DecodeCalendar(name string, raw json.RawMessage) *calendar.Calendar {
	if raw == nil {
		return nil
	}
	c, err := calendarstore.Decode(name, raw)
	if err != nil {
		return nil
	}
	return c
}

// checkSpec checks that raw, when present, is a valid schedule record of the schedule name.
func checkSpec(name string, raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	s, err := schedule.Decode(raw)
	if err != nil {
		return err
	}
	if s.Name != name {
		return fmt.Errorf("the definition is of %s", errlimit.Quote(s.Name))
	}
	return nil
}

// Spec decodes a definition of c (Before or After); nil for an absent one.
func Spec(raw json.RawMessage) *schedule.Spec {
	if raw == nil {
		return nil
	}
	s, err := schedule.Decode(raw)
	if err != nil {
		return nil
	}
	return &s
}

// SchedulesRecord is a record of the schedules topic (or of the backfills topic), as Verify needs it.
type SchedulesRecord struct {
	Key, Value []byte
	// Time is the record's timestamp. Stamped says that the broker stamped it as it took the record
	// (LogAppendTime, which the schedules topic is made with): the record did not exist before Time, so a change
	// logged before it cannot be the one that wrote it. A timestamp its writer chose proves nothing.
	Time    time.Time
	Stamped bool
}

// ClaimSkew is how much earlier than the record it claims a change may be logged and still be taken for the one
// that wrote it. A writer logs a change only once its record is acknowledged, but the change log and the
// schedules topic may have their leaders on two brokers, whose clocks differ by a little.
const ClaimSkew = time.Second

// Status is what the schedules topic says of a change record.
type Status string

const (
	// Confirmed: the schedules topic holds the record the change names, with its key and value.
	Confirmed Status = "confirmed"
	// Unconfirmed: that record is gone from the schedules topic (compaction keeps each schedule's newest).
	Unconfirmed Status = "unconfirmed"
	// Forged: the schedules topic contradicts it, it was logged before the record it claims existed, or an
	// earlier change claimed the same record.
	Forged Status = "forged"
)

// Verifier checks changes against the schedules topic (a backfill's against the backfills topic, a limit's
// against the limits topic, a calendar's against the calendars topic), in the change log's order.
type Verifier struct {
	// Records are the schedules topic's retained records by offset; End its end offset.
	Records map[int64]SchedulesRecord
	End     int64
	// Backfills and BackfillsEnd are the same of the backfills topic, for the backfill operations (BackfillsEnd
	// -1: the topic could not be read, and those changes are unconfirmed).
	Backfills    map[int64]SchedulesRecord
	BackfillsEnd int64
	// Limits and LimitsEnd are the same of the limits topic, for the limits' changes (LimitsEnd -1: the topic
	// could not be read, and those changes are unconfirmed).
	Limits    map[int64]SchedulesRecord
	LimitsEnd int64
	// Calendars and CalendarsEnd are the same of the calendars topic, for the calendars' changes (CalendarsEnd
	// -1: the topic could not be read, and those changes are unconfirmed).
	Calendars    map[int64]SchedulesRecord
	CalendarsEnd int64
	// Window, when set, is the oldest log time from which the changes given to Verify are all the change log
	// holds (ReadSchedule reads only the newest). A change whose record is older than Window is Unconfirmed: an
	// earlier claim of that record, not read, may have taken it.
	Window time.Time
	// The offsets claimed so far, of each topic.
	claimed, claimedBf, claimedLim, claimedCal map[int64]bool
}

// Verify returns what the schedules topic says of c, which the change log took at logged (its record's
// timestamp: the topic stamps LogAppendTime; zero when unknown). Call it in the change log's order: the first
// change to claim a schedules record once that record exists is the one its writer wrote right after it. A
// change logged before the record it claims (ClaimSkew aside) is forged, and leaves the record to the change
// that claims it next: a claim cannot be written ahead of the change it would hide.
func (v *Verifier) Verify(c Change, logged time.Time) Status {
	if c.Op == OpTrigger {
		return Unconfirmed // its record is on the work topic, which the change log's reader does not read
	}
	records, end, claimed := v.topic(c.Op)
	if end < 0 {
		return Unconfirmed // a topic that could not be read
	}
	if c.Offset >= end || claimed[c.Offset] {
		return Forged
	}
	r, ok := records[c.Offset]
	if !ok {
		claimed[c.Offset] = true
		return Unconfirmed
	}
	if r.Stamped && !logged.IsZero() && logged.Add(ClaimSkew).Before(r.Time) {
		return Forged // logged before the record existed: not its writer's
	}
	if IsBackfill(c.Op) {
		// The record is a request or cancellation of a backfill of c's schedule, as c says it wrote.
		var named struct {
			ID       string `json:"id"`
			Schedule string `json:"schedule"`
		}
		if !bytes.Equal(r.Value, c.After) || json.Unmarshal(r.Value, &named) != nil || c.Op == OpBackfill && named.Schedule != c.Schedule {
			return Forged
		}
	} else if c.bulk {
		if string(r.Key) != c.Schedule || (r.Value == nil) != c.deleted {
			return Forged // a bulk item names its schedule, and a tombstone or not: no definition to compare
		}
	} else if string(r.Key) != v.name(c) || !bytes.Equal(r.Value, c.After) && !(r.Value == nil && c.After == nil) {
		return Forged
	}
	claimed[c.Offset] = true
	if !v.Window.IsZero() && r.Time.Before(v.Window) {
		return Unconfirmed
	}
	return Confirmed
}

// topic returns the records, the end and the claims of the topic that holds the record of a change of op.
func (v *Verifier) topic(op string) (map[int64]SchedulesRecord, int64, map[int64]bool) {
	if v.claimed == nil {
		v.claimed, v.claimedBf, v.claimedLim, v.claimedCal = map[int64]bool{}, map[int64]bool{}, map[int64]bool{}, map[int64]bool{}
	}
	switch {
	case IsBackfill(op):
		return v.Backfills, v.BackfillsEnd, v.claimedBf
	case IsLimit(op):
		return v.Limits, v.LimitsEnd, v.claimedLim
	case IsCalendar(op):
		return v.Calendars, v.CalendarsEnd, v.claimedCal
	}
	return v.Records, v.End, v.claimed
}

// name is the key of the record c wrote on its topic: its schedule's name, its limit's or its calendar's.
func (v *Verifier) name(c Change) string {
	switch {
	case IsLimit(c.Op):
		return c.Limit
	case IsCalendar(c.Op):
		return c.Calendar
	}
	return c.Schedule
}
