package jsonfast

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Scanner reads one JSON object of known fields, the form tickgroup's own writers write. Every method reports
// false for what it does not read exactly as json.Unmarshal would read it into the field it stands for; the
// caller then decodes the whole value with encoding/json.
type Scanner struct {
	b []byte
	i int
}

// NewScanner returns a Scanner of b.
func NewScanner(b []byte) *Scanner { return &Scanner{b: b} }

// Object reads an object whose keys are plain strings (no escapes, ASCII), calling field with each key; field
// reads the key's value with the Scanner's value methods. It then requires the end of the input (white space
// only). It reports false when the input is not such an object or field reported false.
func (d *Scanner) Object(field func(key []byte) bool) bool {
	d.space()
	if !d.take('{') {
		return false
	}
	d.space()
	if d.take('}') {
		return d.end()
	}
	for {
		d.space()
		key, ok := d.key()
		if !ok {
			return false
		}
		d.space()
		if !d.take(':') {
			return false
		}
		d.space()
		if !field(key) {
			return false
		}
		d.space()
		if d.take(',') {
			continue
		}
		if d.take('}') {
			return d.end()
		}
		return false
	}
}

// Fields reads an object as Object does, whose keys are those of fields, each at most once: field reads the
// value of the key whose bit it is given. An unknown key (another casing too: encoding/json would match it) or a
// key seen twice (encoding/json keeps the last) reports false.
func (d *Scanner) Fields(fields map[string]uint32, field func(bit uint32) bool) bool {
	var seen uint32
	return d.Object(func(key []byte) bool {
		bit, known := fields[string(key)] // no allocation: the compiler reads the map with the bytes
		if !known || seen&bit != 0 {
			return false
		}
		seen |= bit
		return field(bit)
	})
}

func (d *Scanner) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *Scanner) take(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (d *Scanner) end() bool {
	d.space()
	return d.i == len(d.b)
}

// Literal reads w (a literal such as true) when it comes next.
func (d *Scanner) Literal(w string) bool {
	if len(d.b)-d.i >= len(w) && string(d.b[d.i:d.i+len(w)]) == w {
		d.i += len(w)
		return true
	}
	return false
}

// Bool reads true or false.
func (d *Scanner) Bool() (bool, bool) {
	switch {
	case d.Literal("true"):
		return true, true
	case d.Literal("false"):
		return false, true
	}
	return false, false
}

// Int reads a JSON integer that fits a signed integer of bits bits (strconv.IntSize for an int field):
// -?(0|[1-9][0-9]*), at most 18 digits. A fraction or an exponent is not one (encoding/json refuses them for an
// integer field with its own message), nor is a number out of range (refused too).
func (d *Scanner) Int(bits int) (int64, bool) {
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
	x, err := strconv.ParseInt(string(d.b[start:d.i]), 10, bits)
	return x, err == nil
}

// Time reads a string as time.Time.UnmarshalJSON does.
func (d *Scanner) Time() (time.Time, bool) {
	raw, ok := d.RawString()
	if !ok {
		return time.Time{}, false
	}
	var t time.Time
	if t.UnmarshalJSON(raw) != nil {
		return time.Time{}, false // encoding/json reports it, in its words
	}
	return t, true
}

// RawString returns the next string token with its quotes and escapes as written, for a value's own
// UnmarshalJSON.
func (d *Scanner) RawString() ([]byte, bool) {
	start := d.i
	if _, ok := d.Text(); !ok {
		return nil, false
	}
	return d.b[start:d.i], true
}

// key reads a string without escapes and returns its bytes.
func (d *Scanner) key() ([]byte, bool) {
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

// Text reads a JSON string and returns its value. It takes the escapes encoding/json writes (\" \\ \/ \b \f \n
// \r \t and \u of a character outside the surrogates) and valid UTF-8; anything else (a surrogate pair, invalid
// UTF-8, which encoding/json replaces with U+FFFD) is left to encoding/json.
func (d *Scanner) Text() (string, bool) {
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

// escaped continues Text at its first backslash, building the value from start.
func (d *Scanner) escaped(start int) (string, bool) {
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
