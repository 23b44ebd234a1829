package command

import (
	"slices"
	"strings"
	"testing"
)

// FuzzSplitArgs: SplitArgs never panics, its errors are short, and the words it returns, each quoted again in
// single quotes, split back into the same words.
func FuzzSplitArgs(f *testing.F) {
	for _, s := range []string{
		`/bin/echo hello world`, `sh -c 'exit $(( 1 + 1 ))'`, `a "b \"c\" \\ \$ \` + "`" + `" d\ e`, `x ''`, `"" ""`,
		"a\\\nb", `'unterminated`, `"unterminated`, `trailing\`, "tab\tand\nnewline", `héllo 'wörld'`,
		strings.Repeat(`"`, 3000), strings.Repeat("a ", 2000),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := SplitArgs(s)
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes: %.200s...", len(err.Error()), err)
			}
			return
		}
		if len(words) > len(s) {
			t.Fatalf("%d words from %d bytes", len(words), len(s))
		}
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		again, err := SplitArgs(strings.Join(quoted, " "))
		if err != nil {
			t.Fatalf("SplitArgs(%q) (the words of %q, quoted): %v", strings.Join(quoted, " "), s, err)
		}
		if !slices.Equal(words, again) {
			t.Fatalf("SplitArgs(%q) = %q; quoted and split again: %q", s, words, again)
		}
	})
}
