package calendar

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Limits of a Spec. They bound what one calendar record can cost a reader (memory, validation time, the length
// of a move search), whoever wrote it; doc.go says why each is what it is.
const (
	// MaxEntries is the most dates, ranges and weekdays one calendar lists, duplicates included. A country's
	// public holidays for ten years are a few hundred.
	MaxEntries = 10_000
	// MaxExcludedRun is the most consecutive days a calendar may exclude, counting its dates, ranges and
	// weekdays together. So every excluded day has a working day of the calendar at most this many days before
	// it and after it, and a move across one calendar always ends.
	MaxExcludedRun = 366
	// MaxMoveDays bounds the search of a move: the same wall-clock time on at most this many days after (or
	// before) the slot's. It is MaxExcludedRun with slack for the zones: when a calendar's zone differs from the
	// schedule's, a daylight saving change can make two consecutive candidates fall on the same date of the
	// calendar. Only several calendars that together exclude every day for longer make a move fail.
	MaxMoveDays = MaxExcludedRun + 34
	// maxErrors is the most problems Validate lists; the rest are counted.
	maxErrors = 20
)

// dateLayout is the one form of a date in a Spec: ISO 8601's calendar date.
const dateLayout = "2006-01-02"

// Spec is a calendar as stored (JSON) and as written by people (YAML): a named set of excluded days in a zone.
// A day is excluded when its date in the zone is one of Dates, lies in one of Ranges, or falls on one of
// Weekdays. Validate explains every rule; Compile builds the Calendar a schedule consults.
type Spec struct {
	// Name identifies the calendar; schedules name the calendars they exclude. The naming rule of schedules:
	// 1 to 128 characters of a-z, 0-9, '.', '_' and '-', not only dots.
	Name string `json:"name" yaml:"name"`
	// TZ is the IANA zone whose dates the calendar lists. Defaults to UTC. The date of an instant in this zone
	// is what the calendar tests, whatever the zone of the schedule that consults it.
	TZ string `json:"tz,omitempty" yaml:"tz,omitempty"`
	// Dates are excluded dates, "2026-12-25".
	Dates []string `json:"dates,omitempty" yaml:"dates,omitempty"`
	// Ranges are inclusive spans of excluded dates.
	Ranges []Range `json:"ranges,omitempty" yaml:"ranges,omitempty"`
	// Weekdays are excluded days of the week: "mon" to "sun" (or the full English names, in any case).
	Weekdays []string `json:"weekdays,omitempty" yaml:"weekdays,omitempty"`
}

// Range is an inclusive span of dates: From and To are both excluded, and From is not after To.
type Range struct {
	From string `json:"from" yaml:"from"`
	To   string `json:"to" yaml:"to"`
}

// FieldError is one problem with one field of a Spec.
type FieldError struct {
	Calendar string // the calendar's name as written, possibly invalid or empty
	Field    string // the JSON/YAML field, with the index of a list's entry: "dates[3]", "ranges[0].to"
	Value    string // the offending value as written; empty when the problem is a missing value
	Msg      string // what is wrong
}

// Error reads like `calendar "us-federal": dates[3] "2026-13-01": not a date (want YYYY-MM-DD): month out of range`.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("calendar")
	if e.Calendar != "" {
		b.WriteString(" " + errlimit.Quote(e.Calendar))
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

// Validate reports every problem with s (up to 20, then how many more). Each is a *FieldError; several are
// joined with errors.Join, and errors.As finds the first.
func (s Spec) Validate() error {
	_, err := s.Compile()
	return err
}

// validator collects FieldErrors for one spec.
type validator struct {
	name  string
	errs  []error
	extra int // problems past maxErrors
}

func (v *validator) fail(field, value, format string, args ...any) {
	if len(v.errs) == maxErrors {
		v.extra++
		return
	}
	v.errs = append(v.errs, &FieldError{Calendar: v.name, Field: field, Value: value, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error {
	if v.extra > 0 {
		v.errs = append(v.errs, fmt.Errorf("calendar %s: %d more problems", errlimit.Quote(v.name), v.extra))
	}
	switch len(v.errs) {
	case 0:
		return nil
	case 1:
		return v.errs[0]
	}
	return errors.Join(v.errs...)
}

// Compile validates s and builds its Calendar. Validation and building are one pass, so that what Validate
// accepts is exactly what Compile builds. Duplicates are accepted and dropped; Calendar.Spec returns the
// normalized spec (sorted, without duplicates, weekdays as "mon".."sun").
func (s Spec) Compile() (*Calendar, error) {
	v := &validator{name: s.Name}
	switch {
	case !schedule.ValidName(s.Name):
		v.fail("name", s.Name, "must be 1 to %d characters of a-z, 0-9, '.', '_' and '-'", schedule.MaxNameLen)
	case strings.Trim(s.Name, ".") == "":
		v.fail("name", s.Name, "must not be made only of dots: \".\" and \"..\" cannot be named in a URL path")
	}
	loc := time.UTC
	if s.TZ != "" {
		var err error
		if loc, err = loadZone(s.TZ); err != nil {
			v.fail("tz", s.TZ, "%v", err)
		}
	}
	if n := len(s.Dates) + len(s.Ranges) + len(s.Weekdays); n > MaxEntries {
		// Refused before any entry is read: a hostile record costs no more than counting. The field named is the
		// longest list.
		field := "dates"
		if len(s.Ranges) > len(s.Dates) || len(s.Weekdays) > len(s.Dates) {
			field = "ranges"
			if len(s.Weekdays) > len(s.Ranges) {
				field = "weekdays"
			}
		}
		v.fail(field, "", "the calendar lists %d dates, ranges and weekdays, more than the limit of %d", n, MaxEntries)
		return nil, v.err()
	}
	c := &Calendar{name: s.Name, tz: s.TZ, loc: loc}
	spans := make([]span, 0, len(s.Dates)+len(s.Ranges))
	for i, d := range s.Dates {
		n, err := parseDate(d)
		if err != nil {
			v.fail(fmt.Sprintf("dates[%d]", i), d, "%v", err)
			continue
		}
		spans = append(spans, span{n, n})
	}
	for i, r := range s.Ranges {
		from, errFrom := parseDate(r.From)
		if errFrom != nil {
			v.fail(fmt.Sprintf("ranges[%d].from", i), r.From, "%v", errFrom)
		}
		to, errTo := parseDate(r.To)
		if errTo != nil {
			v.fail(fmt.Sprintf("ranges[%d].to", i), r.To, "%v", errTo)
		}
		if errFrom != nil || errTo != nil {
			continue
		}
		if from > to {
			v.fail(fmt.Sprintf("ranges[%d]", i), r.From+"/"+r.To, "from is after to")
			continue
		}
		spans = append(spans, span{from, to})
	}
	for i, w := range s.Weekdays {
		d, ok := parseWeekday(w)
		if !ok {
			v.fail(fmt.Sprintf("weekdays[%d]", i), w, "not a day of the week (want mon, tue, wed, thu, fri, sat or sun)")
			continue
		}
		c.weekdays |= 1 << d
	}
	if c.weekdays == allWeekdays {
		v.fail("weekdays", strings.Join(s.Weekdays, ","), "excludes all seven days of the week: the calendar would have no working day")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	c.spans = merge(spans)
	if run, ok := c.longestRun(); !ok {
		field := "dates"
		for _, r := range s.Ranges {
			// Valid by now; the run is blamed on the ranges if one of them is in it.
			if from, _ := parseDate(r.From); from <= run.to {
				if to, _ := parseDate(r.To); to >= run.from {
					field = "ranges"
				}
			}
		}
		v.fail(field, formatDay(run.from)+"/"+formatDay(run.to),
			"excludes %d consecutive days (with the weekdays), more than %d: a calendar must leave a working day in every %d days, so that a slot it excludes can move to one",
			run.to-run.from+1, MaxExcludedRun, MaxExcludedRun+1)
		return nil, v.err()
	}
	c.spec = s.normalize(c.weekdays)
	return c, nil
}

// normalize returns s with its dates and ranges sorted and without duplicates, and its weekdays as the set wd
// in the order mon..sun. s is valid.
func (s Spec) normalize(wd uint8) Spec {
	out := Spec{Name: s.Name, TZ: s.TZ}
	if len(s.Dates) > 0 {
		// Dates are compared as written: valid dates have one form, so text order is date order.
		out.Dates = slices.Compact(slices.Sorted(slices.Values(s.Dates)))
	}
	if len(s.Ranges) > 0 {
		out.Ranges = slices.Clone(s.Ranges)
		slices.SortFunc(out.Ranges, func(a, b Range) int {
			if c := strings.Compare(a.From, b.From); c != 0 {
				return c
			}
			return strings.Compare(a.To, b.To)
		})
		out.Ranges = slices.Compact(out.Ranges)
	}
	for _, d := range weekOrder {
		if wd&(1<<d) != 0 {
			out.Weekdays = append(out.Weekdays, weekdayNames[d])
		}
	}
	return out
}

// loadZone loads an IANA zone, as the schedule package does: "Local" is refused, since it is whatever the host
// says and replicas could disagree.
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

// parseDate reads a date "2006-01-02" as its day number.
func parseDate(s string) (int64, error) {
	t, err := time.Parse(dateLayout, s)
	if err != nil {
		var pe *time.ParseError
		if errors.As(err, &pe) && pe.Message != "" {
			// time's own message quotes the whole value again; the FieldError already does.
			return 0, fmt.Errorf("not a date (want YYYY-MM-DD): %s", strings.TrimPrefix(pe.Message, ": "))
		}
		return 0, errors.New("not a date (want YYYY-MM-DD)")
	}
	return dayNumber(t.Date()), nil
}

// Weekdays: bit d of a mask is time.Weekday d.
const allWeekdays = 1<<7 - 1

var (
	weekdayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	weekOrder    = [7]time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday, time.Sunday}
)

// parseWeekday reads "sat" or "Saturday" (in any case).
func parseWeekday(s string) (time.Weekday, bool) {
	s = strings.ToLower(s)
	for d, name := range weekdayNames {
		if s == name || s == strings.ToLower(time.Weekday(d).String()) {
			return time.Weekday(d), true
		}
	}
	return 0, false
}
