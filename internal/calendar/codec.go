package calendar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// Version is the major version of the stored form written by this build (field "v"). A record without "v"
// reads as version 1.
const Version = 1

// MaxRecordBytes is the largest stored record (JSON) or YAML file read: a calendar at MaxEntries fits in less
// than half of it, and a larger input is refused before it is parsed.
const MaxRecordBytes = 1 << 20

// ErrUnknownVersion is returned by Decode for a record of another major version: it is refused, never used.
var ErrUnknownVersion = errors.New("unknown calendar record version")

// stored is the stored form: the spec's fields plus the version.
type stored struct {
	V int `json:"v"`
	Spec
}

// Encode validates s and returns its stored form: JSON of the normalized spec (Calendar.Spec), so equal
// calendars are equal bytes. An invalid spec is never written.
func Encode(s Spec) ([]byte, error) {
	c, err := s.Compile()
	if err != nil {
		return nil, fmt.Errorf("encoding calendar: %w", err)
	}
	b, err := json.Marshal(stored{V: Version, Spec: c.spec})
	if err != nil {
		return nil, fmt.Errorf("encoding calendar %s: %w", errlimit.Quote(s.Name), err)
	}
	return b, nil
}

// Decode reads a stored calendar and compiles it. Unknown fields are ignored, so a replica of an older build
// can read a record written by a newer one during a rolling upgrade.
func Decode(b []byte) (*Calendar, error) {
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("decoding calendar: the record is %d bytes, more than the limit of %d", len(b), MaxRecordBytes)
	}
	var st struct {
		V *int `json:"v"`
		Spec
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("decoding calendar: %w", errlimit.Wrap(err))
	}
	if st.V != nil && *st.V != Version {
		return nil, fmt.Errorf("decoding calendar: version %d: %w", *st.V, ErrUnknownVersion)
	}
	c, err := st.Spec.Compile()
	if err != nil {
		return nil, fmt.Errorf("decoding calendar: %w", err)
	}
	return c, nil
}

// ParseYAML reads a calendar written by a person: one YAML mapping with the fields of Spec. Unknown fields are
// errors (a misspelt "weekday" must not silently exclude nothing), and so is a second document.
//
//	name: us-federal
//	tz: America/New_York
//	weekdays: [sat, sun]
//	dates: [2027-01-01, 2027-01-18]
//	ranges:
//	  - {from: 2027-12-24, to: 2027-12-31}
func ParseYAML(r io.Reader) (*Calendar, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxRecordBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading calendar: %w", err)
	}
	if len(data) > MaxRecordBytes {
		return nil, fmt.Errorf("reading calendar: the file is larger than %d MiB", MaxRecordBytes>>20)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("parsing calendar: the file is empty")
		}
		return nil, fmt.Errorf("parsing calendar: %w", errlimit.Wrap(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("parsing calendar: the file holds more than one YAML document; write one calendar per file")
	}
	c, err := s.Compile()
	if err != nil {
		return nil, fmt.Errorf("parsing calendar: %w", err)
	}
	return c, nil
}
