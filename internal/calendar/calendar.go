package calendar

import (
	"slices"
	"time"
)

// Calendar is a validated, compiled Spec: a set of excluded days in a zone. It is immutable and safe for
// concurrent use.
//
// The dates and ranges are kept as one sorted list of disjoint spans of day numbers, so testing a day costs a
// binary search whatever the calendar lists, and a ten-year range costs no more than a date.
type Calendar struct {
	name     string
	tz       string
	loc      *time.Location
	weekdays uint8  // bit d: time.Weekday d is excluded
	spans    []span // sorted, disjoint and not adjacent
	spec     Spec   // normalized
}

// span is an inclusive span of day numbers.
type span struct{ from, to int64 }

// Name returns the calendar's name.
func (c *Calendar) Name() string { return c.name }

// Location returns the zone whose dates the calendar lists (UTC when the Spec names none).
func (c *Calendar) Location() *time.Location { return c.loc }

// Spec returns the calendar's normalized Spec: dates and ranges sorted without duplicates, weekdays as
// "mon".."sun" in that order. The slices are the caller's.
func (c *Calendar) Spec() Spec {
	s := c.spec
	s.Dates, s.Ranges, s.Weekdays = slices.Clone(s.Dates), slices.Clone(s.Ranges), slices.Clone(s.Weekdays)
	return s
}

// Excludes reports whether the calendar excludes t's date in the calendar's zone.
func (c *Calendar) Excludes(t time.Time) bool {
	return c.excludesDay(c.day(t.Unix()))
}

// ExcludesDate reports whether the calendar excludes the date (year, month, day). Out-of-range values are
// normalized as by time.Date.
func (c *Calendar) ExcludesDate(year int, month time.Month, day int) bool {
	return c.excludesDay(dayNumber(year, month, day))
}

// day returns the day number of the date of the instant u (Unix seconds) in the calendar's zone.
func (c *Calendar) day(u int64) int64 {
	return localDay(c.loc, u)
}

func (c *Calendar) excludesDay(n int64) bool {
	if c.weekdays&(1<<weekday(n)) != 0 {
		return true
	}
	// The first span that ends on or after n; n is in it if it starts on or before n.
	i, j := 0, len(c.spans)
	for i < j {
		h := int(uint(i+j) >> 1)
		if c.spans[h].to < n {
			i = h + 1
		} else {
			j = h
		}
	}
	return i < len(c.spans) && c.spans[i].from <= n
}

// merge sorts spans and joins those that overlap or touch.
func merge(spans []span) []span {
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.from < b.from:
			return -1
		case a.from > b.from:
			return 1
		}
		return 0
	})
	out := spans[:0]
	for _, s := range spans {
		if n := len(out); n > 0 && s.from <= out[n-1].to+1 {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return slices.Clip(out)
}

// longestRun checks that no run of consecutive excluded days (spans and weekdays together) is longer than
// MaxExcludedRun. If one is, it returns it and false. The weekdays alone exclude at most six days in a row
// (seven are refused before), so only runs that contain a span need checking: each span is widened by the
// excluded weekdays around it, and joined with the next span when the widening reaches it.
func (c *Calendar) longestRun() (span, bool) {
	var cur span
	have := false
	for _, s := range c.spans {
		from, to := s.from, s.to
		for c.weekdays&(1<<weekday(from-1)) != 0 {
			from--
		}
		for c.weekdays&(1<<weekday(to+1)) != 0 {
			to++
		}
		if have && from <= cur.to+1 {
			cur.to = max(cur.to, to)
		} else {
			if have && cur.to-cur.from+1 > MaxExcludedRun {
				return cur, false
			}
			cur, have = span{from, to}, true
		}
	}
	if have && cur.to-cur.from+1 > MaxExcludedRun {
		return cur, false
	}
	return span{}, true
}

// Day numbers count days from 1970-01-01 (day 0) in the proleptic Gregorian calendar, without zone: a date, not
// an instant.

// dayNumber returns the day number of a date.
func dayNumber(year int, month time.Month, day int) int64 {
	return floorDiv(time.Date(year, month, day, 0, 0, 0, 0, time.UTC).Unix(), secondsPerDay)
}

// dayDate returns the date of a day number.
func dayDate(n int64) (int, time.Month, int) {
	return time.Unix(n*secondsPerDay, 0).UTC().Date()
}

// formatDay writes a day number as "2006-01-02".
func formatDay(n int64) string {
	return time.Unix(n*secondsPerDay, 0).UTC().Format(dateLayout)
}

// weekday returns the day of the week of a day number (1970-01-01 was a Thursday).
func weekday(n int64) time.Weekday {
	return time.Weekday(floorMod(n+4, 7))
}

// localDay returns the day number of the date of the instant u (Unix seconds) in loc.
func localDay(loc *time.Location, u int64) int64 {
	_, off := time.Unix(u, 0).In(loc).Zone()
	return floorDiv(u+int64(off), secondsPerDay)
}

const secondsPerDay = 86400

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
