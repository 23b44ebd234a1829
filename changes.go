package tickgroup

import (
	"cmp"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"time"

	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// A ChangeOption qualifies a change of Schedules (Put, Pause, Resume, Delete, Trigger, Apply, Write, WriteFile,
// Backfill, CancelBackfill, PutLimit, DeleteLimit, PutCalendar, DeleteCalendar): why it is made and by whom. Every
// change is recorded in the namespace's change log (ChangeLog) with them.
type ChangeOption func(*changeOpts)

type changeOpts struct {
	reason, by string
}

// Reason says why the change is made: it is kept in the change log, and a pause keeps it as its PauseReason
// (at most 1,024 bytes of printable text).
func Reason(text string) ChangeOption { return func(o *changeOpts) { o.reason = text } }

// By names who makes the change (a deploy job, a service), beside the operating-system user, the host and the
// Kafka principal, which the change log records by itself.
func By(name string) ChangeOption { return func(o *changeOpts) { o.by = name } }

func options(opts []ChangeOption) changeOpts {
	var o changeOpts
	for _, f := range opts {
		f(&o)
	}
	return o
}

// ErrInvalidChange is matched (errors.Is) by the error of a change that was refused before anything was written:
// its schedule, or what its ChangeOptions say (a Reason longer than 1,024 bytes or not printable text, a By
// longer than 256 bytes or not printable, a pause's end in the past), breaks a rule of the schedules topic or of the
// change log. The error names the field, as in "reason: 1,200 bytes, at most 1,024". A caller that takes changes
// from its users, a web console say, can answer it as bad input: nothing of the change took effect.
var ErrInvalidChange = errors.New("invalid change")

// invalidChange is an error that matches ErrInvalidChange, with err's message and err in its chain.
type invalidChange struct{ err error }

func (e invalidChange) Error() string   { return e.err.Error() }
func (e invalidChange) Unwrap() []error { return []error{ErrInvalidChange, e.err} }

// invalid returns err (nil: nil) as an ErrInvalidChange.
func invalid(err error) error {
	if err == nil || errors.Is(err, ErrInvalidChange) {
		return err
	}
	return invalidChange{err}
}

// check reports what of o the change log would refuse. Every change checks its options first, so that a change
// the change log cannot record is never made.
func (o changeOpts) check() error {
	if err := changelog.CheckText("reason", o.reason, changelog.MaxReason); err != nil {
		return invalid(err)
	}
	return invalid(changelog.CheckText("by", o.by, changelog.MaxWho))
}

// ChangeLogOp is what a change-log record's change did (ChangeRecord.Op), as `ticker schedule log` prints it.
type ChangeLogOp string

// The operations the change log records, one for each method of Schedules that makes a change.
const (
	ChangeLogPut    ChangeLogOp = "put"    // Put
	ChangeLogPause  ChangeLogOp = "pause"  // Pause
	ChangeLogResume ChangeLogOp = "resume" // Resume
	ChangeLogDelete ChangeLogOp = "delete" // Delete
	// ChangeLogApply is a put or a delete of Apply or Write, one record for each schedule written.
	ChangeLogApply   ChangeLogOp = "apply"
	ChangeLogTrigger ChangeLogOp = "trigger" // Trigger
	// ChangeLogBackfill and ChangeLogBackfillCancel are a backfill's request (Backfill) and its cancellation
	// (CancelBackfill): their records are on the backfills topic, not on the schedules topic.
	ChangeLogBackfill       ChangeLogOp = "backfill"
	ChangeLogBackfillCancel ChangeLogOp = "backfill_cancel"
	// ChangeLogLimitPut and ChangeLogLimitDelete are a limit's put (PutLimit, and WriteFile for the limits of an
	// apply file) and deletion (DeleteLimit): their records are on the limits topic, and ChangeRecord.Limit names
	// the limit.
	ChangeLogLimitPut    ChangeLogOp = "limit_put"
	ChangeLogLimitDelete ChangeLogOp = "limit_delete"
	// ChangeLogCalendarPut and ChangeLogCalendarDelete are a calendar's put (PutCalendar, and WriteFile for the
	// calendars of an apply file) and deletion (DeleteCalendar): their records are on the calendars topic, and
	// ChangeRecord.Calendar names the calendar.
	ChangeLogCalendarPut    ChangeLogOp = "calendar_put"
	ChangeLogCalendarDelete ChangeLogOp = "calendar_delete"
)

// ChangeRecord is one change of one schedule, of one limit or of one calendar, as the change log (<ns>.changes)
// records it.
type ChangeRecord struct {
	// Op is what the change did: one of the ChangeLogOp constants.
	Op ChangeLogOp
	// Schedule is the schedule changed; Limit the limit, for ChangeLogLimitPut and ChangeLogLimitDelete; Calendar
	// the calendar, for ChangeLogCalendarPut and ChangeLogCalendarDelete (Schedule is then empty).
	Schedule, Limit, Calendar string
	// At is when the writer made the change (its clock), LoggedAt when the broker took the record.
	At, LoggedAt time.Time
	// By is who made it: the Kafka principal where the writer knew it, the operating-system user and host, and
	// the name a Go caller gave (By).
	By     ChangeAuthor
	Reason string
	// Before and After are the definitions before and after the change (nil: none, for a creation or a
	// deletion).
	Before, After *Schedule
	// LimitBefore and LimitAfter are those of a limit's change (nil: none, and for a schedule's change).
	LimitBefore, LimitAfter *Limit
	// CalendarBefore and CalendarAfter are those of a calendar's change (nil: none, and for another change).
	CalendarBefore, CalendarAfter *Calendar
	// Version is the schedules-topic record the change wrote (the schedule's version); for a backfill's
	// change, the offset of its record on the backfills topic, for a limit's that on the limits topic, for a
	// calendar's that on the calendars topic.
	Version int64
	// Backfill is the backfill's ID, for ChangeLogBackfill and ChangeLogBackfillCancel (Before and After are
	// nil); Trigger the ID of a trigger's (first) tick, for ChangeLogTrigger (never confirmed: its record is on
	// the work topic).
	Backfill, Trigger string
	// Confirmed reports that the schedules topic (the backfills, limits or calendars topic, for theirs) still holds that
	// record, as the change says; false when compaction has removed it since (the change cannot be checked any
	// more). A change the topic contradicts is never returned (ChangeLogStats.Forged).
	Confirmed bool
	// Bulk, when not 0, is the number of changes logged with this one in a record of a bulk apply (BulkApply):
	// Before is then not recorded, and After is the schedules topic's record, known only while Confirmed.
	Bulk int
	// Deleted reports that the change deleted the schedule.
	Deleted bool
}

// ChangeAuthor is who made a change, as far as the writer knew.
type ChangeAuthor struct {
	Principal, User, Host, Name string
}

// String reads "deploy-job alice@host-1 (User:alice)" with the parts that are known.
func (a ChangeAuthor) String() string {
	return changelog.Who{Principal: a.Principal, User: a.User, Host: a.Host, Name: a.Name}.String()
}

// ChangeLogStats counts the change-log records that ChangeLog passed over.
type ChangeLogStats struct {
	// Invalid records did not decode as changes; Forged ones the schedules topic contradicts (another
	// definition at the version they name, a version logged after them, or a version an earlier change already
	// claimed).
	Invalid, Forged int
}

// ChangeLog returns the changes of schedule name ("": every schedule, limit and calendar) logged at or after since,
// oldest first.
//
// With a name, it is bounded by that schedule's changes, not by the namespace: it reads the change log from an
// hour before since on, decoding only name's records, keeps at most the newest 1,000 of them, and reads of the
// schedules and backfills topics only the records those changes name. Its stats then count name's records only,
// and a change whose record is older than the oldest change read is not Confirmed (an earlier claim of that
// record may lie before what was read). With "", it reads the whole change log and the whole schedules topic.
func (s *Schedules) ChangeLog(ctx context.Context, name string, since time.Time) ([]ChangeRecord, ChangeLogStats, error) {
	opts, err := s.k.internal().Opts(nil)
	if err != nil {
		return nil, ChangeLogStats{}, err
	}
	var (
		entries []changelog.Entry
		st      changelog.Stats
	)
	topics := changelog.Topics{Changes: s.names.Changes, Schedules: s.names.Schedules, Backfills: s.names.Backfills, Limits: s.names.Limits,
		Calendars: s.names.Calendars}
	if name != "" {
		entries, st, err = changelog.ReadSchedule(ctx, opts, topics, name, since)
	} else {
		entries, st, err = changelog.Read(ctx, opts, topics, func(_ changelog.Change, at time.Time) bool {
			return !at.Before(since)
		})
	}
	if err != nil {
		return nil, ChangeLogStats{}, err
	}
	out := make([]ChangeRecord, 0, len(entries))
	for _, e := range entries {
		out = append(out, changeRecord(e))
	}
	return out, ChangeLogStats{Invalid: st.Invalid, Forged: st.Forged}, nil
}

// changeRecord is the ChangeRecord of e.
func changeRecord(e changelog.Entry) ChangeRecord {
	r := ChangeRecord{Op: ChangeLogOp(e.Op), Schedule: e.Schedule, Limit: e.Limit, Calendar: e.Calendar, At: e.At, LoggedAt: e.Time, Reason: e.Reason, Version: e.Offset,
		By:        ChangeAuthor{Principal: e.By.Principal, User: e.By.User, Host: e.By.Host, Name: e.By.Name},
		Confirmed: e.Status == changelog.Confirmed, Trigger: e.Trigger, Bulk: e.Bulk}
	switch {
	case changelog.IsBackfill(e.Op):
		r.Backfill = changelog.BackfillID(e.After)
	case changelog.IsLimit(e.Op):
		r.LimitBefore, r.LimitAfter = publicLimit(changelog.DecodeLimit(e.Limit, e.Before)), publicLimit(changelog.DecodeLimit(e.Limit, e.After))
		return r
	case changelog.IsCalendar(e.Op):
		r.CalendarBefore = publicCalendar(changelog.DecodeCalendar(e.Calendar, e.Before))
		r.CalendarAfter = publicCalendar(changelog.DecodeCalendar(e.Calendar, e.After))
		return r
	}
	r.Deleted = !changelog.IsBackfill(e.Op) && e.Op != changelog.OpTrigger && e.Change.Deleted()
	if sp := changelog.Spec(e.Before); sp != nil {
		b := fromSpec(*sp)
		r.Before = &b
	}
	if sp := changelog.Spec(e.After); sp != nil {
		a := fromSpec(*sp)
		r.After = &a
	}
	return r
}

// changeRecords returns the change-log records of writes, made as op: what each replaces (from before, the
// schedules topic as read before the writes) and what it writes. Their offsets are set once the writes are done;
// each is checked as the change log will check it, so that a write the log would refuse is never made.
func (s *Schedules) changeRecords(op string, o changeOpts, before map[string]store.Entry, writes []store.Change) ([]changelog.Change, error) {
	who := s.who(o)
	now := time.Now().UTC()
	cs := make([]changelog.Change, 0, len(writes))
	for _, w := range writes {
		c := changelog.Change{Op: op, Schedule: w.Name, At: now, By: who, Reason: o.reason}
		if e, ok := before[w.Name]; ok {
			if b, err := schedule.Encode(e.Spec()); err == nil {
				c.Before = b
			}
		}
		if w.Op != store.OpDelete {
			b, err := schedule.Encode(w.Spec)
			if err != nil {
				return nil, invalid(err)
			}
			c.After = b
		}
		if _, err := changelog.Encode(c); err != nil {
			return nil, invalid(err)
		}
		cs = append(cs, c)
	}
	return cs, nil
}

// logChanges records cs in the change log, once their schedule records are written at offsets.
func (s *Schedules) logChanges(ctx context.Context, cs []changelog.Change, offsets []int64) error {
	cs = cs[:len(offsets)]
	for i := range cs {
		cs[i].Offset = offsets[i]
	}
	if err := changelog.Write(ctx, s.cl, s.names.Changes, cs...); err != nil {
		return fmt.Errorf("the schedules were written, but not their change-log record: %w", err)
	}
	return nil
}

// checkBulk checks the author and the reason of o as a bulk record of the change log will check them (name is
// a schedule of the apply): nothing is written of an apply the log would refuse.
func (s *Schedules) checkBulk(o changeOpts, name string) error {
	c := changelog.Change{Op: changelog.OpApplyBulk, At: time.Now().UTC(), By: s.who(o), Reason: o.reason, Items: []changelog.Item{{Schedule: name}}, Applied: 1}
	if _, err := changelog.Encode(c); err != nil {
		return invalid(err)
	}
	return nil
}

// logBulk records the changes of ws written at offsets (a prefix of ws, when a write failed) in the change log
// compactly: up to changelog.MaxBulk in a record, each by its schedule and offset, in the order of the offsets.
func (s *Schedules) logBulk(ctx context.Context, o changeOpts, ws []store.Change, offsets []int64) error {
	items := make([]changelog.Item, len(offsets))
	for i, off := range offsets {
		items[i] = changelog.Item{Schedule: ws[i].Name, Offset: off, Deleted: ws[i].Op == store.OpDelete}
	}
	slices.SortFunc(items, func(a, b changelog.Item) int { return cmp.Compare(a.Offset, b.Offset) })
	who, now := s.who(o), time.Now().UTC()
	var cs []changelog.Change
	for chunk := range slices.Chunk(items, changelog.MaxBulk) {
		cs = append(cs, changelog.Change{Op: changelog.OpApplyBulk, At: now, By: who, Reason: o.reason, Items: chunk, Offset: chunk[0].Offset,
			Applied: len(items)})
	}
	if err := changelog.Write(ctx, s.cl, s.names.Changes, cs...); err != nil {
		return fmt.Errorf("the schedules were written, but not their change-log records: %w", err)
	}
	return nil
}

// who is the author of this client's changes: o's By, checked by o.check, and what the library finds out by
// itself (the Kafka principal, the host, the operating-system user), made valid text so that an odd host name
// never makes a change fail.
func (s *Schedules) who(o changeOpts) changelog.Who {
	w := changelog.Who{Name: o.by, Principal: changelog.CleanText(principal(s.k), changelog.MaxWho)}
	host, _ := os.Hostname()
	w.Host = changelog.CleanText(host, changelog.MaxWho)
	if u, err := user.Current(); err == nil {
		w.User = changelog.CleanText(u.Username, changelog.MaxWho)
	}
	return w
}

// backfillBy is who, as a backfill's record names its author: at most backfill.MaxReason bytes.
func (s *Schedules) backfillBy(o changeOpts) string {
	return changelog.CleanText(s.who(o).String(), backfill.MaxReason)
}

// principal is the Kafka principal of k's connections where the client can tell it: its SASL user, else the
// subject of its TLS client certificate ("" when neither, or when the certificate cannot be read).
func principal(k KafkaConfig) string {
	if k.SASL.Username != "" {
		return "User:" + k.SASL.Username
	}
	if k.TLS.CertFile == "" {
		return ""
	}
	b, err := os.ReadFile(k.TLS.CertFile)
	if err != nil {
		return ""
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return ""
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return ""
	}
	return "User:" + c.Subject.String()
}

// errPast is Pause's refusal of an end that is not in the future.
var errPast = errors.New("the end of a pause must be in the future")
