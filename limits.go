package tickgroup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Limit is a named limit on the runs of the schedules that name it (Schedule.Limit): at most Concurrency runs at
// once and at most Rate starts in any Window, across every worker of its Pool. The workers of the pool keep it:
// every tick of a limit goes to one work partition, whose owner starts them (the others wait, the higher
// Schedule.Priority first). Concurrency, Rate or both are set; zero is no such bound.
//
// Limits are kept in the namespace's limits topic (<ns>.limits), written by PutLimit and DeleteLimit (and
// WriteFile, for an apply file's), each change recorded in the change log.
type Limit struct {
	// Name identifies the limit: 1 to 64 characters of a-z, 0-9, '_' and '-'.
	Name string
	// Pool is the worker pool whose workers keep the limit, as Schedule.Pool names it: only schedules of that
	// pool can name the limit. Defaults to the default pool (as does "default").
	Pool string
	// Concurrency is the most runs at once, 1 to 10,000; 0: no such bound.
	Concurrency int
	// Rate is the most starts in any Window, 1 to 1,000,000; 0: no such bound (and no Window).
	Rate int
	// Window is the span Rate counts starts over: whole seconds, from 1s to 1h.
	Window time.Duration
}

// Validate reports every problem with l, each naming its field, joined with errors.Join.
func (l Limit) Validate() error { return l.internal().Validate() }

// Describe returns a short description of l's bounds: `concurrency 5, rate 100/1m, pool batch` (the pool only
// when it is not the default).
func (l Limit) Describe() string {
	var parts []string
	if l.Concurrency > 0 {
		parts = append(parts, fmt.Sprintf("concurrency %d", l.Concurrency))
	}
	if r := l.internal().FormatRate(); r != "" {
		parts = append(parts, "rate "+r)
	}
	if p := limit.PoolOf(l.Pool); p != schedule.DefaultPool {
		parts = append(parts, "pool "+p)
	}
	return strings.Join(parts, ", ")
}

// internal is l as package limit takes it.
func (l Limit) internal() limit.Limit {
	return limit.Limit{Name: l.Name, Pool: l.Pool, Concurrency: l.Concurrency, Rate: l.Rate, Window: schedule.Duration(l.Window)}
}

// fromLimit is the Limit of l.
func fromLimit(l limit.Limit) Limit {
	return Limit{Name: l.Name, Pool: l.Pool, Concurrency: l.Concurrency, Rate: l.Rate, Window: time.Duration(l.Window)}
}

// publicLimit is fromLimit of *l, nil for nil.
func publicLimit(l *limit.Limit) *Limit {
	if l == nil {
		return nil
	}
	p := fromLimit(*l)
	return &p
}

// PutLimit validates l and writes it, creating the limits topic if it is missing, and records the change in the
// change log. Nothing is written when l or opts are invalid, or when l moves an existing limit to another pool
// while schedules of its pool name it (ErrInvalidChange): their ticks would be counted by no worker.
func (s *Schedules) PutLimit(ctx context.Context, l Limit, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	in := l.internal()
	if err := in.Validate(); err != nil {
		return invalid(err)
	}
	if err := s.ensureLimitsTopic(ctx); err != nil {
		return err
	}
	limits, err := s.loadLimits(ctx)
	if err != nil {
		return err
	}
	if old, had := limits[l.Name]; had && old.PoolName() != in.PoolName() {
		current, err := s.load(ctx)
		if err != nil {
			return err
		}
		if err := limit.CheckPut(old, had, in, uses(namings(current))[l.Name]); err != nil {
			return invalid(err)
		}
	}
	return s.writeLimits(ctx, o, limits, []limitWrite{{name: l.Name, l: &in}})
}

// DeleteLimit removes the limit name: ErrNotFound when the namespace has no such limit, ErrInvalidChange while
// schedules name it (the error names up to 5 of them). Schedules naming it must first name another limit, or
// none.
func (s *Schedules) DeleteLimit(ctx context.Context, name string, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	if err := s.ensureLimitsTopic(ctx); err != nil {
		return err
	}
	limits, err := s.loadLimits(ctx)
	if err != nil {
		return err
	}
	if _, ok := limits[name]; !ok {
		return s.limitNotFound(name)
	}
	current, err := s.load(ctx)
	if err != nil {
		return err
	}
	if err := limit.CheckDelete(name, uses(namings(current))[name]); err != nil {
		return invalid(err)
	}
	return s.writeLimits(ctx, o, limits, []limitWrite{{name: name}})
}

// Limits returns every limit, sorted by name. It reads the whole limits topic; a namespace without one has no
// limit.
func (s *Schedules) Limits(ctx context.Context) ([]Limit, error) {
	limits, err := s.loadLimits(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Limit, 0, len(limits))
	for _, l := range limit.Sorted(limits) {
		out = append(out, fromLimit(l))
	}
	return out, nil
}

// GetLimit returns the limit name, or ErrNotFound.
func (s *Schedules) GetLimit(ctx context.Context, name string) (Limit, error) {
	limits, err := s.loadLimits(ctx)
	if err != nil {
		return Limit{}, err
	}
	l, ok := limits[name]
	if !ok {
		return Limit{}, s.limitNotFound(name)
	}
	return fromLimit(l), nil
}

// limitWrite is one write of the limits topic: l, or the deletion of name (l nil).
type limitWrite struct {
	name string
	l    *limit.Limit
}

// writeLimits writes ws to the limits topic, in order, and logs each in the change log with what before (the
// limits as read before) held. Their change-log records are made and checked first: nothing is written of a
// change the log would refuse.
func (s *Schedules) writeLimits(ctx context.Context, o changeOpts, before map[string]limit.Limit, ws []limitWrite) error {
	who, now := s.who(o), time.Now().UTC()
	cs := make([]changelog.Change, 0, len(ws))
	for _, w := range ws {
		c := changelog.Change{Op: changelog.OpLimitDelete, Limit: w.name, At: now, By: who, Reason: o.reason}
		if b, ok := before[w.name]; ok {
			c.Before, _ = limit.Encode(b) // read valid: it encodes
		}
		if w.l != nil {
			v, err := limit.Encode(*w.l)
			if err != nil {
				return invalid(err)
			}
			c.Op, c.After = changelog.OpLimitPut, v
		}
		if _, err := changelog.Encode(c); err != nil {
			return invalid(err)
		}
		cs = append(cs, c)
	}
	recs := make([]*kgo.Record, len(ws))
	for i, w := range ws {
		recs[i] = &kgo.Record{Topic: s.names.Limits, Key: []byte(w.name), Value: cs[i].After}
	}
	return s.writeLogged(ctx, "limit", recs, cs)
}

// writeLogged writes recs (each a definition of its key, or a tombstone) in order, and logs cs[i] in the change
// log for each recs[i] written: what was written is logged, even when a later write failed. what names a
// definition in errors ("limit").
func (s *Schedules) writeLogged(ctx context.Context, what string, recs []*kgo.Record, cs []changelog.Change) error {
	var werr error
	offsets := make([]int64, 0, len(recs))
	for _, r := range recs {
		if werr = s.cl.ProduceSync(ctx, r).FirstErr(); werr != nil {
			verb := "writing"
			if r.Value == nil {
				verb = "deleting"
			}
			werr = fmt.Errorf("%s %s %s: %w", verb, what, r.Key, werr)
			break
		}
		offsets = append(offsets, r.Offset)
	}
	if len(offsets) > 0 {
		if lerr := s.logChanges(ctx, cs, offsets); lerr != nil {
			return errors.Join(werr, lerr)
		}
	}
	return werr
}

// ensureLimitsTopic creates the limits topic, the schedules topic (a limit's checks read it) and the change log
// if they are missing.
func (s *Schedules) ensureLimitsTopic(ctx context.Context) error {
	return kafka.EnsureTopics(ctx, kadm.NewClient(s.cl), s.names, kafka.TopicOptions{Needs: []string{s.names.Schedules, s.names.Changes, s.names.Limits}})
}

// loadLimits reads the limits topic: none when there is no such topic.
func (s *Schedules) loadLimits(ctx context.Context) (map[string]limit.Limit, error) {
	opts, err := s.k.internal().Opts(nil)
	if err != nil {
		return nil, err
	}
	return limit.Load(ctx, opts, kadm.NewClient(s.cl), s.names.Limits)
}

// limitsFor returns the limits when a spec of specs names one, and nil (with no read) when none does: a namespace
// without limits, and an operator without a permission on their topic, write schedules as before.
func (s *Schedules) limitsFor(ctx context.Context, specs []schedule.Spec) (map[string]limit.Limit, error) {
	if !slices.ContainsFunc(specs, func(sp schedule.Spec) bool { return sp.Limit != "" }) {
		return nil, nil
	}
	return s.loadLimits(ctx)
}

// checkLimits refuses the schedules of specs that name a limit the namespace does not have, or one of another
// pool (ErrInvalidChange), naming at most maxRefusals of them.
func (s *Schedules) checkLimits(ctx context.Context, specs []schedule.Spec) error {
	limits, err := s.limitsFor(ctx, specs)
	if err != nil {
		return err
	}
	return checkNames(limits, specs)
}

// maxRefusals is how many schedules naming a limit wrongly a refusal lists: a file of a thousand schedules
// naming a misspelt limit makes one short error.
const maxRefusals = 10

// checkNames refuses the schedules of specs that name a limit limits does not have, or one of another pool.
func checkNames(limits map[string]limit.Limit, specs []schedule.Spec) error {
	var errs []error
	n := 0
	for _, sp := range specs {
		if sp.Limit == "" {
			continue
		}
		l, ok := limits[sp.Limit]
		if err := limit.CheckUse(sp.Name, sp.Pool, sp.Limit, l, ok); err != nil {
			if n++; n <= maxRefusals {
				errs = append(errs, err)
			}
		}
	}
	if n > maxRefusals {
		errs = append(errs, fmt.Errorf("and %d more schedules naming a limit they cannot name", n-maxRefusals))
	}
	return invalid(errors.Join(errs...))
}

// naming is the limit a schedule names, and the schedule's pool.
type naming struct{ limit, pool string }

// namings returns the schedules of current that name a limit, by schedule name.
func namings(current map[string]store.Entry) map[string]naming {
	out := map[string]naming{}
	for name, e := range current {
		if l := e.Schedule.Limit(); l != "" {
			out[name] = naming{limit: l, pool: e.Schedule.Pool()}
		}
	}
	return out
}

// uses returns the schedules of ns that name each limit, by limit, sorted by schedule name.
func uses(ns map[string]naming) map[string][]limit.Use {
	out := map[string][]limit.Use{}
	for name, n := range ns {
		out[n.limit] = append(out[n.limit], limit.Use{Schedule: name, Pool: limit.PoolOf(n.pool)})
	}
	for _, us := range out {
		slices.SortFunc(us, func(a, b limit.Use) int { return cmp.Compare(a.Schedule, b.Schedule) })
	}
	return out
}

func (s *Schedules) limitNotFound(name string) error {
	return fmt.Errorf("limit %q in namespace %q: %w", name, cmp.Or(s.k.Namespace, kafka.DefaultNamespace), ErrNotFound)
}
