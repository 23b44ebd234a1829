package schedule

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronParser accepts 5 fields, 6 with leading seconds, and the @-macros. Its parse is kept (it is well used and
// tested); its Next is not, see doc.go.
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig/cron's marker for a field written as "*" or "?" (its unexported starBit). The parser sets it
// for an unstepped wildcard; it decides the classic day-of-month/day-of-week OR rule.
const starBit = 1 << 63

// allHours has the bits of hours 0-23.
const allHours = 1<<24 - 1

// cronSched is a parsed cron expression in a zone.
type cronSched struct {
	second, minute, hour, dom, month, dow uint64 // robfig bit sets; bit i set = value i matches
	loc                                   *time.Location
	// realTime is set when every hour matches (hour field "*", "0-23" or @hourly): the expression is then matched
	// against the wall clock as it actually runs (Vixie cron's wildcard rule), see doc.go.
	realTime bool
	// domOrDow is the classic cron rule: when both day fields are restricted, a day matches if either does.
	domOrDow bool
}

// cronField describes one field for validation messages.
type cronField struct {
	name     string
	min, max int
	names    map[string]int
	hint     string
}

var cronFields = [6]cronField{
	{name: "second", max: 59},
	{name: "minute", max: 59},
	{name: "hour", max: 23},
	{name: "day-of-month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}},
	{name: "day-of-week", max: 6, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}, hint: " (0 is Sunday)"},
}

var macros = map[string]bool{"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true, "@daily": true, "@midnight": true, "@hourly": true}

// parseCron validates expr, naming the field and value at fault, then builds it with robfig/cron's parser.
//
// The field check duplicates the parser's grammar on purpose: the parser's messages ("end of range (61) above
// maximum (59): 61") do not say which field is wrong, and operators read these messages in `schedule apply`.
func parseCron(expr string, loc *time.Location) (*cronSched, error) {
	trimmed := strings.TrimSpace(expr)
	switch {
	case trimmed == "":
		return nil, errors.New("is empty")
	case strings.HasPrefix(trimmed, "@every"):
		return nil, errors.New("@every is not supported here; use the every field")
	case strings.Contains(trimmed, "TZ="):
		// robfig/cron reads a CRON_TZ=/TZ= prefix (and panics on one without a space after it); a second way to
		// set the zone would contradict the tz field, so it is refused before the parser sees it.
		return nil, errors.New("CRON_TZ= and TZ= prefixes are not supported; use the tz field")
	case strings.HasPrefix(trimmed, "@"):
		if !macros[trimmed] {
			return nil, fmt.Errorf("unknown macro %s (want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)", trimmed)
		}
	default:
		fields := strings.Fields(trimmed)
		if len(fields) != 5 && len(fields) != 6 {
			return nil, fmt.Errorf("has %d fields, want 5 (minute hour day-of-month month day-of-week) or 6 (with leading seconds)", len(fields))
		}
		defs := cronFields[1:]
		if len(fields) == 6 {
			defs = cronFields[:]
		}
		for i, f := range fields {
			if err := checkCronField(f, defs[i]); err != nil {
				return nil, err
			}
		}
	}

	parsed, err := parseRobfig(trimmed)
	if err != nil {
		return nil, err
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("parsed to unsupported schedule type %T", parsed)
	}
	c := &cronSched{
		second: spec.Second, minute: spec.Minute, hour: spec.Hour, dom: spec.Dom, month: spec.Month, dow: spec.Dow,
		loc:      loc,
		realTime: spec.Hour&allHours == allHours,
		domOrDow: spec.Dom&starBit == 0 && spec.Dow&starBit == 0,
	}
	if !c.domOrDow && c.dow&starBit != 0 && c.dom&starBit == 0 && !c.domFitsSomeMonth() {
		return nil, errors.New("day-of-month never occurs in the months given, so the schedule would never run")
	}
	return c, nil
}

// parseRobfig calls the parser and turns a panic into an error: the parser has had index panics on odd input, and
// a schedule apply must never bring the process down.
func parseRobfig(expr string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cannot be parsed: %v", r)
		}
	}()
	s, err = cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("cannot be parsed: %w", err)
	}
	return s, nil
}

// checkCronField checks one field: a comma-separated list of "*", "?", N, N-M, each optionally "/step".
func checkCronField(field string, def cronField) error {
	if field == "" || strings.HasPrefix(field, ",") || strings.HasSuffix(field, ",") || strings.Contains(field, ",,") {
		return fmt.Errorf("%s field %q has an empty list element", def.name, field)
	}
	for _, part := range strings.Split(field, ",") {
		rng, stepStr, hasStep := strings.Cut(part, "/")
		if hasStep {
			if strings.Contains(stepStr, "/") {
				return fmt.Errorf("%s %q has more than one '/'", def.name, part)
			}
			if step, err := strconv.Atoi(stepStr); err != nil || step < 1 {
				return fmt.Errorf("%s step %q must be a positive number", def.name, stepStr)
			}
		}
		if rng == "*" || rng == "?" {
			continue
		}
		lowStr, highStr, isRange := strings.Cut(rng, "-")
		low, err := cronValue(lowStr, def)
		if err != nil {
			return err
		}
		if isRange {
			high, err := cronValue(highStr, def)
			if err != nil {
				return err
			}
			if low > high {
				return fmt.Errorf("%s range %s runs backwards (wrap-around ranges are not supported)", def.name, rng)
			}
		}
	}
	return nil
}

func cronValue(s string, def cronField) (int, error) {
	if v, ok := def.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a number", def.name, s)
	}
	if v < def.min || v > def.max {
		return 0, fmt.Errorf("%s %d out of range %d-%d%s", def.name, v, def.min, def.max, def.hint)
	}
	return v, nil
}

// daysIn returns the number of days in month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// domFitsSomeMonth reports whether some day-of-month in the expression exists in some month in it (29 February
// counts), so "0 0 31 4 *" and "0 0 30 2 *" are refused instead of searching forever.
func (c *cronSched) domFitsSomeMonth() bool {
	maxDays := [13]uint{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for m := 1; m <= 12; m++ {
		daysOfMonth := uint64(1)<<(maxDays[m]+1) - 1 // bits 0..maxDays; bit 0 is never set in dom
		if c.month&(1<<m) != 0 && c.dom&daysOfMonth != 0 {
			return true
		}
	}
	return false
}

// nextBit returns the smallest value >= from whose bit is set in mask (values above 62), or -1.
func nextBit(mask uint64, from int) int {
	if from > 62 {
		return -1
	}
	m := mask &^ starBit & (^uint64(0) << uint(from))
	if m == 0 {
		return -1
	}
	return bits.TrailingZeros64(m)
}

func (c *cronSched) dayMatches(day, weekday int) bool {
	domMatch := c.dom&(1<<uint(day)) != 0
	dowMatch := c.dow&(1<<uint(weekday)) != 0
	if c.domOrDow {
		return domMatch || dowMatch
	}
	return domMatch && dowMatch
}

// civilHorizonYears bounds nextCivil's search. Validation guarantees a match within 8 years (29 February after a
// skipped leap year), so reaching the horizon means "never" only for times near the end of representable years.
const civilHorizonYears = 12

// nextCivil returns the smallest matching wall-clock time strictly after lo. Wall-clock times are seconds since
// 1970-01-01T00:00:00 of a zone-less calendar ("civil seconds"): no zone, no DST, every day has 86400 seconds.
func (c *cronSched) nextCivil(lo int64) (int64, bool) {
	t := time.Unix(lo+1, 0).UTC()
	year, mon, day := t.Date()
	hour, min, sec := t.Clock()
	month := int(mon)
	limit := year + civilHorizonYears
	for year <= limit {
		m := nextBit(c.month, month)
		if m < 0 || m > 12 {
			year, month, day, hour, min, sec = year+1, 1, 1, 0, 0, 0
			continue
		}
		if m != month {
			month, day, hour, min, sec = m, 1, 0, 0, 0
		}
		dim := daysIn(year, time.Month(month))
		wd := int(time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).Weekday())
		d := day
		for ; d <= dim && !c.dayMatches(d, wd); d++ {
			wd = (wd + 1) % 7
		}
		if d > dim {
			month, day, hour, min, sec = month+1, 1, 0, 0, 0
			continue
		}
		if d != day {
			day, hour, min, sec = d, 0, 0, 0
		}
		h := nextBit(c.hour, hour)
		if h < 0 || h > 23 {
			day, hour, min, sec = day+1, 0, 0, 0
			continue
		}
		if h != hour {
			hour, min, sec = h, 0, 0
		}
		mi := nextBit(c.minute, min)
		if mi < 0 || mi > 59 {
			hour, min, sec = hour+1, 0, 0
			continue
		}
		if mi != min {
			min, sec = mi, 0
		}
		s := nextBit(c.second, sec)
		if s < 0 || s > 59 {
			min, sec = min+1, 0
			continue
		}
		return time.Date(year, time.Month(month), day, hour, min, s, 0, time.UTC).Unix(), true
	}
	return 0, false
}

// period is a span of real time with one UTC offset, [start, end) in Unix seconds.
type period struct {
	off        int64 // seconds east of UTC: wall clock = instant + off
	start, end int64
	hasStart   bool // false: the offset holds since the beginning of time
	hasEnd     bool // false: the offset holds forever (UTC, zones without future transitions)
}

func periodAt(loc *time.Location, t int64) period {
	p := zoneBounds(loc, t)
	if p.hasEnd && p.end <= t {
		// Go's ZoneBounds returns an end at or before t on the last UTC day of a leap year served by the zone's TZ
		// footer rule (after its last explicit transition, e.g. 2040-12-31 in Europe/Berlin; golang/go#81583).
		// That bound is the year's end, not a transition, and next would never advance past it. The following
		// day's period starts at the real year boundary, with the same offset; no zone changes offset on 31 Dec.
		if q := zoneBounds(loc, t+86400); q.hasStart && q.start > t && q.off == p.off {
			p.end = q.start
		} else {
			p.end = t + 1
		}
	}
	if p.hasStart && p.start > t {
		p.start = t
	}
	return p
}

func zoneBounds(loc *time.Location, t int64) period {
	tt := time.Unix(t, 0).In(loc)
	_, off := tt.Zone()
	start, end := tt.ZoneBounds()
	return period{
		off: int64(off), start: start.Unix(), end: end.Unix(),
		hasStart: !start.IsZero(), hasEnd: !end.IsZero(),
	}
}

// maxPeriodWalk bounds how many zone periods next crosses; zones change offset at most a few times a year and the
// search horizon is civilHorizonYears.
const maxPeriodWalk = 200

// next returns the first slot strictly after the instant a (Unix seconds), following the DST rules in doc.go.
//
// It walks the zone's periods of constant offset from the one holding a. Inside a period the wall clock runs in
// step with real time, so the first matching wall-clock time in it is its first slot. Between periods:
//   - fixed-hour expressions skip, in a period that starts by turning clocks back, the wall-clock times that
//     already occurred before the turn (they ran at their first occurrence), and run once at a period's start if
//     the skipped-over wall-clock times of a spring-forward held a match (the gap collapses onto the transition);
//   - real-time expressions (every hour matches) do neither: they match what the clock actually shows.
func (c *cronSched) next(a int64) (int64, bool) {
	p := periodAt(c.loc, a)
	for i := 0; i < maxPeriodWalk; i++ {
		first := i == 0
		// Search for wall-clock matches after lo; in later periods everything from the period's start is new.
		lo := p.start + p.off - 1
		if first {
			lo = a + p.off
		}
		if !c.realTime && p.hasStart {
			prevOff := periodAt(c.loc, p.start-1).off
			switch {
			case prevOff > p.off:
				// Clocks went back at p.start: wall-clock times before start+prevOff already occurred in the
				// previous period and ran there.
				lo = max(lo, p.start+prevOff-1)
			case prevOff < p.off && !first:
				// Clocks jumped forward at p.start, skipping wall-clock [start+prevOff, start+off). A match in
				// there runs at the transition instant; p.start > a because a is in an earlier period.
				if m, ok := c.nextCivil(p.start + prevOff - 1); ok && m < p.start+p.off {
					return p.start, true
				}
			}
		}
		m, ok := c.nextCivil(lo)
		if !ok {
			return 0, false
		}
		if !p.hasEnd || m-p.off < p.end {
			return m - p.off, true
		}
		// Into the next period. Its reported start can be earlier than where this one ended only when that end
		// was not a transition (see periodAt); the wall-clock times before it were searched already.
		end := p.end
		p = periodAt(c.loc, end)
		p.start, p.hasStart = max(p.start, end), true
	}
	return 0, false
}
