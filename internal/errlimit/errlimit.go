// Package errlimit bounds the text of errors about untrusted input. A decoder's error often quotes the value it
// could not read (encoding/json and time quote a bad timestamp or duration whole), so a huge record would give
// a huge error, logged on every replica and copied into dead-letter headers. Errors built with this package keep
// the start of such a value and say how long it was.
package errlimit

import (
	"fmt"
	"unicode/utf8"
)

// Value is the bound of a quoted value, in bytes; Err of a whole error message.
const (
	Value = 64
	Err   = 256
)

// Quote is %q of s, cut after Value bytes (at a character boundary) with the length of the whole.
func Quote(s string) string {
	if len(s) <= Value {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes)", Cut(s, Value), len(s))
}

// Wrap returns err with its text cut after Err bytes. Unwrap returns err, so errors.Is and errors.As see
// through it. Wrap(nil) is nil.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	return limited{err}
}

type limited struct{ err error }

func (l limited) Error() string { return Text(l.err.Error()) }

// Text is s cut after Err bytes, with the length of the whole.
func Text(s string) string {
	if len(s) <= Err {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", Cut(s, Err), len(s))
}

func (l limited) Unwrap() error { return l.err }

// Cut returns at most n bytes of s, without splitting a character.
func Cut(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
