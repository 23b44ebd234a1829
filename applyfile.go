package tickgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// ApplyFile is what an apply file defines (`ticker schedule apply -f`, ParseApplyFile): calendars, limits and
// schedules.
type ApplyFile struct {
	Calendars []Calendar
	Limits    []Limit
	Schedules []Schedule
}

// ParseApplyFile reads an apply file: YAML, either a list of schedules or a mapping with the keys schedules (a
// list of schedules), limits (a list of limits) and calendars (a list of calendars), any of which may be left
// out. A schedule is written as its record (Schedule's YAML); a limit as its record too (name, pool,
// concurrency, rate, window, the window a Go duration), or with its rate as "R/WINDOW" ("100/1m") and no window;
// a calendar as its record (Calendar's YAML: name, tz, dates, ranges, weekdays), a range as {from, to} or as
// "FROM..TO". Unknown fields are errors (a misspelt "concurency" must not silently mean "no bound"), every entry
// is validated, and a name given twice in a list is refused; the error lists every problem, each with its entry,
// line and field.
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
		return ApplyFile{}, fmt.Errorf("parsing schedules: line %d: want a list of schedules or a mapping with \"schedules\", \"limits\" and \"calendars\"", root.Line)
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
		case "calendars":
			cs, err := calendarstore.ParseList(list, "calendars")
			errs = append(errs, err)
			for _, c := range cs {
				f.Calendars = append(f.Calendars, fromCalendarSpec(c))
			}
		default:
			errs = append(errs, fmt.Errorf("parsing schedules: line %d: unknown top-level field %s (want \"schedules\", \"limits\" or \"calendars\")", key.Line, errlimit.Quote(key.Value)))
		}
	}
	if !seen["schedules"] && !seen["limits"] && !seen["calendars"] && len(errs) == 0 {
		// Not an empty file of nothing: with --prune, that would delete every schedule.
		errs = append(errs, fmt.Errorf("parsing schedules: line %d: want a mapping with a list under \"schedules\", \"limits\" or \"calendars\"", root.Line))
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
// schedules. Every entry is validated; the error lists every problem. A file with limits or calendars is
// refused: read it with ParseApplyFile, and write it with PlanFile and WriteFile, which write its calendars and
// limits before its schedules.
func ParseSchedules(r io.Reader) ([]Schedule, error) {
	f, err := ParseApplyFile(r)
	if err != nil {
		return nil, err
	}
	switch {
	case len(f.Limits) > 0:
		return nil, errors.New("parsing schedules: the file defines limits: read it with ParseApplyFile")
	case len(f.Calendars) > 0:
		return nil, errors.New("parsing schedules: the file defines calendars: read it with ParseApplyFile")
	}
	return f.Schedules, nil
}

// CalendarChange is one write of a calendar by WriteFile: its creation or its replacement (an apply file never
// deletes a calendar: DeleteCalendar does).
type CalendarChange struct {
	// Op is ChangeCreate or ChangeReplace.
	Op   ChangeOp
	Name string
	// Calendar is the definition to write.
	Calendar Calendar
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

// FilePlan is what PlanFile found to change, in the order WriteFile writes it: the calendars, the limits, then
// the schedules.
type FilePlan struct {
	Calendars []CalendarChange
	Limits    []LimitChange
	Schedules []Change
}

// PlanFile returns the changes that make the namespace's calendars, limits and schedules match f, without
// writing them: the calendars and limits f defines that the namespace does not have as defined, and the schedule
// changes Plan would return (with prune, deleting the schedules f does not list; a calendar or a limit is never
// deleted). It checks them together, as WriteFile will: a schedule naming a limit (Schedule.Limit) that neither
// f nor the namespace has, or one of another pool, a limit f moves to another pool while schedules of its old
// pool (once f is written) name it, and a schedule excluding a calendar (Schedule.Exclude) that neither f nor
// the namespace has, are an ErrInvalidChange, as is an invalid entry.
func (s *Schedules) PlanFile(ctx context.Context, f ApplyFile, prune bool) (FilePlan, error) {
	cals, want, specs, err := checkFile(f)
	if err != nil {
		return FilePlan{}, err
	}
	if err := s.ensureTopic(ctx); err != nil {
		return FilePlan{}, err
	}
	st, err := s.state(ctx, len(cals) > 0, len(want) > 0, specs)
	if err != nil {
		return FilePlan{}, err
	}
	var p FilePlan
	for _, c := range cals {
		old, had := st.calendars[c.Name()]
		if had && calendarstore.Same(old, c) {
			continue
		}
		p.Calendars = append(p.Calendars, CalendarChange{Op: createOrReplace(had), Name: c.Name(), Calendar: *publicCalendar(c)})
	}
	for _, l := range want {
		old, had := st.limits[l.Name]
		old.V = 0 // as read; l as built
		if had && old == l {
			continue
		}
		p.Limits = append(p.Limits, LimitChange{Op: createOrReplace(had), Name: l.Name, Limit: fromLimit(l)})
	}
	for _, c := range store.Diff(st.current, specs, prune) {
		p.Schedules = append(p.Schedules, fromChange(c))
	}
	if err := s.checkPlan(st, p); err != nil {
		return FilePlan{}, invalid(err)
	}
	return p, nil
}

// createOrReplace is the op of a write of what the namespace had (had) or not.
func createOrReplace(had bool) ChangeOp {
	if had {
		return ChangeReplace
	}
	return ChangeCreate
}

// checkFile validates every entry of f, and returns its calendars (compiled), limits and schedules as the
// internal packages take them.
func checkFile(f ApplyFile) ([]*calendar.Calendar, []limit.Limit, []schedule.Spec, error) {
	cals := make([]*calendar.Calendar, len(f.Calendars))
	seenCal := map[string]bool{}
	for i, c := range f.Calendars {
		var err error
		if cals[i], err = c.internal().Compile(); err != nil {
			return nil, nil, nil, invalid(err)
		}
		if seenCal[c.Name] {
			return nil, nil, nil, invalid(fmt.Errorf("calendar %s: defined twice", errlimit.Quote(c.Name)))
		}
		seenCal[c.Name] = true
	}
	want := make([]limit.Limit, len(f.Limits))
	seen := map[string]bool{}
	for i, l := range f.Limits {
		want[i] = l.internal()
		if err := want[i].Validate(); err != nil {
			return nil, nil, nil, invalid(err)
		}
		if seen[l.Name] {
			return nil, nil, nil, invalid(fmt.Errorf("limit %s: defined twice", errlimit.Quote(l.Name)))
		}
		seen[l.Name] = true
	}
	specs := make([]schedule.Spec, len(f.Schedules))
	for i, sc := range f.Schedules {
		specs[i] = sc.spec()
		if err := specs[i].ValidateNew(); err != nil {
			return nil, nil, nil, invalid(err)
		}
	}
	return cals, want, specs, nil
}

// nsState is what a plan is checked against: the namespace's schedules, and its limits and calendars where they
// were read (nil: not read, for none was needed).
type nsState struct {
	current   map[string]store.Entry
	limits    map[string]limit.Limit
	calendars map[string]*calendar.Calendar
}

// state reads the schedules; the limits when some are written (withLimits) or a spec of specs names one; the
// calendars when some are written (withCalendars) or a spec of specs excludes one.
func (s *Schedules) state(ctx context.Context, withCalendars, withLimits bool, specs []schedule.Spec) (nsState, error) {
	var (
		st  nsState
		err error
	)
	if st.current, err = s.load(ctx); err != nil {
		return nsState{}, err
	}
	if withLimits {
		st.limits, err = s.loadLimits(ctx)
	} else {
		st.limits, err = s.limitsFor(ctx, specs)
	}
	if err != nil {
		return nsState{}, err
	}
	if withCalendars {
		st.calendars, err = s.loadCalendars(ctx)
	} else {
		st.calendars, err = s.calendarsFor(ctx, specs)
	}
	return st, err
}

// checkPlan checks p against the namespace as read, st, once p is written: every schedule p writes names a limit
// that exists then, of its pool, and excludes only calendars that exist then; no limit p moves to another pool
// is named by a schedule of its old pool then.
func (s *Schedules) checkPlan(st nsState, p FilePlan) error {
	after := maps.Clone(st.limits)
	if after == nil {
		after = map[string]limit.Limit{}
	}
	for _, c := range p.Limits {
		after[c.Name] = c.Limit.internal()
	}
	cals := maps.Clone(st.calendars)
	if cals == nil {
		cals = map[string]*calendar.Calendar{}
	}
	for _, c := range p.Calendars {
		if compiled, err := c.Calendar.internal().Compile(); err == nil { // checked by the caller
			cals[c.Name] = compiled
		}
	}
	var written []schedule.Spec
	final := namings(st.current) // the schedules naming a limit once p is written
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
	errs := []error{checkNames(after, written), s.checkExcludes(cals, written)}
	named := uses(final)
	for _, c := range p.Limits {
		old, had := st.limits[c.Name]
		errs = append(errs, limit.CheckPut(old, had, c.Limit.internal(), named[c.Name]))
	}
	return errors.Join(errs...)
}

// WriteFile writes p (from PlanFile): its calendars first, each recorded in the change log as a calendar_put,
// then its limits, each as a limit_put, then its schedules, as Write writes them (with the change-log op
// apply), so that every schedule's calendars and limit exist before the schedule. Every change and opts are
// checked first, and p is checked again against the namespace as it is now, as PlanFile checked it: nothing is
// written when one is invalid (ErrInvalidChange).
func (s *Schedules) WriteFile(ctx context.Context, p FilePlan, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	cws, err := checkCalendarChanges(p.Calendars)
	if err != nil {
		return err
	}
	lws, err := checkLimitChanges(p.Limits)
	if err != nil {
		return err
	}
	if len(cws) == 0 && len(lws) == 0 {
		return s.Write(ctx, p.Schedules, opts...)
	}
	for _, c := range p.Schedules {
		if err := c.check(); err != nil {
			return invalid(err)
		}
	}
	if len(cws) > 0 {
		if err := s.ensureCalendarsTopic(ctx); err != nil {
			return err
		}
	}
	if len(lws) > 0 {
		if err := s.ensureLimitsTopic(ctx); err != nil {
			return err
		}
	}
	st, err := s.state(ctx, len(cws) > 0, len(lws) > 0, written(changeWrites(p.Schedules)))
	if err != nil {
		return err
	}
	if err := s.checkPlan(st, p); err != nil {
		return invalid(err)
	}
	if err := s.writeCalendars(ctx, o, st.calendars, cws); err != nil {
		return err
	}
	if err := s.writeLimits(ctx, o, st.limits, lws); err != nil {
		return err
	}
	return s.Write(ctx, p.Schedules, opts...)
}

// changeWrites is cs as package store takes them.
func changeWrites(cs []Change) []store.Change {
	out := make([]store.Change, len(cs))
	for i, c := range cs {
		out[i] = c.internal()
	}
	return out
}

// checkCalendarChanges checks the calendar changes of a plan and returns their writes.
func checkCalendarChanges(cs []CalendarChange) ([]calendarWrite, error) {
	ws := make([]calendarWrite, 0, len(cs))
	for _, c := range cs {
		in := c.Calendar.internal()
		switch {
		case c.Op != ChangeCreate && c.Op != ChangeReplace:
			return nil, invalid(fmt.Errorf("calendar change %s of %s: want op create or replace", errlimit.Quote(string(c.Op)), errlimit.Quote(c.Name)))
		case in.Name != c.Name:
			return nil, invalid(fmt.Errorf("calendar change %s %s: the definition is of %s", c.Op, errlimit.Quote(c.Name), errlimit.Quote(in.Name)))
		}
		if err := in.Validate(); err != nil {
			return nil, invalid(err)
		}
		ws = append(ws, calendarWrite{name: c.Name, c: &in})
	}
	return ws, nil
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
