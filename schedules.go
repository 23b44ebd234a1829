package tickgroup

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// ErrNotFound is returned for a schedule the namespace does not have.
var ErrNotFound = errors.New("not found")

// Schedules writes and reads a namespace's schedules. Every write is one record on the schedules topic, which
// the leader follows: a change applies from the first slot the leader has not yet emitted, and a pause or a
// deletion cancels the ticks it emitted ahead (only the leader's transactional cancels take effect). Its methods
// are safe for concurrent use.
type Schedules struct {
	k     KafkaConfig
	cl    *kgo.Client
	names kafka.Names
}

// Stored is a schedule as the schedules topic holds it.
type Stored struct {
	Schedule Schedule
	// Version is the offset of the schedule's record: the version the ticks of its slots carry.
	Version int64
	// UpdatedAt is the record's time: slots at or before it are never caught up.
	UpdatedAt time.Time
	// Catchup is the catch-up policy in effect, the default filled in (the leader's reading of the schedule).
	Catchup Catchup
}

// ChangeOp is the kind of a Change.
type ChangeOp string

// The kinds of change.
const (
	ChangeCreate  ChangeOp = "create"  // a schedule the namespace does not have
	ChangeReplace ChangeOp = "replace" // a schedule whose definition differs
	ChangeDelete  ChangeOp = "delete"  // a schedule the wanted list does not name (Plan and Apply with prune)
)

// changeOpSymbols are the ops as a diff writes them, as package store takes them too.
var changeOpSymbols = map[ChangeOp]store.Op{ChangeCreate: store.OpCreate, ChangeReplace: store.OpReplace, ChangeDelete: store.OpDelete}

// Symbol is op as a diff writes it, as `ticker schedule apply` prints it: "+" for ChangeCreate, "~" for
// ChangeReplace, "-" for ChangeDelete ("?" for any other value).
func (op ChangeOp) Symbol() string {
	if s, ok := changeOpSymbols[op]; ok {
		return string(s)
	}
	return "?"
}

// Change is one write of Plan, Apply and Write.
type Change struct {
	// Op is what the write does.
	Op ChangeOp
	// Name is the schedule's name.
	Name string
	// Schedule is the definition to write, for ChangeCreate and ChangeReplace; the zero Schedule for
	// ChangeDelete.
	Schedule Schedule
}

// internal is c as package store takes it.
func (c Change) internal() store.Change {
	return store.Change{Op: changeOpSymbols[c.Op], Name: c.Name, Spec: c.Schedule.spec()}
}

// check reports what makes c no change to write: a definition of another schedule, or one the rules refuse. A
// deletion needs only a name that a schedule can have (one an earlier release wrote too).
func (c Change) check() error {
	switch c.Op {
	case ChangeCreate, ChangeReplace:
		if c.Schedule.Name != c.Name {
			return fmt.Errorf("change %s %s: the definition is of %s", c.Op, errlimit.Quote(c.Name), errlimit.Quote(c.Schedule.Name))
		}
		return c.Schedule.Validate()
	case ChangeDelete:
		if !schedule.ValidName(c.Name) {
			return fmt.Errorf("change %s %s: no schedule can have that name", c.Op, errlimit.Quote(c.Name))
		}
		return nil
	}
	return fmt.Errorf("change %s of %s: want op create, replace or delete", errlimit.Quote(string(c.Op)), errlimit.Quote(c.Name))
}

// fromChange is the Change of c.
func fromChange(c store.Change) Change {
	var op ChangeOp
	for o, sym := range changeOpSymbols {
		if sym == c.Op {
			op = o
		}
	}
	return Change{Op: op, Name: c.Name, Schedule: fromSpec(c.Spec)}
}

// NewSchedules returns a client of k's namespace. Close it when done.
func NewSchedules(k KafkaConfig) (*Schedules, error) {
	opts, err := k.internal().Opts(nil)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return &Schedules{k: k, cl: cl, names: k.internal().Names()}, nil
}

// Close releases the client.
func (s *Schedules) Close() { s.cl.Close() }

// Put validates sched and writes it, creating the schedules topic if it is missing, and records the change in
// the change log. Nothing is written when it or opts are invalid, when it names a limit (Schedule.Limit) the
// namespace does not have or one of another pool, or when it excludes a calendar (Schedule.Exclude) the
// namespace does not have (ErrInvalidChange). It reads the schedules topic
// to record the definition it replaces: to write many schedules, Apply (or Plan and Write) reads it once for all
// of them.
func (s *Schedules) Put(ctx context.Context, sched Schedule, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	if err := sched.Validate(); err != nil {
		return invalid(err)
	}
	if err := s.ensureTopic(ctx); err != nil {
		return err
	}
	if err := s.checkLimits(ctx, []schedule.Spec{sched.spec()}); err != nil {
		return err
	}
	if err := s.checkCalendars(ctx, []schedule.Spec{sched.spec()}); err != nil {
		return err
	}
	if err := s.ensurePools(ctx, sched.Pool); err != nil {
		return err
	}
	current, err := s.load(ctx)
	if err != nil {
		return err
	}
	return s.write(ctx, changelog.OpPut, o, current, []store.Change{{Op: store.OpReplace, Name: sched.Name, Spec: sched.spec()}})
}

// BulkApply is the number of changes from which Write (Apply, WriteFile) logs them compactly: up to 2,000 in a
// change-log record, each by its schedule and version only, rather than one record per change with its
// definitions before and after. A million changes then cost the change log about 30 MB rather than a record
// each. Such a change reads back (ChangeLog) with Bulk set: its definition before is not recorded, and its
// definition after is the schedules topic's record while compaction keeps it.
const BulkApply = 1000

// write writes the schedule records of ws and logs them as op, with what current held before. Their change-log
// records are made and checked first: nothing is written of a change the log would refuse. An apply of
// BulkApply changes or more is logged compactly (logBulk).
func (s *Schedules) write(ctx context.Context, op string, o changeOpts, current map[string]store.Entry, ws []store.Change) error {
	if err := checkChains(current, ws); err != nil {
		return err
	}
	return s.writeChecked(ctx, op, o, current, ws)
}

// writeChecked is write of changes whose chains and gates are checked (or that change none): current needs to
// hold only the schedules ws change.
func (s *Schedules) writeChecked(ctx context.Context, op string, o changeOpts, current map[string]store.Entry, ws []store.Change) error {
	bulk := op == changelog.OpApply && len(ws) >= BulkApply
	var cs []changelog.Change
	var err error
	if bulk {
		err = s.checkBulk(o, ws[0].Name)
	} else {
		cs, err = s.changeRecords(op, o, current, ws)
	}
	if err != nil {
		return err
	}
	offsets, err := store.Write(ctx, s.cl, s.names.Schedules, ws)
	if len(offsets) > 0 {
		// What was written is logged, even when a later write failed.
		var lerr error
		if bulk {
			lerr = s.logBulk(ctx, o, ws, offsets)
		} else {
			lerr = s.logChanges(ctx, cs, offsets)
		}
		if lerr != nil {
			return errors.Join(err, lerr)
		}
	}
	return err
}

// ensurePools checks that the topics of each pool named exist, creating them where this principal may: a
// schedule is never written for a pool whose ticks would have nowhere to go (the leader would stop at it).
func (s *Schedules) ensurePools(ctx context.Context, pools ...string) error {
	seen := map[string]bool{}
	for _, pool := range pools {
		n := s.names.Pool(pool)
		if n.PoolName == "" || seen[n.PoolName] {
			continue
		}
		seen[n.PoolName] = true
		if _, err := kafka.EnsurePoolTopics(ctx, kadm.NewClient(s.cl), n, kafka.TopicOptions{}); err != nil {
			return fmt.Errorf("%w (create the pool's topics first: ticker init --pool %s)", err, n.PoolName)
		}
	}
	return nil
}

// ensureTopic creates the schedules topic and the change log if they are missing: an operator's principal needs
// no permission on the namespace's other topics.
func (s *Schedules) ensureTopic(ctx context.Context) error {
	return kafka.EnsureTopics(ctx, kadm.NewClient(s.cl), s.names, kafka.TopicOptions{Needs: []string{s.names.Schedules, s.names.Changes}})
}

// List returns every schedule, sorted by name. It reads the whole schedules topic.
func (s *Schedules) List(ctx context.Context) ([]Stored, error) {
	current, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	var out []Stored
	for _, e := range store.Sorted(current) {
		out = append(out, stored(e))
	}
	return out, nil
}

// Get returns the schedule name, or ErrNotFound.
func (s *Schedules) Get(ctx context.Context, name string) (Stored, error) {
	e, err := s.get(ctx, name)
	if err != nil {
		return Stored{}, err
	}
	return stored(e), nil
}

// Next returns the next n slots that the stored schedule name will emit, after now: none while it is paused
// without an end (a resume emits from the first slot after it), the first at or after its end for a pause
// with one (PausedUntil), fewer when its End comes first; none on the days its calendars exclude (Exclude), as
// they are now. A schedule excluding a calendar the namespace does not have is an error: its leader waits for it.
func (s *Schedules) Next(ctx context.Context, name string, n int) ([]time.Time, error) {
	e, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	if e.Schedule.Paused() {
		return nil, nil
	}
	sched := e.Schedule
	if len(sched.Exclude()) > 0 {
		cals, err := s.loadCalendars(ctx)
		if err != nil {
			return nil, err
		}
		if sched, err = excluding(sched, cals); err != nil {
			return nil, err
		}
	}
	return sched.Upcoming(time.Now(), n), nil
}

// Pause stops the emission of name's slots; slots passed while it is paused are never caught up. A non-zero
// until ends the pause then, as a resume then would (the first slot at or after until runs): it must be in the
// future. The zero time pauses it until Resume. With Reason, the schedule shows why it is paused.
func (s *Schedules) Pause(ctx context.Context, name string, until time.Time, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	if !until.IsZero() && !until.After(time.Now()) {
		return invalid(fmt.Errorf("pausing %s until %s: %w", name, until.Format(time.RFC3339), errPast))
	}
	return s.setPaused(ctx, name, true, until, o, changelog.OpPause)
}

// Resume lets name's slots be emitted again, from the first one after the resumption; the pause's end and
// reason go with it. Its own Reason goes to the change log only, and is checked as every change's is.
func (s *Schedules) Resume(ctx context.Context, name string, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	return s.setPaused(ctx, name, false, time.Time{}, o, changelog.OpResume)
}

// setPaused writes name paused (until until, when not zero) or resumed, as change op.
func (s *Schedules) setPaused(ctx context.Context, name string, paused bool, until time.Time, o changeOpts, op string) error {
	if err := s.ensureTopic(ctx); err != nil {
		return err
	}
	e, err := s.get(ctx, name)
	if err != nil {
		return err
	}
	spec := e.Spec()
	spec.Paused, spec.PausedUntil, spec.PauseReason = paused, nil, ""
	if paused {
		spec.PauseReason = o.reason
		if !until.IsZero() {
			u := until.UTC()
			spec.PausedUntil = &u
		}
	}
	if err := spec.Validate(); err != nil {
		return invalid(err)
	}
	// A pause changes no chain or gate: nothing of the other schedules is needed to check it.
	return s.writeChecked(ctx, op, o, map[string]store.Entry{name: e}, []store.Change{{Op: store.OpReplace, Name: name, Spec: spec}})
}

// Delete removes name: no slot of it is emitted any more.
func (s *Schedules) Delete(ctx context.Context, name string, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	if err := s.ensureTopic(ctx); err != nil {
		return err
	}
	current, err := s.load(ctx)
	if err != nil {
		return err
	}
	if _, ok := current[name]; !ok {
		return s.notFound(name)
	}
	return s.write(ctx, changelog.OpDelete, o, current, []store.Change{{Op: store.OpDelete, Name: name}})
}

// Trigger asks for one run of name now, outside its schedule, one tick per shard, and returns their IDs. A
// trigger's ID can never equal a scheduled slot's, and it does not wait behind the schedule's held ticks, only
// behind a run of the same shard under way. It goes to the change log (op trigger) with opts' Reason and By;
// nothing is written when they are invalid (ErrInvalidChange).
func (s *Schedules) Trigger(ctx context.Context, name string, opts ...ChangeOption) ([]string, error) {
	co := options(opts)
	if err := co.check(); err != nil {
		return nil, err
	}
	e, err := s.get(ctx, name)
	if err != nil {
		return nil, err
	}
	spec := e.Spec()
	work := s.names.Pool(spec.Pool).Work // the trigger runs in the schedule's pool
	partitions, err := kafka.WorkPartitions(ctx, kadm.NewClient(s.cl), work)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, 4)
	_, _ = rand.Read(nonce)
	src := tick.Source{Schedule: spec.Name, Shards: spec.Shards, Payload: spec.Payload, Version: e.Version, Deadline: time.Duration(spec.Deadline),
		Metrics: spec.Metrics, Timeout: time.Duration(spec.Timeout), MaxAttempts: spec.MaxAttempts, Limit: spec.Limit, Priority: spec.Priority}
	var recs []*kgo.Record
	for _, t := range src.Trigger(time.Now().UTC(), hex.EncodeToString(nonce)) {
		v, err := tick.Encode(t)
		if err != nil {
			return nil, err
		}
		recs = append(recs, &kgo.Record{Topic: work, Partition: t.Partition(partitions), Key: []byte(t.ID), Value: v})
	}
	ids := make([]string, len(recs))
	for i, r := range recs {
		ids[i] = string(r.Key)
	}
	// The change-log record is made and checked before the ticks are written: a trigger the log would refuse
	// is never made.
	c := changelog.Change{Op: changelog.OpTrigger, Schedule: spec.Name, At: time.Now().UTC(), By: s.who(co), Reason: co.reason, Trigger: ids[0]}
	if _, err := changelog.Encode(c); err != nil {
		return nil, invalid(err)
	}
	end := traceTrigger(ctx, recs)
	err = s.cl.ProduceSync(ctx, recs...).FirstErr()
	end(err)
	if err != nil {
		return nil, fmt.Errorf("triggering %s: %w", spec.Name, err)
	}
	c.Offset = recs[0].Offset
	if err := changelog.Write(ctx, s.cl, s.names.Changes, c); err != nil {
		return ids, fmt.Errorf("the trigger was written, but not its change-log record: %w", err)
	}
	return ids, nil
}

// Plan returns the changes that make the namespace's schedules match want (with prune, deleting those want does
// not list), without writing them (it creates the schedules topic if it is missing). A schedule already as
// wanted is not rewritten. An invalid schedule of want, one naming a limit the namespace does not have or one of
// another pool, or one excluding a calendar the namespace does not have, is an ErrInvalidChange (PlanFile plans
// calendars, limits and schedules together).
func (s *Schedules) Plan(ctx context.Context, want []Schedule, prune bool) ([]Change, error) {
	specs := make([]schedule.Spec, len(want))
	for i, sc := range want {
		specs[i] = sc.spec()
		if err := specs[i].ValidateNew(); err != nil {
			return nil, invalid(err)
		}
	}
	if err := s.ensureTopic(ctx); err != nil {
		return nil, err
	}
	if err := s.checkLimits(ctx, specs); err != nil {
		return nil, err
	}
	if err := s.checkCalendars(ctx, specs); err != nil {
		return nil, err
	}
	current, err := s.load(ctx)
	if err != nil {
		return nil, err
	}
	var changes []Change
	for _, c := range store.Diff(current, specs, prune) {
		changes = append(changes, fromChange(c))
	}
	return changes, nil
}

// Apply writes the changes Plan returns, as Write does, and returns them.
func (s *Schedules) Apply(ctx context.Context, want []Schedule, prune bool, opts ...ChangeOption) ([]Change, error) {
	if err := options(opts).check(); err != nil {
		return nil, err
	}
	changes, err := s.Plan(ctx, want, prune)
	if err != nil {
		return nil, err
	}
	return changes, s.Write(ctx, changes, opts...)
}

// Write writes changes (from Plan) in order and stops at the first error, creating the schedules topic if it is
// missing, and records each in the change log. It first checks that the topics of every pool the schedules name
// exist, creating them where this principal may, as Put does: nothing is written for a pool whose ticks would
// have nowhere to go. Every change and opts are checked first: nothing is written when one is invalid, names a
// limit the namespace does not have or one of another pool, or excludes a calendar the namespace does not have
// (ErrInvalidChange).
func (s *Schedules) Write(ctx context.Context, changes []Change, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	for _, c := range changes {
		if err := c.check(); err != nil {
			return invalid(err)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	if err := s.ensureTopic(ctx); err != nil {
		return err
	}
	pools := make([]string, len(changes))
	writes := make([]store.Change, len(changes))
	for i, c := range changes {
		pools[i], writes[i] = c.Schedule.Pool, c.internal()
	}
	if err := s.checkLimits(ctx, written(writes)); err != nil {
		return err
	}
	if err := s.checkCalendars(ctx, written(writes)); err != nil {
		return err
	}
	if err := s.ensurePools(ctx, pools...); err != nil {
		return err
	}
	current, err := s.load(ctx)
	if err != nil {
		return err
	}
	return s.write(ctx, changelog.OpApply, o, current, writes)
}

// written returns the definitions ws write (not their deletions).
func written(ws []store.Change) []schedule.Spec {
	out := make([]schedule.Spec, 0, len(ws))
	for _, w := range ws {
		if w.Op != store.OpDelete {
			out = append(out, w.Spec)
		}
	}
	return out
}

func (s *Schedules) load(ctx context.Context) (map[string]store.Entry, error) {
	opts, err := s.k.internal().Opts(nil)
	if err != nil {
		return nil, err
	}
	current, _, err := store.Load(ctx, opts, s.names.Schedules)
	return current, err
}

// get reads name's schedule: the schedules topic's records of that key only, so that a change of one schedule
// costs the memory of one, whatever the namespace holds.
func (s *Schedules) get(ctx context.Context, name string) (store.Entry, error) {
	opts, err := s.k.internal().Opts(nil)
	if err != nil {
		return store.Entry{}, err
	}
	e, _, ok, err := store.LoadOne(ctx, opts, s.names.Schedules, name)
	if err != nil {
		return store.Entry{}, err
	}
	if !ok {
		return store.Entry{}, s.notFound(name)
	}
	return e, nil
}

func (s *Schedules) notFound(name string) error {
	return fmt.Errorf("schedule %q in namespace %q: %w", name, cmp.Or(s.k.Namespace, kafka.DefaultNamespace), ErrNotFound)
}

func stored(e store.Entry) Stored {
	return Stored{Schedule: fromSpec(e.Spec()), Version: e.Version, UpdatedAt: e.UpdatedAt, Catchup: Catchup(e.Schedule.Catchup())}
}
