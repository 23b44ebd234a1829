package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// summaryFinishedBefore counts, in the summary line only, ticks the ledger said were finished already.
const summaryFinishedBefore = "finished_before"

// summary counts tick results between two summary lines. Per-tick log lines are at debug level; at info a
// healthy worker writes one line a minute (and none while it handles nothing).
type summary struct {
	mu     sync.Mutex
	counts map[string]int
}

// count adds n ticks with result to the metrics and to the next summary line.
func (w *Worker) count(result string, n int) {
	if result != summaryFinishedBefore {
		w.m.ticks.WithLabelValues(result).Add(float64(n))
	}
	w.sum.mu.Lock()
	if w.sum.counts == nil {
		w.sum.counts = map[string]int{}
	}
	w.sum.counts[result] += n
	w.sum.mu.Unlock()
}

// summarize logs the counts every interval until ctx ends, and once more at the end.
func (w *Worker) summarize(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			w.logSummary(interval)
			return
		case <-t.C:
			w.logSummary(interval)
		}
	}
}

func (w *Worker) logSummary(interval time.Duration) {
	w.sum.mu.Lock()
	counts := w.sum.counts
	w.sum.counts = nil
	w.sum.mu.Unlock()
	if len(counts) == 0 {
		return
	}
	attrs := []any{slog.Duration("period", interval)}
	for _, r := range []string{resultOK, resultFailed, resultRetried, resultSkippedLate, resultSkippedOverlap, resultDeadLettered, resultInterrupted, resultCancelled, resultSkippedGate, summaryFinishedBefore} {
		if n := counts[r]; n > 0 {
			attrs = append(attrs, r, n)
		}
	}
	w.mu.Lock()
	attrs = append(attrs, "partitions", len(w.lanes))
	w.mu.Unlock()
	w.logger.Info("ticks handled", attrs...)
}
