package worker

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestLaneRecordsOutput: with RecordOutput, a tick's outcome keeps the tail of its last attempt's output (cut at a
// character, never mid-rune); without it, none, whatever the handler hands over.
func TestLaneRecordsOutput(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16} {
		b := setup(t)
		ok, _ := b.produceTicks(t, 0, "ok", 1)
		retried, _ := b.produceTicks(t, 0, "retried", 1)
		cfg := b.config("w1")
		cfg.RecordOutput = n
		b.start(t, cfg, HandlerFunc(func(_ context.Context, tk tick.Tick, a Attempt) error {
			if a.Output == nil {
				if n > 0 {
					t.Error("Attempt.Output is nil with RecordOutput set")
				}
				return nil
			}
			a.Output(strings.Repeat("x", 40) + "é attempt " + string(rune('0'+a.N)))
			if tk.Schedule == "retried" && a.N == 1 {
				return errors.New("again")
			}
			return nil
		}), Deps{})
		for _, tk := range append(ok, retried...) {
			kafkatest.Eventually(t, 20*time.Second, "the outcome of "+tk.ID, func() bool { return len(b.entries(t, 0, ledger.KindOutcome, tk.ID)) > 0 })
		}
		want := map[string]string{ok[0].ID: "xxxxxxé attempt 1", retried[0].ID: "xxxxxxé attempt 2"}
		for id, w := range want {
			o := b.entries(t, 0, ledger.KindOutcome, id)[0].Entry
			switch {
			case n == 0 && o.Output != "":
				t.Errorf("%s: output %q kept without RecordOutput", id, o.Output)
			case n > 0 && o.Output != w[len(w)-16:]:
				t.Errorf("%s: output %q, want the last 16 bytes %q", id, o.Output, w[len(w)-16:])
			}
		}
	}
}

func TestTailOf(t *testing.T) {
	for s, want := range map[string]string{"abc": "abc", "abcdef": "cdef", "xxxé": "xxé", "ééx": "éx"} {
		if got := tailOf(s, 4); got != want {
			t.Errorf("tailOf(%q, 4) = %q, want %q", s, got, want)
		}
	}
}
