package tick

import (
	"time"

	"github.com/tickgroup/tickgroup/internal/jsonfast"
)

// Stamp writes instants in RFC 3339 with nanoseconds, as time.Time.MarshalJSON does, and remembers the last one
// it formatted: the records a leader writes in one transaction share their emission instant, and those of one
// slot share the slot, so most instants are copied rather than formatted again (formatting weighs on the
// leader's work per tick: docs/benchmarks.md, "Figures behind code comments"). The zero Stamp is ready; a
// Stamp is not safe for concurrent use.
type Stamp struct {
	// The instant kept: its Unix seconds, nanoseconds and zone offset, all that its text depends on. No
	// time.Time is kept, as its location would make every instant written through a Stamp escape to the heap.
	sec        int64
	nsec, zone int
	n          int // length of text; 0 until the first instant is kept
	text       [40]byte
}

// format returns t in RFC 3339 with nanoseconds, and whether MarshalJSON would write it: a year in 0-9999 and
// a zone offset of less than 24 hours, as it checks.
func (s *Stamp) format(t time.Time) ([]byte, bool) {
	sec, nsec := t.Unix(), t.Nanosecond()
	_, zone := t.Zone()
	if s.n > 0 && s.sec == sec && s.nsec == nsec && s.zone == zone {
		return s.text[:s.n], true
	}
	if !jsonfast.Marshallable(t) {
		return nil, false
	}
	s.n = 0                                              // nothing is kept while the text is written over
	text := t.AppendFormat(s.text[:0], time.RFC3339Nano) // at most 35 bytes: it stays in s.text
	if len(text) <= len(s.text) {
		s.sec, s.nsec, s.zone, s.n = sec, nsec, zone, len(text)
	}
	return text, true
}

// AppendJSON appends t as time.Time.MarshalJSON writes it, quoted. For a time MarshalJSON refuses (a year
// outside 0-9999, a zone offset of 24 hours or more) it appends nothing and reports false.
func (s *Stamp) AppendJSON(b []byte, t time.Time) ([]byte, bool) {
	text, ok := s.format(t)
	if !ok {
		return b, false
	}
	b = append(b, '"')
	b = append(b, text...)
	return append(b, '"'), true
}

// appendJSON is AppendJSON for the field writers of this package: ok is the running result of the record, which
// turns false when t cannot be written.
func (s *Stamp) appendJSON(b []byte, t time.Time, ok bool) ([]byte, bool) {
	b, written := s.AppendJSON(b, t)
	return b, ok && written
}

// appendText appends t in RFC 3339 with nanoseconds, unquoted, whatever its year (as ID does).
func (s *Stamp) appendText(b []byte, t time.Time) []byte {
	if text, ok := s.format(t); ok {
		return append(b, text...)
	}
	return t.AppendFormat(b, time.RFC3339Nano)
}
