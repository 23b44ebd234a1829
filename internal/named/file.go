package named

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// Entries says how ParseList reads the entries of one list of an apply file.
type Entries[T any] struct {
	// What names the list in errors, plural ("limits").
	What string
	// Max is the most entries the list may hold.
	Max int
	// Decode decodes one entry (a mapping) field by field, refusing unknown and repeated fields; it decodes what
	// it can before failing, so that the entry can be named. Name and Validate are the entry's name and check.
	Decode   func(*yaml.Node) (T, error)
	Name     func(T) string
	Validate func(T) error
}

// ParseList reads a list of named definitions of an apply file: n is the YAML list under its key prefix. As
// for schedules, every entry is decoded and validated, a name given twice is refused, and the error names each
// problem's entry, line and field. The definitions are returned as written.
func ParseList[T any](n *yaml.Node, prefix string, e Entries[T]) ([]T, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("parsing %s: line %d: want a list under %q", e.What, n.Line, prefix)
	}
	if len(n.Content) > e.Max {
		return nil, fmt.Errorf("parsing %s: %d entries, more than the limit of %d", e.What, len(n.Content), e.Max)
	}
	out := make([]T, 0, len(n.Content))
	seen := map[string]int{}
	var errs []error
	for i, en := range n.Content {
		where := fmt.Sprintf("%s[%d]", prefix, i)
		d, err := e.Decode(en)
		name := e.Name(d)
		if name != "" {
			where += " (" + errlimit.Quote(name) + ")"
		}
		if err != nil {
			for _, x := range Split(err) {
				errs = append(errs, fmt.Errorf("%s: %w", where, x)) // x carries the line of its field
			}
			continue
		}
		if err := e.Validate(d); err != nil {
			for _, x := range Split(err) {
				errs = append(errs, fmt.Errorf("%s: line %d: %w", where, en.Line, x))
			}
			continue
		}
		if j, dup := seen[name]; dup {
			errs = append(errs, fmt.Errorf("%s: line %d: name %s is already used by %s[%d]", where, en.Line, errlimit.Quote(name), prefix, j))
			continue
		}
		seen[name] = i
		out = append(out, d)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("parsing %s: %w", e.What, errors.Join(errs...))
	}
	return out, nil
}

// Split returns the errors joined in err, or err alone, so that each line of a report can name its entry.
func Split(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
