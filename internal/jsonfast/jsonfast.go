// Package jsonfast writes and reads the JSON that encoding/json writes for tickgroup's records, without
// reflection, on the paths that handle one record per tick: the leader's ticks, the worker's ledger entries and
// outcomes, the stored schedules. Each writer here writes exactly the bytes json.Marshal writes, and reports
// false for what it does not write itself, so that its caller can hand that value to encoding/json; each
// reader accepts only what it reads exactly as json.Unmarshal would, and its caller falls back to
// encoding/json for anything else. The callers' tests hold both to that, table and fuzz tests against
// encoding/json.
package jsonfast

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// plain marks the bytes that encoding/json copies into a string as they are: printable ASCII but for '"', '\\'
// and the HTML characters '<', '>' and '&': one load a byte instead of seven comparisons.
var plain = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s as a JSON string. Text of plain printable ASCII (names, IDs, most payloads) is
// copied; anything else goes through encoding/json, which escapes it (HTML characters, control characters,
// invalid UTF-8) as it would inside a struct.
func AppendString[T string | []byte](b []byte, s T) []byte {
	for i := 0; i < len(s); i++ {
		if !plain[s[i]] {
			// A copy is marshalled: passing s itself would make every caller's text escape to the heap.
			j, _ := json.Marshal(strings.Clone(string(s))) // a string always marshals
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// AppendTime appends t as time.Time.MarshalJSON writes it, quoted: RFC 3339 with nanoseconds. For a time
// MarshalJSON refuses (a year outside 0-9999, a zone offset of 24 hours or more) it appends nothing and
// reports false.
func AppendTime(b []byte, t time.Time) ([]byte, bool) {
	if !Marshallable(t) {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

// Marshallable reports whether time.Time.MarshalJSON writes t: a year in 0-9999 and a zone offset of less than
// 24 hours.
func Marshallable(t time.Time) bool {
	_, zone := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && zone > -24*3600 && zone < 24*3600
}

// AppendFloat appends f as encoding/json writes a float64 in the range it writes without an exponent (zero,
// and magnitudes from 1e-6 to below 1e21: every duration in milliseconds). It appends nothing and reports false
// for anything else (an exponent form, NaN, an infinity).
func AppendFloat(b []byte, f float64) ([]byte, bool) {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(f) {
		return b, false
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64), true
}

// Object writes a JSON object the way encoding/json writes a struct: one field per call, in the order of the
// calls. Each call names its field by the bytes that come before the value, punctuation included (`{"v":` for
// the first field, `,"name":` for the others: constants, so that each is one copy). The Omit methods leave a
// field out when its value is the zero value, as omitempty does. The object is valid once Close is called, and
// written as json.Marshal would write it unless Close reports false (a value AppendTime or AppendFloat does not
// write): the caller then hands the value to encoding/json.
type Object struct {
	b  []byte
	ok bool
}

// NewObject starts an object at the end of b.
func NewObject(b []byte) Object { return Object{b: b, ok: true} }

// Close ends the object and returns the bytes with it appended, and whether every value was written.
func (o *Object) Close() ([]byte, bool) { return append(o.b, '}'), o.ok }

// Int writes a field with the integer v.
func (o *Object) Int(prefix string, v int64) {
	o.b = strconv.AppendInt(append(o.b, prefix...), v, 10)
}

// String writes a field with the string v (AppendString).
func (o *Object) String(prefix, v string) {
	o.b = AppendString(append(o.b, prefix...), v)
}

// Time writes a field with the time v (AppendTime).
func (o *Object) Time(prefix string, v time.Time) {
	var ok bool
	o.b, ok = AppendTime(append(o.b, prefix...), v)
	o.ok = o.ok && ok
}

// Float writes a field with the number v (AppendFloat).
func (o *Object) Float(prefix string, v float64) {
	var ok bool
	o.b, ok = AppendFloat(append(o.b, prefix...), v)
	o.ok = o.ok && ok
}

// OmitInt writes a field unless v is 0.
func (o *Object) OmitInt(prefix string, v int64) {
	if v != 0 {
		o.Int(prefix, v)
	}
}

// OmitString writes a field unless v is empty.
func (o *Object) OmitString(prefix, v string) {
	if v != "" {
		o.String(prefix, v)
	}
}

// OmitTime writes a field unless v is nil.
func (o *Object) OmitTime(prefix string, v *time.Time) {
	if v != nil {
		o.Time(prefix, *v)
	}
}

// OmitFloat writes a field unless v is 0.
func (o *Object) OmitFloat(prefix string, v float64) {
	if v != 0 {
		o.Float(prefix, v)
	}
}

// OmitBool writes a field as true when v is, and leaves it out otherwise.
func (o *Object) OmitBool(prefix string, v bool) {
	if v {
		o.b = append(append(o.b, prefix...), "true"...)
	}
}
