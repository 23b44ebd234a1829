package calendar

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	ics "github.com/arran4/golang-ical"
	"github.com/teambition/rrule-go"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// Limits of ImportICS.
const (
	// MaxICSBytes is the largest .ics file read; a larger one is refused before it is parsed.
	MaxICSBytes = 4 << 20
	// MaxICSEvents is the most VEVENTs a file may hold.
	MaxICSEvents = 2_000
	// MaxICSRecurring is the most of them that may recur (RRULE). Expanding a rule that stops matching costs up
	// to about ten milliseconds (see expand), so a hostile file costs at most a few seconds.
	MaxICSRecurring = 200
	// ICSHorizonYears is how far a recurring event is expanded: from its DTSTART, or over ImportOptions' window,
	// which may not be longer.
	ICSHorizonYears = 10
	// maxICSDepth bounds the nesting of components (VCALENDAR > VEVENT > VALARM is three).
	maxICSDepth = 8
	// The years an event may start in: recurrences are expanded from DTSTART, so this bounds their cost.
	minICSYear, maxICSYear = 1900, 2999
)

// ImportOptions says what calendar ImportICS makes of a file.
type ImportOptions struct {
	// Name is the calendar's name (required).
	Name string
	// TZ is the calendar's zone: timed events exclude the dates they touch in it, and times without a zone
	// ("floating") are read in it. Defaults to the file's X-WR-TIMEZONE, else UTC.
	TZ string
	// From and To ("2006-01-02", inclusive), if set, are the window of dates kept: occurrences outside it are
	// dropped, and recurring events are expanded over it instead of from their DTSTART. At most
	// ICSHorizonYears long; set both or neither.
	From, To string
}

// ImportICS reads an iCalendar file (RFC 5545) and returns the Spec of a calendar that excludes the days of its
// events, validated and normalized:
//
//   - an all-day event (DTSTART;VALUE=DATE) excludes its dates, DTEND exclusive (one day without DTEND or
//     DURATION);
//   - a timed event excludes every date in the calendar's zone that it touches, from DTSTART up to but not
//     including DTEND;
//   - a recurring event (RRULE, RDATE, EXDATE) does so for each occurrence, expanded for ICSHorizonYears from
//     its DTSTART or over the window of the options, in wall-clock time as RFC 5545 specifies; an instance
//     overridden by another VEVENT with the same UID and a RECURRENCE-ID is replaced by it;
//   - a cancelled event (STATUS:CANCELLED) excludes nothing.
//
// Single days become dates and longer spans ranges. Errors name the line or the event (its index, first line,
// UID and SUMMARY) and what is wrong. Not supported, and refused with a message: VTIMEZONE definitions (TZID
// must be an IANA name), EXRULE, RDATE periods, RRULEs finer than daily, and RECURRENCE-ID ranges.
func ImportICS(r io.Reader, opt ImportOptions) (Spec, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxICSBytes+1))
	if err != nil {
		return Spec{}, fmt.Errorf("reading iCalendar: %w", err)
	}
	if len(data) > MaxICSBytes {
		return Spec{}, fmt.Errorf("reading iCalendar: the file is larger than %d MiB", MaxICSBytes>>20)
	}
	lines, err := scanICS(data)
	if err != nil {
		return Spec{}, fmt.Errorf("parsing iCalendar: %w", err)
	}
	cal, err := parseICS(data)
	if err != nil {
		return Spec{}, fmt.Errorf("parsing iCalendar: %w", err)
	}
	im, err := newImporter(cal, opt)
	if err != nil {
		return Spec{}, fmt.Errorf("importing iCalendar: %w", err)
	}
	events := cal.Events()
	if len(events) != len(lines) {
		// scanICS and the parser disagree on the events; name none rather than the wrong line.
		lines = make([]int, len(events))
	}
	evs := make([]*icsEvent, len(events))
	for i, ev := range events {
		evs[i] = &icsEvent{VEvent: ev, index: i + 1, line: lines[i]}
		evs[i].uid = evs[i].text(ics.ComponentPropertyUniqueId)
		evs[i].summary = evs[i].text(ics.ComponentPropertySummary)
	}
	// Overridden instances: UID -> RECURRENCE-ID wall-clock times that the master must not produce.
	for _, ev := range evs {
		if err := im.noteOverride(ev); err != nil {
			return Spec{}, fmt.Errorf("importing iCalendar: %s: %w", ev, err)
		}
	}
	for _, ev := range evs {
		if err := im.add(ev); err != nil {
			return Spec{}, fmt.Errorf("importing iCalendar: %s: %w", ev, err)
		}
	}
	s := im.spec()
	c, err := s.Compile()
	if err != nil {
		return Spec{}, fmt.Errorf("importing iCalendar: %w", err)
	}
	return c.Spec(), nil
}

// scanICS checks the structure of the file line by line (content lines, BEGIN/END nesting, the number of
// events), so that its errors can name a line, which the parser's cannot. It returns the first line of each
// VEVENT of the VCALENDAR, in order.
func scanICS(data []byte) ([]int, error) {
	type open struct {
		name string
		line int
	}
	var (
		stack     []open
		events    []int
		calendars int
	)
	check := func(text string, line int) error {
		if text == "" {
			return nil
		}
		name, rest, ok := cutName(text)
		if !ok {
			return fmt.Errorf("line %d: not a content line (want NAME:value or NAME;PARAM=x:value): %s", line, errlimit.Quote(text))
		}
		if name != "BEGIN" && name != "END" {
			if len(stack) == 0 {
				return fmt.Errorf("line %d: %s outside BEGIN:VCALENDAR", line, name)
			}
			return nil
		}
		value := strings.ToUpper(strings.TrimSpace(rest[strings.IndexByte(rest, ':')+1:]))
		if name == "BEGIN" {
			switch {
			case len(stack) == 0 && value != "VCALENDAR":
				return fmt.Errorf("line %d: BEGIN:%s before BEGIN:VCALENDAR", line, errlimit.Cut(value, errlimit.Value))
			case len(stack) == 0 && calendars > 0:
				return fmt.Errorf("line %d: a second VCALENDAR; import one calendar per file", line)
			case len(stack) == maxICSDepth:
				return fmt.Errorf("line %d: components nested more than %d deep", line, maxICSDepth)
			case len(stack) == 1 && value == "VEVENT":
				if len(events) == MaxICSEvents {
					return fmt.Errorf("line %d: more than %d events; split the file", line, MaxICSEvents)
				}
				events = append(events, line)
			}
			if len(stack) == 0 {
				calendars++
			}
			stack = append(stack, open{value, line})
			return nil
		}
		switch top := len(stack) - 1; {
		case top < 0:
			return fmt.Errorf("line %d: END:%s without BEGIN", line, errlimit.Cut(value, errlimit.Value))
		case stack[top].name != value:
			return fmt.Errorf("line %d: END:%s, but %s (line %d) is not ended", line, errlimit.Cut(value, errlimit.Value), stack[top].name, stack[top].line)
		}
		stack = stack[:len(stack)-1]
		return nil
	}
	// Unfold: a line that starts with a space or a tab continues the one before (RFC 5545 3.1).
	var (
		cur     strings.Builder
		curLine int
	)
	for i, raw := range bytes.Split(data, []byte("\n")) {
		raw = bytes.TrimSuffix(raw, []byte("\r"))
		if len(raw) > 0 && (raw[0] == ' ' || raw[0] == '\t') && curLine > 0 {
			cur.Write(raw[1:])
			continue
		}
		if err := check(cur.String(), curLine); err != nil {
			return nil, err
		}
		cur.Reset()
		cur.Write(raw)
		curLine = i + 1
	}
	if err := check(cur.String(), curLine); err != nil {
		return nil, err
	}
	switch {
	case calendars == 0:
		return nil, errors.New("no BEGIN:VCALENDAR: not an iCalendar file")
	case len(stack) > 0:
		return nil, fmt.Errorf("BEGIN:%s (line %d) is not ended", stack[len(stack)-1].name, stack[len(stack)-1].line)
	}
	return events, nil
}

// cutName splits a content line into its name (upper case) and the rest, which starts with ';' or ':'.
func cutName(line string) (string, string, bool) {
	i := strings.IndexAny(line, ";:")
	if i <= 0 {
		return "", "", false
	}
	for _, c := range line[:i] {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return "", "", false
		}
	}
	rest := line[i:]
	if !strings.Contains(rest, ":") {
		return "", "", false
	}
	return strings.ToUpper(line[:i]), rest, true
}

// parseICS parses the file with the library, turning a panic on input it does not expect into an error.
func parseICS(data []byte) (cal *ics.Calendar, err error) {
	defer func() {
		if p := recover(); p != nil {
			cal, err = nil, fmt.Errorf("the parser failed: %v", p)
		}
	}()
	cal, err = ics.ParseCalendar(bytes.NewReader(data))
	if err != nil {
		return nil, errlimit.Wrap(err)
	}
	return cal, nil
}

// icsEvent is a VEVENT with what errors say about it.
type icsEvent struct {
	*ics.VEvent
	index, line  int
	uid, summary string
}

// String names the event: `event 3 (line 17, UID "x", "Christmas Day")`.
func (ev *icsEvent) String() string {
	var parts []string
	if ev.line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", ev.line))
	}
	if ev.uid != "" {
		parts = append(parts, "UID "+errlimit.Quote(ev.uid))
	}
	if ev.summary != "" {
		parts = append(parts, errlimit.Quote(ev.summary))
	}
	return fmt.Sprintf("event %d (%s)", ev.index, strings.Join(parts, ", "))
}

func (ev *icsEvent) text(p ics.ComponentProperty) string {
	if prop := ev.GetProperty(p); prop != nil {
		return prop.Value
	}
	return ""
}

// one returns the event's property p, refusing it given twice.
func (ev *icsEvent) one(p ics.ComponentProperty) (*ics.IANAProperty, error) {
	props := ev.GetProperties(p)
	switch len(props) {
	case 0:
		return nil, nil
	case 1:
		return props[0], nil
	}
	return nil, fmt.Errorf("%s is given %d times", p, len(props))
}

// icsTime is a DATE or DATE-TIME value: a date (an all-day value), or a wall-clock time with its zone.
type icsTime struct {
	date bool
	wall time.Time      // the wall-clock time as if in UTC (a date at 00:00)
	loc  *time.Location // the zone of wall: TZID, UTC for a "Z" time, the calendar's zone for a floating time
}

// instant returns the instant of t, by the cron DST rules (a time skipped by a jump is the jump's instant).
func (t icsTime) instant() int64 { return wallInstant(t.loc, t.wall.Unix()) }

// importer turns events into excluded days.
type importer struct {
	name       string
	tz         string
	loc        *time.Location
	window     bool  // whether From and To were given
	from, to   int64 // the window's first and last day numbers
	days       []span
	count      int                  // occurrences expanded, to bound the result
	recurring  int                  // events with an RRULE
	overridden map[string][]icsTime // UID -> RECURRENCE-IDs: the instances that other VEVENTs replace
}

func newImporter(cal *ics.Calendar, opt ImportOptions) (*importer, error) {
	im := &importer{name: opt.Name, tz: opt.TZ, overridden: map[string][]icsTime{}}
	if im.tz == "" {
		for _, p := range cal.CalendarProperties {
			if strings.EqualFold(p.IANAToken, "X-WR-TIMEZONE") {
				im.tz = strings.TrimSpace(p.Value)
			}
		}
	}
	im.loc = time.UTC
	if im.tz != "" {
		var err error
		if im.loc, err = loadZone(im.tz); err != nil {
			return nil, fmt.Errorf("tz %s: %w", errlimit.Quote(im.tz), err)
		}
	}
	if (opt.From == "") != (opt.To == "") {
		return nil, errors.New("set both the start and the end of the window, or neither")
	}
	if opt.From != "" {
		var err error
		if im.from, err = parseDate(opt.From); err != nil {
			return nil, fmt.Errorf("window start %s: %w", errlimit.Quote(opt.From), err)
		}
		if im.to, err = parseDate(opt.To); err != nil {
			return nil, fmt.Errorf("window end %s: %w", errlimit.Quote(opt.To), err)
		}
		y, m, d := dayDate(im.from)
		switch {
		case im.to < im.from:
			return nil, fmt.Errorf("the window ends (%s) before it starts (%s)", opt.To, opt.From)
		case im.to >= dayNumber(y+ICSHorizonYears, m, d):
			return nil, fmt.Errorf("the window %s to %s is longer than %d years", opt.From, opt.To, ICSHorizonYears)
		}
		im.window = true
	}
	return im, nil
}

// noteOverride records the instance that an overriding VEVENT (one with RECURRENCE-ID) replaces.
func (im *importer) noteOverride(ev *icsEvent) error {
	p, err := ev.one(ics.ComponentPropertyRecurrenceId)
	if err != nil || p == nil {
		return err
	}
	if r := p.ICalParameters["RANGE"]; len(r) > 0 {
		return fmt.Errorf("RECURRENCE-ID;RANGE=%s is not supported; give each changed instance its own VEVENT", errlimit.Cut(r[0], errlimit.Value))
	}
	t, err := im.parseTime(p)
	if err != nil {
		return fmt.Errorf("RECURRENCE-ID: %w", err)
	}
	im.overridden[ev.uid] = append(im.overridden[ev.uid], t)
	return nil
}

// add excludes the days of one event.
func (im *importer) add(ev *icsEvent) error {
	if strings.EqualFold(strings.TrimSpace(ev.text(ics.ComponentPropertyStatus)), "CANCELLED") {
		return nil
	}
	if len(ev.GetProperties(ics.ComponentPropertyExrule)) > 0 {
		return errors.New("EXRULE is not supported (RFC 5545 deprecates it); list the exceptions with EXDATE")
	}
	p, err := ev.one(ics.ComponentPropertyDtStart)
	if err != nil {
		return err
	}
	if p == nil {
		return errors.New("DTSTART is missing")
	}
	start, err := im.parseTime(p)
	if err != nil {
		return fmt.Errorf("DTSTART: %w", err)
	}
	if y := start.wall.Year(); y < minICSYear || y > maxICSYear {
		return fmt.Errorf("DTSTART %s: the year must be between %d and %d", errlimit.Quote(p.Value), minICSYear, maxICSYear)
	}
	length, err := im.length(ev, start)
	if err != nil {
		return err
	}
	rules := ev.GetProperties(ics.ComponentPropertyRrule)
	rdates := ev.GetProperties(ics.ComponentPropertyRdate)
	if len(rules) == 0 && len(rdates) == 0 || ev.GetProperty(ics.ComponentPropertyRecurrenceId) != nil {
		return im.occurrence(start, length)
	}
	if len(rules) > 0 {
		if im.recurring++; im.recurring > MaxICSRecurring {
			return fmt.Errorf("more than %d recurring events; split the file", MaxICSRecurring)
		}
	}
	starts, err := im.expand(ev, start, rules, rdates)
	if err != nil {
		return err
	}
	for _, w := range starts {
		if err := im.occurrence(icsTime{date: start.date, wall: w, loc: start.loc}, length); err != nil {
			return err
		}
	}
	return nil
}

// length returns how long each occurrence of the event lasts: DTEND - DTSTART, or DURATION, or the default (a
// day for an all-day event, nothing for a timed one). For an all-day event it is a whole number of days.
func (im *importer) length(ev *icsEvent, start icsTime) (time.Duration, error) {
	end, err := ev.one(ics.ComponentPropertyDtEnd)
	if err != nil {
		return 0, err
	}
	dur, err := ev.one(ics.ComponentPropertyDuration)
	if err != nil {
		return 0, err
	}
	var d time.Duration
	switch {
	case end != nil && dur != nil:
		return 0, errors.New("both DTEND and DURATION are given (RFC 5545 allows one)")
	case end != nil:
		e, err := im.parseTime(end)
		if err != nil {
			return 0, fmt.Errorf("DTEND: %w", err)
		}
		if e.date != start.date {
			return 0, fmt.Errorf("DTEND %s is not of the same type as DTSTART (both dates or both date-times)", errlimit.Quote(end.Value))
		}
		if start.date {
			d = e.wall.Sub(start.wall)
		} else {
			d = time.Duration(e.instant()-start.instant()) * time.Second
		}
		if d < 0 {
			return 0, fmt.Errorf("DTEND %s is before DTSTART", errlimit.Quote(end.Value))
		}
	case dur != nil:
		if d, err = parseICSDuration(dur.Value, start.date); err != nil {
			return 0, fmt.Errorf("DURATION %s: %w", errlimit.Quote(dur.Value), err)
		}
	}
	if start.date && d < 24*time.Hour {
		d = 24 * time.Hour // DTEND equal to DTSTART: the day itself
	}
	if d > (MaxExcludedRun+1)*24*time.Hour {
		return 0, fmt.Errorf("lasts %s, more than the %d days a calendar may exclude in a row", d, MaxExcludedRun)
	}
	return d, nil
}

// occurrence excludes the dates of one occurrence that starts at start and lasts length.
func (im *importer) occurrence(start icsTime, length time.Duration) error {
	var from, to int64
	if start.date {
		from = dayNumber(start.wall.Date())
		to = from + int64(length/(24*time.Hour)) - 1
	} else {
		s := start.instant()
		e := s + int64(length/time.Second)
		from, to = localDay(im.loc, s), localDay(im.loc, max(s, e-1))
	}
	if im.window {
		from, to = max(from, im.from), min(to, im.to)
		if from > to {
			return nil
		}
	}
	if im.count++; im.count > MaxEntries {
		return fmt.Errorf("the events expand to more than %d occurrences, the most a calendar can list", MaxEntries)
	}
	im.days = append(im.days, span{from, to})
	return nil
}

// expand returns the wall-clock starts of a recurring event's occurrences within the horizon: DTSTART, the
// RRULEs' and the RDATEs', less the EXDATEs and the overridden instances, in order.
//
// The rules are expanded by rrule-go in wall-clock time, as RFC 5545 specifies (a daily 09:00 stays 09:00
// across a DST change), and shifted by a multiple of 400 years to end just before the library's last year,
// 9999: the Gregorian calendar repeats every 400 years to the weekday, so the occurrences are the same. The
// library searches a rule that matches nothing more (BYMONTH=2;BYMONTHDAY=30) until that year, which would
// take a daily rule a tenth of a second from 2027; shifted, at most 400 years of search, a few milliseconds
// (ten for the slowest, a daily BYSETPOS).
func (im *importer) expand(ev *icsEvent, start icsTime, rules, rdates []*ics.IANAProperty) ([]time.Time, error) {
	// The horizon [lo, hi) in wall-clock time.
	lo, hi := start.wall, start.wall.AddDate(ICSHorizonYears, 0, 0)
	if im.window {
		// A day before and after the window: a timed occurrence's wall-clock date and the calendar's date of it
		// differ by at most one.
		lo = time.Unix((im.from-1)*secondsPerDay, 0).UTC()
		hi = time.Unix((im.to+2)*secondsPerDay, 0).UTC()
	}
	shift := 400 * ((9999 - hi.Year()) / 400)
	set := map[int64]bool{start.wall.Unix(): true}
	for _, p := range rules {
		if err := im.expandRule(p, start, hi, shift, set); err != nil {
			return nil, fmt.Errorf("RRULE %s: %w", errlimit.Quote(p.Value), err)
		}
	}
	for _, p := range rdates {
		ts, err := im.parseTimes(p, start)
		if err != nil {
			return nil, fmt.Errorf("RDATE: %w", err)
		}
		for _, t := range ts {
			set[t.Unix()] = true
		}
	}
	for _, p := range ev.GetProperties(ics.ComponentPropertyExdate) {
		ts, err := im.parseTimes(p, start)
		if err != nil {
			return nil, fmt.Errorf("EXDATE: %w", err)
		}
		for _, t := range ts {
			delete(set, t.Unix())
		}
	}
	for _, t := range im.overridden[ev.uid] {
		delete(set, asWall(t, start).Unix())
	}
	var out []time.Time
	for w := range set {
		if t := time.Unix(w, 0).UTC(); !t.Before(lo) && t.Before(hi) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out, nil
}

// rruleParts are the parts of an RRULE that RFC 5545 defines; rrule-go also knows BYEASTER, which the 400-year
// shift would break (Easter does not repeat every 400 years).
var rruleParts = map[string]bool{
	"FREQ": true, "UNTIL": true, "COUNT": true, "INTERVAL": true, "BYSECOND": true, "BYMINUTE": true, "BYHOUR": true,
	"BYDAY": true, "BYMONTHDAY": true, "BYYEARDAY": true, "BYWEEKNO": true, "BYMONTH": true, "BYSETPOS": true, "WKST": true,
}

// expandRule adds to set the wall-clock starts (as Unix) of one RRULE's occurrences before hi.
func (im *importer) expandRule(p *ics.IANAProperty, start icsTime, hi time.Time, shift int, set map[int64]bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the recurrence library failed on it: %v", r)
		}
	}()
	var (
		parts []string
		until string
	)
	for _, part := range strings.Split(strings.TrimSpace(p.Value), ";") {
		key, value, _ := strings.Cut(part, "=")
		key = strings.ToUpper(key)
		switch {
		case !rruleParts[key]:
			return fmt.Errorf("unknown part %s", errlimit.Quote(key))
		case key == "FREQ" && (strings.EqualFold(value, "HOURLY") || strings.EqualFold(value, "MINUTELY") || strings.EqualFold(value, "SECONDLY")):
			return fmt.Errorf("FREQ=%s is not supported: a calendar excludes days; repeat the event daily or list its days", strings.ToUpper(value))
		case key == "UNTIL":
			until = value
			continue
		}
		parts = append(parts, key+"="+value)
	}
	o, err := rrule.StrToROptionInLocation(strings.Join(parts, ";"), time.UTC)
	if err != nil {
		return errlimit.Wrap(err)
	}
	o.Dtstart = start.wall.AddDate(shift, 0, 0)
	if until != "" {
		u, err := im.parseValue(until, nil, start)
		if err != nil {
			return fmt.Errorf("UNTIL: %w", err)
		}
		w := u.wall
		switch {
		case u.date && !start.date:
			w = w.Add(24*time.Hour - time.Second) // UNTIL=20301231 takes in that whole day
		case !u.date && u.loc != start.loc:
			w = wallOf(u.instant(), start.loc) // UNTIL in UTC, DTSTART in its zone
		}
		o.Until = w.AddDate(shift, 0, 0)
	}
	rule, err := rrule.NewRRule(*o)
	if err != nil {
		return errlimit.Wrap(err)
	}
	hiShifted := hi.AddDate(shift, 0, 0)
	next := rule.Iterator()
	for n := 0; ; n++ {
		t, ok := next()
		if !ok || !t.Before(hiShifted) {
			return nil
		}
		if n >= MaxEntries {
			return fmt.Errorf("more than %d occurrences within %d years", MaxEntries, ICSHorizonYears)
		}
		set[t.AddDate(-shift, 0, 0).Unix()] = true
	}
}

// parseTime reads a DATE or DATE-TIME property.
func (im *importer) parseTime(p *ics.IANAProperty) (icsTime, error) {
	if strings.Contains(p.Value, ",") {
		return icsTime{}, fmt.Errorf("%s: one value expected", errlimit.Quote(p.Value))
	}
	return im.parseValue(p.Value, p.ICalParameters, icsTime{})
}

// parseTimes reads the list of an RDATE or EXDATE as wall-clock times of the zone of start (dates as start's:
// a date EXDATE of a timed event removes the occurrence on that date at DTSTART's time).
func (im *importer) parseTimes(p *ics.IANAProperty, start icsTime) ([]time.Time, error) {
	if v := p.ICalParameters["VALUE"]; len(v) > 0 && strings.EqualFold(v[0], "PERIOD") {
		return nil, errors.New("VALUE=PERIOD is not supported; give the dates or date-times")
	}
	var out []time.Time
	for _, v := range strings.Split(p.Value, ",") {
		t, err := im.parseValue(v, p.ICalParameters, start)
		if err != nil {
			return nil, err
		}
		out = append(out, asWall(t, start))
	}
	return out, nil
}

// asWall returns t as a wall-clock start of the recurring event that starts at start: a date at start's time of
// day, a time of another zone as start's zone shows it, a time as its date for an all-day event.
func asWall(t, start icsTime) time.Time {
	w := t.wall
	switch {
	case t.date && !start.date:
		h, m, s := start.wall.Clock()
		return w.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute + time.Duration(s)*time.Second)
	case !t.date && start.date:
		return time.Date(w.Year(), w.Month(), w.Day(), 0, 0, 0, 0, time.UTC)
	case !t.date && t.loc != start.loc:
		return wallOf(t.instant(), start.loc)
	}
	return w
}

// parseValue reads "20271225", "20271225T090000" or "20271225T090000Z" with the parameters of its property
// (VALUE, TZID). A floating time is in the calendar's zone, unless ref (a DTSTART) gives it another: an
// UNTIL, RDATE or EXDATE without zone belongs to its DTSTART's.
func (im *importer) parseValue(v string, params map[string][]string, ref icsTime) (icsTime, error) {
	v = strings.TrimSpace(v)
	valueType := ""
	if p := params["VALUE"]; len(p) > 0 {
		valueType = strings.ToUpper(p[0])
	}
	switch {
	case len(v) == 8 && (valueType == "" || valueType == "DATE"):
		t, err := time.Parse("20060102", v)
		if err != nil {
			return icsTime{}, fmt.Errorf("%s is not a date (want YYYYMMDD)", errlimit.Quote(v))
		}
		return icsTime{date: true, wall: t, loc: im.loc}, nil
	case valueType == "DATE":
		return icsTime{}, fmt.Errorf("%s is not a date (want YYYYMMDD)", errlimit.Quote(v))
	case len(v) == 16 && v[15] == 'Z':
		t, err := time.Parse("20060102T150405", v[:15])
		if err != nil {
			return icsTime{}, fmt.Errorf("%s is not a date-time (want YYYYMMDDTHHMMSS, with Z for UTC)", errlimit.Quote(v))
		}
		return icsTime{wall: t, loc: time.UTC}, nil
	case len(v) == 15:
		t, err := time.Parse("20060102T150405", v)
		if err != nil {
			return icsTime{}, fmt.Errorf("%s is not a date-time (want YYYYMMDDTHHMMSS, with Z for UTC)", errlimit.Quote(v))
		}
		loc := im.loc
		if ref.loc != nil && !ref.date {
			loc = ref.loc
		}
		if tz := params["TZID"]; len(tz) > 0 {
			var err error
			if loc, err = loadZone(strings.Trim(tz[0], `"`)); err != nil {
				return icsTime{}, fmt.Errorf("TZID %s: %w (VTIMEZONE definitions are not read; use IANA names)", errlimit.Quote(tz[0]), err)
			}
		}
		return icsTime{wall: t, loc: loc}, nil
	}
	return icsTime{}, fmt.Errorf("%s is not a date or date-time (want YYYYMMDD or YYYYMMDDTHHMMSS, with Z for UTC)", errlimit.Quote(v))
}

// wallOf returns the wall-clock time of the instant u in loc, as if in UTC.
func wallOf(u int64, loc *time.Location) time.Time {
	_, off := time.Unix(u, 0).In(loc).Zone()
	return time.Unix(u+int64(off), 0).UTC()
}

// parseICSDuration reads an RFC 5545 duration: "P1D", "P2W", "PT8H30M", "P1DT12H". A duration of an all-day
// event must be whole days or weeks. Negative durations are refused: an event cannot end before it starts.
func parseICSDuration(s string, date bool) (time.Duration, error) {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(s)), "+"), "P")
	if !ok || rest == "" {
		return 0, errors.New("not a duration (want P1D, P2W, PT8H, ...)")
	}
	var d time.Duration
	inTime := false
	units := map[byte]time.Duration{'W': 7 * 24 * time.Hour, 'D': 24 * time.Hour}
	timeUnits := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second}
	for rest != "" {
		if rest[0] == 'T' && !inTime {
			inTime, rest = true, rest[1:]
			continue
		}
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || i == len(rest) || i > 6 {
			return 0, errors.New("not a duration (want P1D, P2W, PT8H, ...)")
		}
		n, _ := strconv.Atoi(rest[:i])
		unit, ok := units[rest[i]]
		if inTime {
			unit, ok = timeUnits[rest[i]]
		}
		if !ok {
			return 0, errors.New("not a duration (want P1D, P2W, PT8H, ...)")
		}
		d += time.Duration(n) * unit
		rest = rest[i+1:]
	}
	if date && (inTime || d%(24*time.Hour) != 0) {
		return 0, errors.New("an all-day event's duration must be whole days or weeks")
	}
	return d, nil
}

// spec builds the Spec of the excluded days: single days as dates, longer spans as ranges, without
// duplicates. Adjacent days stay apart (Christmas and the day after are two dates, as the file has them).
func (im *importer) spec() Spec {
	slices.SortFunc(im.days, func(a, b span) int {
		if a.from != b.from {
			return int(a.from - b.from)
		}
		return int(a.to - b.to)
	})
	s := Spec{Name: im.name, TZ: im.tz}
	for _, d := range slices.Compact(im.days) {
		if d.from == d.to {
			s.Dates = append(s.Dates, formatDay(d.from))
		} else {
			s.Ranges = append(s.Ranges, Range{From: formatDay(d.from), To: formatDay(d.to)})
		}
	}
	return s
}
