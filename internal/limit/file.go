package limit

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/named"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// MaxFileLimits is the most limits an apply file's list holds.
const MaxFileLimits = 10_000

// ParseList reads the limits of an apply file: n is the YAML list under its key prefix ("limits"). Each entry is
// a mapping of the record's fields (name, pool, concurrency, rate, window); rate may also be written as
// ParseRate reads it, "100/1m", without window. As for schedules, unknown and repeated fields are errors (a
// misspelt "concurency" must not silently mean "no bound"), every limit is validated, and a name given twice is
// refused. The error names each problem's entry, line and field.
func ParseList(n *yaml.Node, prefix string) ([]Limit, error) {
	return named.ParseList(n, prefix, named.Entries[Limit]{What: "limits", Max: MaxFileLimits, Decode: decodeEntry,
		Name: func(l Limit) string { return l.Name }, Validate: func(l Limit) error { return l.Validate() }})
}

// decodeEntry decodes one mapping into a Limit, field by field, refusing unknown and repeated fields. It decodes
// what it can before failing, so that the caller can name the entry.
func decodeEntry(n *yaml.Node) (Limit, error) {
	var l Limit
	if n.Kind != yaml.MappingNode {
		return l, fmt.Errorf("line %d: want a mapping of limit fields (name, pool, concurrency, rate, window)", n.Line)
	}
	var errs []error
	set := map[string]bool{}
	rateWindow := false // rate was given as R/WINDOW
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
			err = val.Decode(&l.Name)
		case "pool":
			err = val.Decode(&l.Pool)
		case "concurrency":
			err = val.Decode(&l.Concurrency)
		case "rate":
			rateWindow, err = decodeRate(val, &l)
		case "window":
			err = val.Decode(&l.Window)
		default:
			err = errors.New("unknown field (want name, pool, concurrency, rate, window)")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("line %d: field %s: %w", key.Line, errlimit.Quote(key.Value), errlimit.Wrap(err)))
		}
	}
	if rateWindow && set["window"] {
		errs = append(errs, fmt.Errorf("line %d: field \"window\": the rate already gives it (R/WINDOW)", n.Line))
	}
	return l, errors.Join(errs...)
}

// decodeRate decodes a rate: a whole number of starts per window (the record's form) or R/WINDOW, which sets
// the window too (it then reports true).
func decodeRate(val *yaml.Node, l *Limit) (bool, error) {
	if val.Kind == yaml.ScalarNode && val.Tag == "!!int" {
		return false, val.Decode(&l.Rate)
	}
	var s string
	if err := val.Decode(&s); err != nil {
		return false, err
	}
	r, w, err := ParseRate(s)
	if err != nil {
		return true, err
	}
	l.Rate, l.Window = r, schedule.Duration(w)
	return true, nil
}
