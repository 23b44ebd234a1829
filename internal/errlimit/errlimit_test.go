package errlimit

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"scan", `"scan"`},
		{strings.Repeat("a", 64), `"` + strings.Repeat("a", 64) + `"`},
		{strings.Repeat("a", 100), `"` + strings.Repeat("a", 64) + `"... (100 bytes)`},
		{strings.Repeat("é", 40), `"` + strings.Repeat("é", 32) + `"... (80 bytes)`},
		{"x" + strings.Repeat("é", 40), `"x` + strings.Repeat("é", 31) + `"... (81 bytes)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.20q...) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestWrap(t *testing.T) {
	if Wrap(nil) != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
	long := errors.Join(io.ErrUnexpectedEOF, errors.New(strings.Repeat("x", 5000)))
	err := Wrap(long)
	if len(err.Error()) > Err+30 || !strings.HasSuffix(err.Error(), "bytes)") {
		t.Errorf("Wrap of a long error: %d bytes: %.80s", len(err.Error()), err)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not see through Wrap")
	}
	if short := Wrap(io.EOF); short.Error() != "EOF" {
		t.Errorf("Wrap of a short error changed it: %v", short)
	}
}

func TestCutKeepsCharactersWhole(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abc", 2, "ab"}, {"aé", 2, "a"}, {"aé", 3, "aé"}, {"日本", 4, "日"}} {
		if got := Cut(c.s, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
