package schedule

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// decodeFast reads a stored record in the form Encode writes: one JSON object of known fields, each at most
// once, with integer numbers and plain strings. It reports ok = false for anything else (an unknown or
// differently cased key, a duplicate, null, a fraction, a value a field's own decoder refuses, trailing data),
// and the caller then decodes with encoding/json, which gives the same result for every input accepted here:
// FuzzDecodeFast holds the two to that. A leader decodes every schedule at start-up, where encoding/json's
// reflection would be most of the cost of a record (BenchmarkFoldLoad).
//
// Values that carry their own UnmarshalJSON (durations, start, end) are handed the raw token, as encoding/json
// does.
func decodeFast(b []byte) (s Spec, v *int, ok bool) {
	d := fastDecoder{b: b}
	d.space()
	if !d.take('{') {
		return Spec{}, nil, false
	}
	var seen uint32
	d.space()
	if d.take('}') {
		return s, nil, d.end()
	}
	for {
		d.space()
		key, ok := d.plainString()
		if !ok {
			return Spec{}, nil, false
		}
		d.space()
		if !d.take(':') {
			return Spec{}, nil, false
		}
		d.space()
		bit, ok := fastFields[string(key)] // no allocation: the compiler reads the map with the bytes
		if !ok || seen&bit != 0 {
			return Spec{}, nil, false
		}
		seen |= bit
		if !d.field(bit, &s, &v) {
			return Spec{}, nil, false
		}
		d.space()
		if d.take(',') {
			continue
		}
		if d.take('}') {
			return s, v, d.end()
		}
		return Spec{}, nil, false
	}
}

// The fields decodeFast knows, one bit each: their JSON names as Encode writes them.
const (
	fV uint32 = 1 << iota
	fName
	fEvery
	fOffset
	fCron
	fTZ
	fJitter
	fShards
	fPayload
	fCatchup
	fCatchupMax
	fDeadline
	fOverlap
	fStart
	fEnd
	fPaused
	fMetrics
	fTimeout
	fMaxAttempts
	fPool
)

var fastFields = map[string]uint32{
	"v": fV, "name": fName, "every": fEvery, "offset": fOffset, "cron": fCron, "tz": fTZ, "jitter": fJitter,
	"shards": fShards, "payload": fPayload, "catchup": fCatchup, "catchup_max": fCatchupMax, "deadline": fDeadline,
	"overlap": fOverlap, "timeout": fTimeout, "max_attempts": fMaxAttempts, "pool": fPool, "start": fStart, "end": fEnd, "paused": fPaused, "metrics": fMetrics,
}

type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) take(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (d *fastDecoder) end() bool {
	d.space()
	return d.i == len(d.b)
}

// field decodes the value of the field bit into s (or v).
func (d *fastDecoder) field(bit uint32, s *Spec, v **int) bool {
	switch bit {
	case fV:
		n, ok := d.integer()
		if !ok {
			return false
		}
		*v = &n
		return true
	case fShards:
		n, ok := d.integer()
		s.Shards = n
		return ok
	case fCatchupMax:
		n, ok := d.integer()
		s.CatchupMax = n
		return ok
	case fMaxAttempts:
		n, ok := d.integer()
		s.MaxAttempts = n
		return ok
	case fPaused, fMetrics:
		var x bool
		switch {
		case d.literal("true"):
			x = true
		case d.literal("false"):
		default:
			return false
		}
		if bit == fPaused {
			s.Paused = x
		} else {
			s.Metrics = x
		}
		return true
	case fEvery, fOffset, fJitter, fDeadline, fTimeout:
		raw, ok := d.rawString()
		if !ok {
			return false
		}
		var x Duration
		if x.UnmarshalJSON(raw) != nil {
			return false // encoding/json reports it, in its words
		}
		switch bit {
		case fEvery:
			s.Every = x
		case fOffset:
			s.Offset = x
		case fJitter:
			s.Jitter = x
		case fTimeout:
			s.Timeout = x
		default:
			s.Deadline = x
		}
		return true
	case fStart, fEnd:
		raw, ok := d.rawString()
		if !ok {
			return false
		}
		t := new(time.Time)
		if t.UnmarshalJSON(raw) != nil {
			return false
		}
		if bit == fStart {
			s.Start = t
		} else {
			s.End = t
		}
		return true
	}
	str, ok := d.text()
	if !ok {
		return false
	}
	switch bit {
	case fName:
		s.Name = str
	case fCron:
		s.Cron = str
	case fTZ:
		s.TZ = str
	case fPayload:
		s.Payload = str
	case fCatchup:
		s.Catchup = str
	case fOverlap:
		s.Overlap = str
	case fPool:
		s.Pool = str
	}
	return true
}

func (d *fastDecoder) literal(w string) bool {
	if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
		d.i += len(w)
		return true
	}
	return false
}

// integer reads a JSON integer that fits an int: -?(0|[1-9][0-9]*), at most 18 digits. A fraction or an
// exponent is not one (encoding/json refuses them for an int field with its own message).
func (d *fastDecoder) integer() (int, bool) {
	start := d.i
	d.take('-')
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || n > 18 || (n > 1 && d.b[digits] == '0') {
		return 0, false
	}
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	x, err := strconv.Atoi(string(d.b[start:d.i]))
	return x, err == nil
}

// rawString returns the next string token with its quotes and escapes as written, for a value's own
// UnmarshalJSON.
func (d *fastDecoder) rawString() ([]byte, bool) {
	start := d.i
	if _, ok := d.text(); !ok {
		return nil, false
	}
	return d.b[start:d.i], true
}

// plainString reads a string without escapes and returns its bytes (a key).
func (d *fastDecoder) plainString() ([]byte, bool) {
	if !d.take('"') {
		return nil, false
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return d.b[start : d.i-1], true
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return nil, false
		}
		d.i++
	}
	return nil, false
}

// text reads a JSON string and returns its value. It takes the escapes encoding/json writes (\" \\ \/ \b \f \n
// \r \t and \u of a character outside the surrogates) and valid UTF-8; anything else (a surrogate pair, invalid
// UTF-8, which encoding/json replaces with U+FFFD) is left to encoding/json.
func (d *fastDecoder) text() (string, bool) {
	if !d.take('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			raw := d.b[start : d.i-1]
			if !ascii && !utf8.Valid(raw) {
				return "", false
			}
			return string(raw), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// escaped continues text at its first backslash, building the value from start.
func (d *fastDecoder) escaped(start int) (string, bool) {
	out := append(make([]byte, 0, d.i-start+16), d.b[start:d.i]...)
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if d.i+4 > len(d.b) {
				return "", false
			}
			r, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 16)
			if err != nil || (r >= 0xD800 && r < 0xE000) {
				return "", false
			}
			out = utf8.AppendRune(out, rune(r))
			d.i += 4
		default:
			return "", false
		}
	}
	return "", false
}
