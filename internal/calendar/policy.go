package calendar

import (
	"fmt"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// OnExcluded is a schedule's policy for a slot on a day one of its calendars excludes. The empty value is the
// default, Skip. It reads and writes as its name in JSON and YAML; reading refuses an unknown name.
type OnExcluded string

// The policies; doc.go says what each does and how moved slots merge.
const (
	// Skip drops the slot: no run. The default.
	Skip OnExcluded = "skip"
	// NextBusinessDay runs the slot at the same wall-clock time on the next day that no calendar excludes.
	NextBusinessDay OnExcluded = "next_business_day"
	// PreviousBusinessDay runs the slot at the same wall-clock time on the previous day that no calendar
	// excludes.
	PreviousBusinessDay OnExcluded = "previous_business_day"
)

// DefaultOnExcluded is the policy of a schedule that names none.
const DefaultOnExcluded = Skip

// ParseOnExcluded reads a policy by its name; "" is DefaultOnExcluded.
func ParseOnExcluded(s string) (OnExcluded, error) {
	switch p := OnExcluded(s); p {
	case "":
		return DefaultOnExcluded, nil
	case Skip, NextBusinessDay, PreviousBusinessDay:
		return p, nil
	}
	return "", fmt.Errorf("unknown policy for excluded days %s (want %q, %q or %q)", errlimit.Quote(s), Skip, NextBusinessDay, PreviousBusinessDay)
}

// Validate reports whether p is "" or one of the policies.
func (p OnExcluded) Validate() error {
	_, err := ParseOnExcluded(string(p))
	return err
}

// OrDefault returns p, or DefaultOnExcluded when p is "".
func (p OnExcluded) OrDefault() OnExcluded {
	if p == "" {
		return DefaultOnExcluded
	}
	return p
}

// MarshalText writes the policy's name; an unknown policy is an error, so it is never written.
func (p OnExcluded) MarshalText() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return []byte(p), nil
}

// UnmarshalText reads a policy's name, refusing an unknown one. "" stays "" (the default, as written).
func (p *OnExcluded) UnmarshalText(b []byte) error {
	if err := OnExcluded(b).Validate(); err != nil {
		return err
	}
	*p = OnExcluded(b)
	return nil
}
