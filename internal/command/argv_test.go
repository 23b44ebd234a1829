package command

import (
	"slices"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"prog", []string{"prog"}},
		{"  prog  a\tb\nc ", []string{"prog", "a", "b", "c"}},
		{`prog 'a b' "c d"`, []string{"prog", "a b", "c d"}},
		{`prog 'it''s'`, []string{"prog", "its"}},
		{`prog "say \"hi\"" 'no \escape'`, []string{"prog", `say "hi"`, `no \escape`}},
		{`prog a\ b \$HOME`, []string{"prog", "a b", "$HOME"}},
		{`prog $HOME *.go ~ ; | & > x`, []string{"prog", "$HOME", "*.go", "~", ";", "|", "&", ">", "x"}},
		{`prog "" ''`, []string{"prog", "", ""}},
		{`prog "a\nb" "\$x" "\\"`, []string{"prog", `a\nb`, "$x", `\`}},
		{"prog a\\\nb", []string{"prog", "ab"}},
		{`pre"mid"'end'`, []string{"premidend"}},
		{"", nil},
	}
	for _, tt := range tests {
		got, err := SplitArgs(tt.in)
		if err != nil {
			t.Errorf("SplitArgs(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("SplitArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{`prog 'open`, `prog "open`, `prog \`} {
		if got, err := SplitArgs(bad); err == nil {
			t.Errorf("SplitArgs(%q) = %q, want an error", bad, got)
		}
	}
}
