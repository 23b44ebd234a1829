package tickgroup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Calendar is a named calendar of excluded days, which schedules exclude (Schedule.Exclude): a day is excluded
// when its date in the calendar's zone TZ is one of Dates, lies in one of Ranges, or falls on one of Weekdays. A
// calendar must leave a working day: not all seven weekdays, and no more than 366 consecutive days excluded.
// Its JSON and YAML field names are those of its record on the calendars topic (<ns>.calendars), which
// PutCalendar and DeleteCalendar write (and WriteFile, for an apply file's), each change recorded in the change
// log.
type Calendar struct {
	// Name identifies the calendar, by the schedules' naming rule: 1 to 128 characters of a-z, 0-9, '.', '_' and
	// '-', not only dots.
	Name string `json:"name" yaml:"name"`
	// TZ is the IANA zone whose dates the calendar lists. Defaults to UTC. A calendar tests the date of a slot in
	// this zone, whatever the zone of the schedule.
	TZ string `json:"tz,omitempty" yaml:"tz,omitempty"`
	// Dates are excluded dates, "2026-12-25".
	Dates []string `json:"dates,omitempty" yaml:"dates,omitempty"`
	// Ranges are inclusive spans of excluded dates.
	Ranges []DateRange `json:"ranges,omitempty" yaml:"ranges,omitempty"`
	// Weekdays are excluded days of the week: "mon" to "sun" (or the full English names, in any case).
	Weekdays []string `json:"weekdays,omitempty" yaml:"weekdays,omitempty"`
}

// DateRange is an inclusive span of dates, "2026-12-24" to "2026-12-31": both are excluded, and From is not
// after To.
type DateRange struct {
	From string `json:"from" yaml:"from"`
	To   string `json:"to" yaml:"to"`
}

// Validate reports every problem with c (up to 20), each naming its field, joined with errors.Join.
func (c Calendar) Validate() error {
	_, err := c.internal().Compile()
	return err
}

// Describe returns a short description of what c excludes: `2 dates, 1 range, weekdays sat,sun, tz
// Europe/Berlin` (the zone only when it is not UTC), or `no day`.
func (c Calendar) Describe() string {
	var parts []string
	count := func(n int, one string) {
		switch n {
		case 0:
		case 1:
			parts = append(parts, "1 "+one)
		default:
			parts = append(parts, fmt.Sprintf("%d %ss", n, one))
		}
	}
	count(len(c.Dates), "date")
	count(len(c.Ranges), "range")
	if len(c.Weekdays) > 0 {
		parts = append(parts, "weekdays "+strings.Join(c.Weekdays, ","))
	}
	if len(parts) == 0 {
		parts = append(parts, "no day")
	}
	if c.TZ != "" && c.TZ != "UTC" {
		parts = append(parts, "tz "+c.TZ)
	}
	return strings.Join(parts, ", ")
}

// internal is c as package calendar takes it; it shares no memory with c.
func (c Calendar) internal() calendar.Spec {
	s := calendar.Spec{Name: c.Name, TZ: c.TZ, Dates: slices.Clone(c.Dates), Weekdays: slices.Clone(c.Weekdays)}
	if c.Ranges != nil {
		s.Ranges = make([]calendar.Range, len(c.Ranges))
		for i, r := range c.Ranges {
			s.Ranges[i] = calendar.Range(r)
		}
	}
	return s
}

// fromCalendarSpec is the Calendar of s; it shares no memory with s.
func fromCalendarSpec(s calendar.Spec) Calendar {
	c := Calendar{Name: s.Name, TZ: s.TZ, Dates: slices.Clone(s.Dates), Weekdays: slices.Clone(s.Weekdays)}
	if s.Ranges != nil {
		c.Ranges = make([]DateRange, len(s.Ranges))
		for i, r := range s.Ranges {
			c.Ranges[i] = DateRange(r)
		}
	}
	return c
}

// publicCalendar is the Calendar of c as stored (its normalized spec); nil for nil.
func publicCalendar(c *calendar.Calendar) *Calendar {
	if c == nil {
		return nil
	}
	p := fromCalendarSpec(c.Spec())
	return &p
}

// ICSOptions say what calendar ImportICS makes of an iCalendar file.
type ICSOptions struct {
	// Name is the calendar's name (required).
	Name string
	// TZ is the calendar's zone: timed events exclude the dates they touch in it, and times without a zone are
	// read in it. Defaults to the file's X-WR-TIMEZONE, else UTC.
	TZ string
	// From and To ("2006-01-02", inclusive), if set, are the dates kept: occurrences outside them are dropped,
	// and recurring events are expanded over them rather than for 10 years from their start. At most 10 years;
	// both or neither.
	From, To string
}

// ImportICS reads an iCalendar file (RFC 5545; a public holiday feed, a company's closures) and returns the
// Calendar that excludes the days of its events, validated and normalized: an all-day event excludes its dates,
// a timed event the dates it touches in the calendar's zone, a recurring event each occurrence (expanded for 10
// years from its start, or over From and To), a cancelled event nothing. A file of at most 4 MiB and 2,000
// events, 200 of them recurring, is read. The error of a malformed file names its line, or the event (index,
// first line, UID, SUMMARY), and what is wrong.
func ImportICS(r io.Reader, o ICSOptions) (Calendar, error) {
	s, err := calendar.ImportICS(r, calendar.ImportOptions{Name: o.Name, TZ: o.TZ, From: o.From, To: o.To})
	if err != nil {
		return Calendar{}, err
	}
	return fromCalendarSpec(s), nil
}

// PutCalendar validates c and writes it, creating the calendars topic if it is missing, and records the change
// in the change log. Nothing is written when c or opts are invalid (ErrInvalidChange). A changed calendar
// applies to the schedules that exclude it from their first slot not yet emitted, as a schedule's change does.
func (s *Schedules) PutCalendar(ctx context.Context, c Calendar, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	in := c.internal()
	if err := in.Validate(); err != nil {
		return invalid(err)
	}
	if err := s.ensureCalendarsTopic(ctx); err != nil {
		return err
	}
	cals, err := s.loadCalendars(ctx)
	if err != nil {
		return err
	}
	return s.writeCalendars(ctx, o, cals, []calendarWrite{{name: in.Name, c: &in}})
}

// DeleteCalendar removes the calendar name: ErrNotFound when the namespace has no such calendar,
// ErrInvalidChange while schedules exclude it (the error names up to 5 of them). Schedules excluding it must
// first exclude another calendar, or none.
func (s *Schedules) DeleteCalendar(ctx context.Context, name string, opts ...ChangeOption) error {
	o := options(opts)
	if err := o.check(); err != nil {
		return err
	}
	if err := s.ensureCalendarsTopic(ctx); err != nil {
		return err
	}
	cals, err := s.loadCalendars(ctx)
	if err != nil {
		return err
	}
	if _, ok := cals[name]; !ok {
		return s.calendarNotFound(name)
	}
	current, err := s.load(ctx)
	if err != nil {
		return err
	}
	if err := calendarstore.CheckDelete(name, excluders(current)[name]); err != nil {
		return invalid(err)
	}
	return s.writeCalendars(ctx, o, cals, []calendarWrite{{name: name}})
}

// Calendars returns every calendar, as stored (dates and ranges sorted, weekdays as "mon".."sun"), sorted by
// name. It reads the whole calendars topic; a namespace without one has no calendar.
func (s *Schedules) Calendars(ctx context.Context) ([]Calendar, error) {
	cals, err := s.loadCalendars(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Calendar, 0, len(cals))
	for _, c := range calendarstore.Sorted(cals) {
		out = append(out, *publicCalendar(c))
	}
	return out, nil
}

// GetCalendar returns the calendar name as stored, or ErrNotFound.
func (s *Schedules) GetCalendar(ctx context.Context, name string) (Calendar, error) {
	cals, err := s.loadCalendars(ctx)
	if err != nil {
		return Calendar{}, err
	}
	c, ok := cals[name]
	if !ok {
		return Calendar{}, s.calendarNotFound(name)
	}
	return *publicCalendar(c), nil
}

// calendarWrite is one write of the calendars topic: c, or the deletion of name (c nil).
type calendarWrite struct {
	name string
	c    *calendar.Spec
}

// writeCalendars writes ws to the calendars topic, in order, and logs each in the change log with what before
// (the calendars as read before) held. Their change-log records are made and checked first: nothing is written
// of a change the log would refuse.
func (s *Schedules) writeCalendars(ctx context.Context, o changeOpts, before map[string]*calendar.Calendar, ws []calendarWrite) error {
	who, now := s.who(o), time.Now().UTC()
	cs := make([]changelog.Change, 0, len(ws))
	for _, w := range ws {
		c := changelog.Change{Op: changelog.OpCalendarDelete, Calendar: w.name, At: now, By: who, Reason: o.reason}
		if b, ok := before[w.name]; ok {
			c.Before, _ = calendar.Encode(b.Spec()) // read valid: it encodes
		}
		if w.c != nil {
			v, err := calendar.Encode(*w.c)
			if err != nil {
				return invalid(err)
			}
			c.Op, c.After = changelog.OpCalendarPut, v
		}
		if _, err := changelog.Encode(c); err != nil {
			return invalid(err)
		}
		cs = append(cs, c)
	}
	recs := make([]*kgo.Record, len(ws))
	for i, w := range ws {
		recs[i] = &kgo.Record{Topic: s.names.Calendars, Key: []byte(w.name), Value: cs[i].After}
	}
	return s.writeLogged(ctx, "calendar", recs, cs)
}

// ensureCalendarsTopic creates the calendars topic, the schedules topic (a deletion's check reads it) and the
// change log if they are missing.
func (s *Schedules) ensureCalendarsTopic(ctx context.Context) error {
	return kafka.EnsureTopics(ctx, kadm.NewClient(s.cl), s.names, kafka.TopicOptions{Needs: []string{s.names.Schedules, s.names.Changes, s.names.Calendars}})
}

// loadCalendars reads the calendars topic: none when there is no such topic.
func (s *Schedules) loadCalendars(ctx context.Context) (map[string]*calendar.Calendar, error) {
	opts, err := s.k.internal().Opts(nil)
	if err != nil {
		return nil, err
	}
	return calendarstore.Load(ctx, opts, kadm.NewClient(s.cl), s.names.Calendars)
}

// calendarsFor returns the calendars when a spec of specs excludes one, and nil (with no read) otherwise: a
// namespace without calendars, and an operator without a permission on their topic, write schedules as before.
func (s *Schedules) calendarsFor(ctx context.Context, specs []schedule.Spec) (map[string]*calendar.Calendar, error) {
	if !slices.ContainsFunc(specs, func(sp schedule.Spec) bool { return len(sp.Exclude) > 0 }) {
		return nil, nil
	}
	return s.loadCalendars(ctx)
}

// checkCalendars refuses the schedules of specs that exclude a calendar the namespace does not have
// (ErrInvalidChange), naming at most maxRefusals of them.
func (s *Schedules) checkCalendars(ctx context.Context, specs []schedule.Spec) error {
	cals, err := s.calendarsFor(ctx, specs)
	if err != nil {
		return err
	}
	return s.checkExcludes(cals, specs)
}

// checkExcludes refuses the schedules of specs that exclude a calendar cals does not have.
func (s *Schedules) checkExcludes(cals map[string]*calendar.Calendar, specs []schedule.Spec) error {
	var errs []error
	n := 0
	for _, sp := range specs {
		if len(sp.Exclude) == 0 {
			continue
		}
		if err := calendarstore.CheckExclude(sp.Name, sp.Exclude, cals); err != nil {
			if n++; n <= maxRefusals {
				errs = append(errs, err)
			}
		}
	}
	if n > maxRefusals {
		errs = append(errs, fmt.Errorf("and %d more schedules excluding a calendar they cannot exclude", n-maxRefusals))
	}
	return invalid(errors.Join(errs...))
}

// excluders returns the schedules of current that exclude each calendar, by calendar, sorted by name.
func excluders(current map[string]store.Entry) map[string][]string {
	out := map[string][]string{}
	for name, e := range current {
		for _, c := range e.Schedule.Exclude() {
			out[c] = append(out[c], name)
		}
	}
	for _, names := range out {
		slices.Sort(names)
	}
	return out
}

func (s *Schedules) calendarNotFound(name string) error {
	return fmt.Errorf("calendar %q in namespace %q: %w", name, cmp.Or(s.k.Namespace, kafka.DefaultNamespace), ErrNotFound)
}
