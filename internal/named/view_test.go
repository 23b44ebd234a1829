package named

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTakeReportsChanges: a View signals a change only when a definition changed (Config.Same); a refused record
// changes nothing and leaves the key as it was; a tombstone deletes the key, once.
func TestTakeReportsChanges(t *testing.T) {
	t.Parallel()
	v := NewView(Config[string]{What: "words", Key: "word", Logger: slog.New(slog.DiscardHandler),
		Decode: func(_ string, b []byte) (string, error) {
			if string(b) == "bad" {
				return "", errors.New("a bad word")
			}
			return strings.ToLower(string(b)), nil
		},
		Same: func(a, b string) bool { return a == b }})
	take := func(val string) bool {
		r := &kgo.Record{Key: []byte("a")}
		if val != "" {
			r.Value = []byte(val)
		}
		return v.take(r)
	}
	if !take("x") || take("X") || !take("y") {
		t.Error("a new word, the same again, another: want a change, none, a change")
	}
	if take("bad") {
		t.Error("a refused record: a change")
	}
	if w, ok := v.Get("a"); !ok || w != "y" {
		t.Errorf("after a refused record: %q, %v; want the last valid word", w, ok)
	}
	if !take("") || take("") {
		t.Error("a tombstone, a second tombstone: want a change, none")
	}
}
