package schedule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// Version is the major version of the stored form written by this build (field "v"). A record without "v" was
// written before versions existed and reads as version 1.
const Version = 1

// ErrUnknownVersion is returned by Decode for a record of another major version: it is refused, never run.
var ErrUnknownVersion = errors.New("unknown schedule record version")

// stored is the stored form: the spec's fields plus the version.
type stored struct {
	V int `json:"v"`
	Spec
}

// A chain (Spec.After) has no slots of its own, and a release before chains would take a record without every
// or cron for an invalid one, which its leader repairs (restating the last valid definition, or deleting a new
// one). So a chain's record also carries a definition that such a release reads as valid and that never makes
// a slot: every 24h, ending at the Unix epoch. Decode drops it.
var (
	chainEvery = Duration(24 * time.Hour)
	chainEnd   = time.Unix(0, 0).UTC()
)

// storedChain is the stored form of a chain: stored, with the fields a release before chains reads.
type storedChain struct {
	stored
	Every Duration   `json:"every"`
	End   *time.Time `json:"end"`
}

// Encode validates s and returns its stored form, JSON. An invalid spec is never written.
func Encode(s Spec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("encoding schedule: %w", err)
	}
	var v any = stored{V: Version, Spec: s}
	if s.After != "" {
		v = storedChain{stored: stored{V: Version, Spec: s}, Every: chainEvery, End: &chainEnd}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding schedule %q: %w", s.Name, err)
	}
	return b, nil
}

// Decode reads a stored spec and validates it. Unknown fields are ignored, so a replica running an older build
// can still read specs written by a newer one during a rolling upgrade.
func Decode(b []byte) (Spec, error) {
	s, v, ok := decodeFast(b)
	if !ok {
		var st struct {
			V *int `json:"v"`
			Spec
		}
		if err := json.Unmarshal(b, &st); err != nil {
			return Spec{}, fmt.Errorf("decoding schedule: %w", errlimit.Wrap(err))
		}
		s, v = st.Spec, st.V
	}
	if v != nil && *v != Version {
		return Spec{}, fmt.Errorf("decoding schedule: version %d: %w", *v, ErrUnknownVersion)
	}
	if s.After != "" && s.Every == chainEvery && s.End != nil && s.End.Equal(chainEnd) {
		s.Every, s.End = 0, nil // the definition a release before chains reads (see chainEvery)
	}
	if err := s.Validate(); err != nil {
		return Spec{}, fmt.Errorf("decoding schedule: %w", err)
	}
	return s, nil
}

// Limits of ParseFile.
const (
	MaxFileBytes   = 256 << 20 // 1,000,000 interval schedules take about 52 MiB
	MaxFileEntries = 1_000_000
)

// yamlFields maps each Spec field's YAML name to its index, for ParseFile's field-by-field decoding.
var yamlFields = func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeFor[Spec]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		m[name] = i
	}
	return m
}()

// ParseFile reads the YAML of `ticker schedule apply -f`: either a list of specs or a mapping with one key,
// `schedules`, holding the list. Unknown fields are errors (a misspelt "jiter" must not silently mean "no
// jitter"), every spec is validated as a definition to write (ValidateNew), and duplicate names are refused.
// Errors name the entry and the field.
//
// Entries are decoded field by field rather than with yaml.Decoder.KnownFields: the decoder's messages give only a
// line, while an operator fixing a long file wants "schedules[3] (\"scan\"): field jitter: ...".
//
// A file is at most MaxFileBytes and MaxFileEntries: a larger one is refused before it is parsed (YAML trees
// take many times their text in memory).
func ParseFile(r io.Reader) ([]Spec, error) {
	root, err := ReadYAML(r)
	if err != nil {
		return nil, err
	}
	prefix := ""
	switch root.Kind {
	case yaml.SequenceNode:
	case yaml.MappingNode:
		var list *yaml.Node
		for i := 0; i+1 < len(root.Content); i += 2 {
			key := root.Content[i]
			if key.Value != "schedules" {
				return nil, fmt.Errorf("parsing schedules: line %d: unknown top-level field %s (want \"schedules\")", key.Line, errlimit.Quote(key.Value))
			}
			list = root.Content[i+1]
		}
		if list == nil || list.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("parsing schedules: line %d: want a mapping with a list under \"schedules\"", root.Line)
		}
		root, prefix = list, "schedules"
	default:
		return nil, fmt.Errorf("parsing schedules: line %d: want a list of schedules or a mapping with \"schedules\"", root.Line)
	}
	return ParseList(root, prefix)
}

// ReadYAML reads the one YAML document of an apply file, of at most MaxFileBytes, and returns its root node: for
// a reader of a file with other sections than the schedules (the limits of package limit), which hands the
// schedules' list to ParseList.
func ReadYAML(r io.Reader) (*yaml.Node, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading schedules: %w", err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("reading schedules: the file is larger than %d MiB; split it, or put the schedules with several apply runs (without --prune)", MaxFileBytes>>20)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("parsing schedules: the file is empty")
		}
		return nil, fmt.Errorf("parsing schedules: %w", errlimit.Wrap(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("parsing schedules: the file holds more than one YAML document; put all schedules in one list")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return root, nil
}

// ParseList decodes and validates the schedules of root, the list of an apply file under the key prefix ("":
// the file is the list), as ParseFile describes.
func ParseList(root *yaml.Node, prefix string) ([]Spec, error) {
	if root.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("parsing schedules: line %d: want a list of schedules", root.Line)
	}
	if len(root.Content) > MaxFileEntries {
		return nil, fmt.Errorf("parsing schedules: %d entries, more than the limit of %d; split the file", len(root.Content), MaxFileEntries)
	}
	specs := make([]Spec, 0, len(root.Content))
	seen := map[string]int{}
	var errs []error
	for i, n := range root.Content {
		where := fmt.Sprintf("%s[%d]", prefix, i)
		s, err := decodeEntry(n)
		if s.Name != "" {
			where += " (" + errlimit.Quote(s.Name) + ")"
		}
		if err != nil {
			for _, e := range split(err) {
				errs = append(errs, fmt.Errorf("%s: %w", where, e)) // e carries the line of its field
			}
			continue
		}
		if err := s.ValidateNew(); err != nil {
			for _, e := range split(err) {
				errs = append(errs, fmt.Errorf("%s: line %d: %w", where, n.Line, e))
			}
			continue
		}
		if j, dup := seen[s.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: line %d: name %s is already used by %s[%d]", where, n.Line, errlimit.Quote(s.Name), prefix, j))
			continue
		}
		seen[s.Name] = i
		specs = append(specs, s)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("parsing schedules: %w", errors.Join(errs...))
	}
	return specs, nil
}

// decodeEntry decodes one mapping into a Spec, field by field, refusing unknown and repeated fields. It decodes
// what it can before failing, so the caller can name the entry.
func decodeEntry(n *yaml.Node) (Spec, error) {
	var s Spec
	if n.Kind != yaml.MappingNode {
		return s, fmt.Errorf("line %d: want a mapping of schedule fields", n.Line)
	}
	v := reflect.ValueOf(&s).Elem()
	var errs []error
	set := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		idx, ok := yamlFields[key.Value]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("line %d: unknown field %s", key.Line, errlimit.Quote(key.Value)))
		case set[key.Value]:
			errs = append(errs, fmt.Errorf("line %d: field %s is given twice", key.Line, key.Value)) // a known name: short
		default:
			set[key.Value] = true
			if err := val.Decode(v.Field(idx).Addr().Interface()); err != nil {
				errs = append(errs, fmt.Errorf("line %d: field %s: %w", val.Line, key.Value, errlimit.Wrap(err)))
			}
		}
	}
	return s, errors.Join(errs...)
}

// split returns the errors joined in err, or err alone, so each line of a report can name its entry.
func split(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
