package tickgroup

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/backfill"
	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Reprocess says which slots of its range a backfill runs (BackfillOptions.Reprocess).
type Reprocess string

// The Reprocess choices. A slot's status is its ticks' last outcomes, read from the results topic: those of
// its scheduled ticks and of earlier backfills of it (a slot older than the results topic's retention has
// none).
const (
	// ReprocessNone, the default, runs only the slots that have no outcome: the slots that never ran.
	ReprocessNone Reprocess = "none"
	// ReprocessFailed also runs the slots whose last outcome is not ok (failed, dead-lettered, skipped, ...).
	ReprocessFailed Reprocess = "failed"
	// ReprocessAll runs every slot of the range.
	ReprocessAll Reprocess = "all"
)

// MaxBackfillSlots is the most slots one backfill runs: split a longer range into several backfills.
const MaxBackfillSlots = 10_000

// MaxBackfillRunning is the most a backfill's BackfillOptions.MaxRunning may be.
const MaxBackfillRunning = 100

// BackfillOptions are a backfill's choices; the zero value runs the slots that never ran, one at a time.
type BackfillOptions struct {
	// Reprocess is which slots run (default ReprocessNone).
	Reprocess Reprocess
	// MaxRunning is how many of the backfill's slots the leader keeps emitted without an outcome at once (default
	// 1, at most 100). The runs of one shard of a schedule never overlap, backfill or not: a value above 1 lets
	// the next slots wait at the worker rather than at the leader.
	MaxRunning int
	// DryRun returns the plan and writes nothing.
	DryRun bool
}

// Backfill is a backfill's plan: every slot of its range and whether it runs.
type Backfill struct {
	// ID names the backfill (empty on a dry run); its ticks' IDs end with ~backfill-ID.
	ID       string
	Schedule string
	// From and To are the range: the schedule's slots at or after From and before To.
	From, To   time.Time
	Reprocess  Reprocess
	MaxRunning int
	// Slots are every slot of the range, in order, with what the backfill does with each: the slots its calendars
	// leave (Schedule.Exclude, as the calendars are now), as the leader's.
	Slots []BackfillSlot
	// Excluded counts the slots of the range that the schedule's calendars exclude: they are not its slots, and
	// the backfill runs none of them (at most 1,000,000 are counted).
	Excluded int
}

// BackfillSlot is one slot of a backfill's range.
type BackfillSlot struct {
	Slot time.Time
	// Status is what the slot's last outcomes say, one for each shard: StatusOK when every shard's is ok, else
	// the Status of a shard whose outcome is not ok, StatusMissing when some shards have none, "" when none
	// has (the slot never ran, or its outcomes are older than the results topic keeps).
	Status Status
	// Run says whether the backfill runs the slot.
	Run bool
}

// StatusMissing is a BackfillSlot's Status when some of the slot's shards have an outcome and others have none.
// No Outcome has it.
const StatusMissing Status = "missing"

// Runs returns the slots b runs.
func (b Backfill) Runs() []time.Time {
	var out []time.Time
	for _, s := range b.Slots {
		if s.Run {
			out = append(out, s.Slot)
		}
	}
	return out
}

// ErrNothingToBackfill is returned by Backfill when no slot of the range is to run.
var ErrNothingToBackfill = errors.New("no slot of the range is to run")

// Backfill runs the past slots of schedule name in [from, to) again: every slot of the range by the schedule's
// definition and zone (its pause aside; slots before its start or after its end are not its slots, nor are
// those its calendars exclude, as they are now), before the schedule was created too, that opts.Reprocess
// selects. The leader of the schedule emits one tick per slot and
// shard, marked (Tick.Backfill, TICK_BACKFILL=1), with an ID that collides with no other tick, at most
// opts.MaxRunning slots without an outcome at once, in slot order; its progress commits in the same
// transactions as its ticks, so a leader killed midway loses and doubles none. A backfill runs whether or not
// the schedule is paused; CancelBackfill stops it. to must not be in the future, and the range may hold at most
// MaxBackfillSlots slots.
//
// It returns the plan; with opts.DryRun it writes nothing. The backfill goes to the change log (op backfill)
// with opts' Reason and By; nothing is written when they are invalid (ErrInvalidChange).
func (s *Schedules) Backfill(ctx context.Context, name string, from, to time.Time, o BackfillOptions, opts ...ChangeOption) (Backfill, error) {
	co := options(opts)
	if err := co.check(); err != nil {
		return Backfill{}, err
	}
	now := time.Now()
	re, err := backfill.ParseReprocess(string(o.Reprocess))
	if err != nil {
		return Backfill{}, err
	}
	if o.MaxRunning == 0 {
		o.MaxRunning = 1
	}
	switch {
	case o.MaxRunning < 1 || o.MaxRunning > backfill.MaxRunning:
		return Backfill{}, fmt.Errorf("backfill: max running %d: want 1 to %d", o.MaxRunning, backfill.MaxRunning)
	case !from.Before(to):
		return Backfill{}, fmt.Errorf("backfill: from %s is not before to %s", from.Format(time.RFC3339), to.Format(time.RFC3339))
	case to.After(now):
		return Backfill{}, fmt.Errorf("backfill: to %s is in the future: a backfill runs past slots only", to.Format(time.RFC3339))
	}
	e, err := s.get(ctx, name)
	if err != nil {
		return Backfill{}, err
	}
	spec := e.Spec()
	var cals map[string]*calendar.Calendar
	if len(spec.Exclude) > 0 {
		if cals, err = s.loadCalendars(ctx); err != nil {
			return Backfill{}, err
		}
	}
	slots, excluded, err := backfill.Slots(spec, from, to, backfill.MaxSlots, calendar.Getter(cals))
	if err != nil {
		return Backfill{}, err
	}
	if len(slots) > backfill.MaxSlots {
		return Backfill{}, fmt.Errorf("backfill: the range holds more than %d slots of %s: split it", backfill.MaxSlots, name)
	}
	plan := Backfill{Schedule: name, From: from.UTC(), To: to.UTC(), Reprocess: Reprocess(re), MaxRunning: o.MaxRunning, Excluded: excluded}
	var outs backfill.Outcomes
	if len(slots) > 0 { // with all too: the plan shows each slot's last outcome
		if outs, err = s.outcomes(ctx, e.Schedule.Pool(), name, e.Schedule.Shards(), e.Schedule.Limit(), slots[0]); err != nil {
			return Backfill{}, err
		}
	}
	var run []time.Time
	for _, slot := range slots {
		st := outs.Status(slot, e.Schedule.Shards())
		r := re.Run(st)
		plan.Slots = append(plan.Slots, BackfillSlot{Slot: slot, Status: Status(st), Run: r})
		if r {
			run = append(run, slot)
		}
	}
	if o.DryRun {
		return plan, nil
	}
	if len(run) == 0 {
		return plan, ErrNothingToBackfill
	}
	if err := s.ensureBackfillTopics(ctx); err != nil {
		return Backfill{}, err
	}
	req := backfill.Request{ID: backfill.NewID(now), Schedule: name, From: plan.From, To: plan.To, Reprocess: re, Skipped: len(slots) - len(run),
		Slots: run, MaxRunning: o.MaxRunning, ScheduleVersion: e.Version, CreatedAt: now.UTC(), By: s.backfillBy(co), Reason: co.reason}
	v, err := backfill.EncodeRequest(req)
	if err != nil {
		return Backfill{}, invalid(err)
	}
	// The change-log record is made and checked before the request is written: a backfill the log would refuse
	// is never requested.
	c := changelog.Change{Op: changelog.OpBackfill, Schedule: name, At: now.UTC(), By: s.who(co), Reason: co.reason, After: v}
	if _, err := changelog.Encode(c); err != nil {
		return Backfill{}, invalid(err)
	}
	if c.Offset, err = s.writeBackfillRecord(ctx, req.ID, v); err != nil {
		return Backfill{}, err
	}
	plan.ID = req.ID
	if err := changelog.Write(ctx, s.cl, s.names.Changes, c); err != nil {
		return plan, fmt.Errorf("the backfill was requested, but not its change-log record: %w", err)
	}
	return plan, nil
}

// outcomes reads the last outcomes of schedule name's slots from first on (an hour earlier, for the workers'
// clock skew).
func (s *Schedules) outcomes(ctx context.Context, pool, name string, shards int, limit string, first time.Time) (backfill.Outcomes, error) {
	opts, err := s.k.internal().Opts(nil)
	if err != nil {
		return nil, err
	}
	n := s.names.Pool(pool)
	adm := kadm.NewClient(s.cl)
	workParts, err := kafka.WorkPartitions(ctx, adm, n.Work)
	if err != nil {
		return nil, err
	}
	return backfill.ReadOutcomes(ctx, opts, adm, n.Results, name, shards, limit, workParts, first.Add(-time.Hour))
}

// ensureBackfillTopics creates the backfill topics where this principal may; otherwise they must exist.
func (s *Schedules) ensureBackfillTopics(ctx context.Context) error {
	err := kafka.EnsureTopics(ctx, kadm.NewClient(s.cl), s.names, kafka.TopicOptions{Needs: []string{s.names.Backfills, s.names.BackfillProgress}})
	if err != nil {
		return fmt.Errorf("%w (the backfill topics are made by ticker init)", err)
	}
	return nil
}

// writeBackfillRecord writes a request or cancellation and returns its offset.
func (s *Schedules) writeBackfillRecord(ctx context.Context, key string, v []byte) (int64, error) {
	r, err := s.cl.ProduceSync(ctx, &kgo.Record{Topic: s.names.Backfills, Partition: 0, Key: []byte(key), Value: v}).First()
	if err != nil {
		return 0, fmt.Errorf("writing to %s: %w", s.names.Backfills, kafka.NeedACL(err, "Write", "topic", s.names.Backfills))
	}
	return r.Offset, nil
}

// BackfillStatus is a backfill as the backfill topics hold it.
type BackfillStatus struct {
	ID        string
	Schedule  string
	From, To  time.Time
	Reprocess Reprocess
	// Slots are the slots it runs, Skipped the slots of its range that Reprocess left out.
	Slots      []time.Time
	Skipped    int
	MaxRunning int
	// Emitted counts the slots the leader has emitted (Slots[:Emitted]); Running those of them without an
	// outcome yet.
	Emitted, Running int
	// State is where it stands: one of the BackfillState constants.
	State     BackfillState
	CreatedAt time.Time
	By        string
	Reason    string
	// UpdatedAt is when the leader last committed its progress (zero: never).
	UpdatedAt time.Time
}

// BackfillState is where a backfill stands (BackfillStatus.State): waiting, running, or why it ended.
type BackfillState string

// The states of a backfill.
const (
	BackfillPending    BackfillState = "pending"    // no leader has taken it up yet
	BackfillRunning    BackfillState = "running"    // its leader emits its slots
	BackfillCancelling BackfillState = "cancelling" // cancelled (CancelBackfill), its leader has not ended it yet
	// The ends: every slot ran, it was cancelled, its schedule was deleted, or the leader refused it (the
	// request was written again under its ID with other content, or names a slot still to come).
	BackfillDone            BackfillState = "done"
	BackfillCancelled       BackfillState = "cancelled"
	BackfillScheduleDeleted BackfillState = "schedule deleted"
	BackfillRefused         BackfillState = "refused"
	// BackfillRewritten is refused too: its request was written again under an ID in use, with another content
	// than the one its leader's progress is of.
	BackfillRewritten BackfillState = "refused: request rewritten under an ID in use"
)

// Ended reports whether a backfill in state st has ended: none of its slots is emitted any more.
func (st BackfillState) Ended() bool {
	switch st {
	case BackfillPending, BackfillRunning, BackfillCancelling:
		return false
	}
	return true
}

// Backfills returns every backfill the topics hold, oldest first (ended ones too).
func (s *Schedules) Backfills(ctx context.Context) ([]BackfillStatus, error) {
	opts, err := s.k.internal().Opts(nil)
	if err != nil {
		return nil, err
	}
	f, err := backfill.Read(ctx, opts, kadm.NewClient(s.cl), s.names.Backfills, s.names.BackfillProgress)
	if err != nil {
		return nil, err
	}
	var out []BackfillStatus
	for _, b := range f.Sorted() {
		r := b.Request
		st := BackfillStatus{ID: r.ID, Schedule: r.Schedule, From: r.From, To: r.To, Reprocess: Reprocess(r.Reprocess), Slots: r.Slots,
			Skipped: r.Skipped, MaxRunning: r.MaxRunning, State: BackfillState(b.State()), CreatedAt: r.CreatedAt, By: r.By, Reason: r.Reason}
		if p := b.Progress; p != nil {
			st.Emitted, st.Running, st.UpdatedAt = p.Next, len(p.Running), p.At
		}
		out = append(out, st)
	}
	return out, nil
}

// CancelBackfill stops backfill id: its leader emits none of its slots after the cancellation; the ones
// emitted run. It goes to the change log (op backfill_cancel); nothing is written when opts are invalid
// (ErrInvalidChange).
func (s *Schedules) CancelBackfill(ctx context.Context, id string, opts ...ChangeOption) error {
	co := options(opts)
	if err := co.check(); err != nil {
		return err
	}
	all, err := s.Backfills(ctx)
	if err != nil {
		return err
	}
	var b *BackfillStatus
	for i := range all {
		if all[i].ID == id {
			b = &all[i]
		}
	}
	switch {
	case b == nil:
		return fmt.Errorf("backfill %s: %w", id, ErrNotFound)
	case b.State.Ended():
		return fmt.Errorf("backfill %s has ended (%s)", id, b.State)
	}
	now := time.Now().UTC()
	v, err := backfill.EncodeCancel(backfill.Cancel{ID: id, At: now, By: s.backfillBy(co), Reason: co.reason})
	if err != nil {
		return invalid(err)
	}
	c := changelog.Change{Op: changelog.OpBackfillCancel, Schedule: b.Schedule, At: now, By: s.who(co), Reason: co.reason, After: v}
	if _, err := changelog.Encode(c); err != nil {
		return invalid(err)
	}
	if c.Offset, err = s.writeBackfillRecord(ctx, backfill.CancelKey(id), v); err != nil {
		return err
	}
	if err := changelog.Write(ctx, s.cl, s.names.Changes, c); err != nil {
		return fmt.Errorf("the backfill was cancelled, but not logged in the change log: %w", err)
	}
	return nil
}
