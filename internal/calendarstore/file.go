package calendarstore

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/named"
)

// MaxFileCalendars is the most calendars an apply file's list holds.
const MaxFileCalendars = 1_000

// ParseRange reads an inclusive range of dates written FROM..TO ("2026-12-24..2026-12-31"), as `ticker calendar
// put --range` and an apply file take it. The dates are checked when the calendar is.
func ParseRange(s string) (calendar.Range, error) {
	from, to, ok := strings.Cut(strings.TrimSpace(s), "..")
	if !ok || from == "" || to == "" {
		return calendar.Range{}, fmt.Errorf("range %s: want FROM..TO, for example 2026-12-24..2026-12-31", errlimit.Quote(s))
	}
	return calendar.Range{From: from, To: to}, nil
}

// ParseList reads the calendars of an apply file: n is the YAML list under its key prefix ("calendars"). Each
// entry is a mapping of the record's fields (name, tz, dates, ranges, weekdays); a range is a mapping {from, to}
// or, as ParseRange reads it, "FROM..TO". As for schedules, unknown and repeated fields are errors (a misspelt
// "weekday" must not silently exclude nothing), every calendar is validated, and a name given twice is refused.
// The error names each problem's entry, line and field. The calendars are returned as written.
func ParseList(n *yaml.Node, prefix string) ([]calendar.Spec, error) {
	return named.ParseList(n, prefix, named.Entries[calendar.Spec]{What: "calendars", Max: MaxFileCalendars, Decode: decodeEntry,
		Name: func(s calendar.Spec) string { return s.Name }, Validate: func(s calendar.Spec) error { return s.Validate() }})
}

// decodeEntry decodes one mapping into a Spec, field by field, refusing unknown and repeated fields. It decodes
// what it can before failing, so that the caller can name the entry.
func decodeEntry(n *yaml.Node) (calendar.Spec, error) {
	var s calendar.Spec
	if n.Kind != yaml.MappingNode {
		return s, fmt.Errorf("line %d: want a mapping of calendar fields (name, tz, dates, ranges, weekdays)", n.Line)
	}
	var errs []error
	set := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		if set[key.Value] {
			errs = append(errs, fmt.Errorf("line %d: field %s is given twice", key.Line, errlimit.Quote(key.Value)))
			continue
		}
		set[key.Value] = true
		var err error
		switch key.Value {
		case "name":
			err = val.Decode(&s.Name)
		case "tz":
			err = val.Decode(&s.TZ)
		case "dates":
			err = val.Decode(&s.Dates)
		case "ranges":
			s.Ranges, err = decodeRanges(val)
		case "weekdays":
			err = val.Decode(&s.Weekdays)
		default:
			err = errors.New("unknown field (want name, tz, dates, ranges, weekdays)")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: field %s: %w", key.Line, errlimit.Quote(key.Value), errlimit.Wrap(err)))
		}
	}
	return s, errors.Join(errs...)
}

// decodeRanges decodes a list of ranges, each a mapping {from, to} or a string FROM..TO.
func decodeRanges(n *yaml.Node) ([]calendar.Range, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, errors.New("want a list of ranges ({from: DATE, to: DATE}, or DATE..DATE)")
	}
	out := make([]calendar.Range, 0, len(n.Content))
	for i, e := range n.Content {
		r, err := decodeRange(e)
		if err != nil {
			return nil, fmt.Errorf("ranges[%d]: line %d: %w", i, e.Line, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// decodeRange decodes one range: a mapping of exactly from and to, or a string FROM..TO.
func decodeRange(n *yaml.Node) (calendar.Range, error) {
	if n.Kind == yaml.ScalarNode {
		return ParseRange(n.Value)
	}
	if n.Kind != yaml.MappingNode {
		return calendar.Range{}, errors.New("want {from: DATE, to: DATE} or DATE..DATE")
	}
	var r calendar.Range
	set := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		var err error
		switch {
		case set[key.Value]:
			err = errors.New("given twice")
		case key.Value == "from":
			err = val.Decode(&r.From)
		case key.Value == "to":
			err = val.Decode(&r.To)
		default:
			err = errors.New("unknown field (want from and to)")
		}
		if err != nil {
			return calendar.Range{}, fmt.Errorf("field %s: %w", errlimit.Quote(key.Value), errlimit.Wrap(err))
		}
		set[key.Value] = true
	}
	if !set["from"] || !set["to"] {
		return calendar.Range{}, errors.New("want both from and to")
	}
	return r, nil
}
