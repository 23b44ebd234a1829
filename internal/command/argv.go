package command

import (
	"errors"
	"fmt"
	"strings"
)

// SplitArgs splits a command line into words the way a POSIX shell splits a simple command, without running a
// shell and without any expansion:
//   - unquoted blanks (space, tab, newline) separate words;
//   - 'single quotes' keep everything literally up to the next single quote;
//   - "double quotes" keep everything literally except \" \\ \$ \` and backslash-newline, which a backslash
//     escapes, as in a shell;
//   - outside quotes a backslash keeps the next character literally (backslash-newline joins lines);
//   - $, `, *, ?, [, ~, ;, |, &, <, > and the like are ordinary characters: no variables, no command
//     substitution, no globbing, no redirection, no pipelines.
//
// An empty pair of quotes is an empty word. Unterminated quotes and a trailing backslash are errors.
func SplitArgs(s string) ([]string, error) {
	var (
		words   []string
		cur     strings.Builder
		inWord  bool
		runes   = []rune(s)
		isBlank = func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
	)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		switch {
		case isBlank(r):
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '\\':
			if i+1 >= len(runes) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if runes[i] == '\n' {
				continue // line continuation
			}
			cur.WriteRune(runes[i])
			inWord = true
		case r == '\'':
			end := -1
			for j := i + 1; j < len(runes); j++ {
				if runes[j] == '\'' {
					end = j
					break
				}
			}
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote at character %d", i+1)
			}
			cur.WriteString(string(runes[i+1 : end]))
			i = end
			inWord = true
		case r == '"':
			j := i + 1
			closed := false
			for ; j < len(runes); j++ {
				c := runes[j]
				if c == '"' {
					closed = true
					break
				}
				if c == '\\' && j+1 < len(runes) {
					switch n := runes[j+1]; n {
					case '"', '\\', '$', '`':
						cur.WriteRune(n)
						j++
						continue
					case '\n':
						j++
						continue
					}
				}
				cur.WriteRune(c)
			}
			if !closed {
				return nil, fmt.Errorf("unterminated double quote at character %d", i+1)
			}
			i = j
			inWord = true
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
