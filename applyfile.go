package tickgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// ApplyFile is what an apply file defines (`ticker schedule apply -f`, ParseApplyFile): limits and schedules.
type ApplyFile struct {
	Limits    []Limit
	Schedules []Schedule
}

// ParseApplyFile reads an apply file: YAML, either a list of schedules or a mapping with the keys schedules (a
// list of schedules) and limits (a list of limits), either of which may be left out. A schedule is written as its
// record (Schedule's YAML); a limit as its record too (name, pool, concurrency, rate, window, the window a Go
// duration), or with its rate as "R/WINDOW" ("100/1m") and no window. Unknown fields are errors (a misspelt
// "concurency" must not silently mean "no bound"), every entry is validated, and a name given twice in a list
// is refused; the error lists every problem, each with its entry, line and field.
func ParseApplyFile(r io.Reader) (ApplyFile, error) {
	root, err := schedule.ReadYAML(r)
	if err != nil {
		return ApplyFile{}, err
	}
	var f ApplyFile
	if root.Kind == yaml.SequenceNode {
		specs, err := schedule.ParseList(root, "")
		f.Schedules = fromSpecs(specs)
		return f, err
	}
	if root.Kind != yaml.MappingNode {
		return ApplyFile{}, fmt.Errorf("parsing schedules: line %d: want a list of schedules or a mapping with \"schedules\" and \"limits\"", root.Line)
	}
	var errs []error
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, list := root.Content[i], root.Content[i+1]
		if seen[key.Value] {
			errs = append(errs, fmt.Errorf("parsing schedules: line %d: %s is given twice", key.Line, errlimit.Quote(key.Value)))
			continue
		}
		seen[key.Value] = true
		switch key.Value {
		case "schedules":
			specs, err := schedule.ParseList(list, "schedules")
			f.Schedules, errs = fromSpecs(specs), append(errs, err)
		case "limits":
			ls, err := limit.ParseList(list, "limits")
			errs = append(errs, err)
			for _, l := range ls {
				f.Limits = append(f.Limits, fromLimit(l))
			}
		default:
			errs = append(errs, fmt.Errorf("parsing schedules: line %d: unknown top-level field %s (want \"schedules\" or \"limits\")", key.Line, errlimit.Quote(key.Value)))
		}
	}
	if !seen["schedules"] && !seen["limits"] && len(errs) == 0 {
		// Not an empty file of nothing: with --prune, that would delete every schedule.
		errs = append(errs, fmt.Errorf("parsing schedules: line %d: want a mapping with a list under \"schedules\" or \"limits\"", root.Line))
	}
	if err := errors.Join(errs...); err != nil {
		return ApplyFile{}, err
	}
	return f, nil
}

// fromSpecs is the Schedules of specs.
func fromSpecs(specs []schedule.Spec) []Schedule {
	out := make([]Schedule, len(specs))
	for i, sp := range specs {
		out[i] = fromSpec(sp)
	}
	return out
}

// ParseSchedules reads an apply file of schedules only: YAML, a list of schedules or a mapping with key
// schedules. Every entry is validated; the error lists every problem. A file with limits is refused: read it
// with ParseApplyFile, and write it with PlanFile and WriteFile, which write its limits before its schedules.
func ParseSchedules(r io.Reader) ([]Schedule, error) {
	f, err := ParseApplyFile(r)
	if err != nil {
		return nil, err
	}
	if len(f.Limits) > 0 {
		return nil, errors.New("parsing schedules: the file defines limits: read it with ParseApplyFile")
	}
	return f.Schedules, nil
}

// LimitChange is one write of a limit by WriteFile: its creation or its replacement (an apply file never deletes
// a limit: DeleteLimit does).
type LimitChange struct {
	// Op is ChangeCreate or ChangeReplace.
	Op   ChangeOp
	Name string
	// Limit is the definition to write.
	Limit Limit
}

// FilePlan is what PlanFile found to change, in the order WriteFile writes it: the limits, then the schedules.
type FilePlan struct {
	Limits    []LimitChange
	Schedules []Change
}

// PlanFile returns the changes that make the namespace's limits and schedules match f, without writing them: the
// limits f defines that the namespace does not have as defined, and the schedule changes Plan would return (with
// prune, deleting the schedules f does not list; a limit is never deleted). It checks them together, as
// WriteFile will: a schedule naming a limit (Schedule.Limit) that neither f nor the namespace has, or one of
// another pool, and a limit f moves to another pool while schedules of its old pool (once f is written) name it,
// are an ErrInvalidChange, as is an invalid entry.
func (s *Schedules) PlanFile(ctx context.Context, f ApplyFile, prune bool) (FilePlan, error) {
	want, specs, err := checkFile(f)
	if err != nil {
		return FilePlan{}, err
	}
	if err := s.ensureTopic(ctx); err != nil {
		return FilePlan{}, err
	}
	current, limits, err := s.state(ctx, len(want) > 0, specs)
	if err != nil {
		return FilePlan{}, err
	}
	var p FilePlan
	for _, l := range want {
		old, had := limits[l.Name]
		old.V = 0 // as read; l as built
		if had && old == l {
			continue
		}
		op := ChangeCreate
		if had {
			op = ChangeReplace
		}
		p.Limits = append(p.Limits, LimitChange{Op: op, Name: l.Name, Limit: fromLimit(l)})
	}
	for _, c := range store.Diff(current, specs, prune) {
		p.Schedules = append(p.Schedules, fromChange(c))
	}
	if err := checkPlan(current, limits, p); err != nil {
		return FilePlan{}, invalid(err)
	}
	return p, nil
}

// checkFile validates every entry of f, and returns its limits and schedules as the internal packages take them.
func checkFile(f ApplyFile) ([]limit.Limit, []schedule.Spec, error) {
	want := make([]limit.Limit, len(f.Limits))
	seen := map[string]bool{}
	for i, l := range f.Limits {
		want[i] = l.internal()
		if err := want[i].Validate(); err != nil {
			return nil, nil, invalid(err)
		}
		if seen[l.Name] {
			return nil, nil, invalid(fmt.Errorf("limit %s: defined twice", errlimit.Quote(l.Name)))
		}
		seen[l.Name] = true
	}
	specs := make([]schedule.Spec, len(f.Schedules))
	for i, sc := range f.Schedules {
		specs[i] = sc.spec()
		if err := specs[i].ValidateNew(); err != nil {
			return nil, nil, invalid(err)
		}
	}
	return want, specs, nil
}

// state reads the schedules, and the limits when some are written (withLimits) or a spec of specs names one.
func (s *Schedules) state(ctx context.Context, withLimits bool, specs []schedule.Spec) (map[string]store.Entry, map[string]limit.Limit, error) {
	current, err := s.load(ctx)
	if err != nil {
		return nil, nil, err
	}
	var limits map[string]limit.Limit
	if withLimits {
		limits, err = s.loadLimits(ctx)
	} else {
		limits, err = s.limitsFor(ctx, specs)
	}
	return current, limits, err
}

// checkPlan checks p against the namespace as read, current and limits, once p is written: every schedule p
// writes names a limit that exists then, of its pool, and no limit p moves to another pool is named by a
// schedule of its old pool then.
func checkPlan(current map[string]store.Entry, limits map[string]limit.Limit, p FilePlan) error {
	after := maps.Clone(limits)
	if after == nil {
		after = map[string]limit.Limit{}
	}
	for _, c := range p.Limits {
		after[c.Name] = c.Limit.internal()
	}
	var written []schedule.Spec
	final := namings(current) // the schedules naming a limit once p is written
	for _, c := range p.Schedules {
		delete(final, c.Name)
		if c.Op == ChangeDelete {
			continue
		}
		written = append(written, c.Schedule.spec())
		if c.Schedule.Limit != "" {
			final[c.Name] = naming{limit: c.Schedule.Limit, pool: c.Schedule.Pool}
		}
	}
	errs := []error{checkNames(after, written)}
	named := uses(final)
	for _, c := range p.Limits {
		old, had := limits[c.Name]
		errs = append(errs, limit.CheckPut(old, had, c.Limit.internal(), named[c.Name]))
	}
	return errors.Join(errs...)
}

// WriteFile writes p (from PlanFile): its limits first, each recorded in the change log as a limit_put, then
// its schedules, as Write writes them (with the change-log op apply), so that every schedule's limit exists
// before the schedule. Every change and opts are checked first, and p is checked again against the namespace as
// it is now, as PlanFile checked it: nothing is written when one is invalid (ErrInvalidChange).
func (s *Schedules) WriteFile(ctx context.Context, p FilePlan, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	ws, err := checkLimitChanges(p.Limits)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return s.Write(ctx, p.Schedules, opts...)
	}
	for _, c := range p.Schedules {
		if err := c.check(); err != nil {
			return invalid(err)
		}
	}
	if err := s.ensureLimitsTopic(ctx); err != nil {
		return err
	}
	current, limits, err := s.state(ctx, true, nil)
	if err != nil {
		return err
	}
	if err := checkPlan(current, limits, p); err != nil {
		return invalid(err)
	}
	if err := s.writeLimits(ctx, o, limits, ws); err != nil {
		return err
	}
	return s.Write(ctx, p.Schedules, opts...)
}

// checkLimitChanges checks the limit changes of a plan and returns their writes.
func checkLimitChanges(cs []LimitChange) ([]limitWrite, error) {
	ws := make([]limitWrite, 0, len(cs))
	for _, c := range cs {
		l := c.Limit.internal()
		switch {
		case c.Op != ChangeCreate && c.Op != ChangeReplace:
			return nil, invalid(fmt.Errorf("limit change %s of %s: want op create or replace", errlimit.Quote(string(c.Op)), errlimit.Quote(c.Name)))
		case l.Name != c.Name:
			return nil, invalid(fmt.Errorf("limit change %s %s: the definition is of %s", c.Op, errlimit.Quote(c.Name), errlimit.Quote(l.Name)))
		}
		if err := l.Validate(); err != nil {
			return nil, invalid(err)
		}
		ws = append(ws, limitWrite{name: c.Name, l: &l})
	}
	return ws, nil
}
