package worker

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestDecide: what both engines do with a record before any attempt, each rule in its order of precedence.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Second)
	tk := tick.New("scan", now.Add(-10*time.Second), 0, 1)
	late := tk
	late.Deadline = &past
	c := &tick.Cancel{Schedule: "scan", Reason: tick.ReasonPaused, Before: 3}
	rec := &kgo.Record{Partition: 1, Offset: 7, Key: []byte(tk.ID)}
	for _, x := range []struct {
		name   string
		skip   bool // --on-interrupted skip
		b      before
		status string // "" when it runs
	}{
		{"unreadable", false, before{err: errors.New("bad json"), cancelled: c}, StatusDeadLettered},
		{"cancelled before everything else", true, before{t: late, cancelled: c, interrupted: true, newer: past}, StatusCancelled},
		{"interrupted, skip", true, before{t: late, interrupted: true, newer: past}, StatusInterrupted},
		{"interrupted, rerun: runs", false, before{t: tk, interrupted: true}, ""},
		{"a newer tick due", false, before{t: late, newer: past}, StatusSkippedOverlap},
		{"a newer tick not due yet", false, before{t: tk, newer: future}, ""},
		{"past its deadline", false, before{t: late}, StatusSkippedLate},
		{"runs", false, before{t: tk}, ""},
	} {
		t.Run(x.name, func(t *testing.T) {
			w := &Worker{cfg: Config{WorkerID: "w1", OnInterrupted: OnInterruptedRerun}, logger: slog.New(slog.DiscardHandler), m: newMetrics(nil)}
			if x.skip {
				w.cfg.OnInterrupted = OnInterruptedSkip
			}
			b := x.b
			b.rec, b.now, b.attempts = rec, now, 2
			o, dl, run := w.decide(b)
			if run && x.status != "" || !run && o.Status != x.status {
				t.Fatalf("run %v, status %q; want status %q (\"\": it runs)", run, o.Status, x.status)
			}
			if (dl != nil) != (x.status == StatusDeadLettered) {
				t.Errorf("dead-letter cause %v for status %q", dl, x.status)
			}
			if x.status != StatusDeadLettered && (o.ID != tk.ID || o.Attempts != 2 || o.Offset != 7 || o.Worker != "w1") {
				t.Errorf("outcome %+v: want the tick's ID, attempts 2, offset 7, worker w1", o)
			}
		})
	}
}
