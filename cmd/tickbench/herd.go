package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// herdPhase measures the drain of a herd: n ticks of n schedules, all due at one instant T and all written ahead
// of it (as a leader emits them, a lead before), run by the same worker library set-up as the run's first
// phase, whose rate (rate, ticks/s with a no-op handler, outcomes and commits included) says what the workers can
// do. The workers are running before the ticks are written, so they hold the ticks until T, as in production. It
// prints when the handlers started, after T (p50, p99, the last), and the drain (T to the last start) against
// n / rate: the herd at the machine's pace is a drain within 1.5 times that.
func herdPhase(ctx context.Context, stdout io.Writer, brokers string, n, parts, concurrency, workers int, rate, fillRate float64, keep bool) error {
	ns, err := newBenchNamespace(ctx, brokers, "tickbench-herd", parts, keep)
	if err != nil {
		return err
	}
	defer ns.close()
	starts := make([]time.Duration, n)
	var started atomic.Int64
	var at atomic.Int64 // T, Unix ns
	h := worker.HandlerFunc(func(context.Context, tick.Tick, worker.Attempt) error {
		if i := started.Add(1) - 1; i < int64(len(starts)) {
			starts[i] = time.Duration(time.Now().UnixNano() - at.Load())
		}
		return nil
	})
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, workers)
	for i := range workers {
		w, err := worker.New(worker.Config{Kafka: ns.cfg, WorkerID: fmt.Sprintf("tickbench-herd-%d", i), Concurrency: concurrency, Start: worker.StartEarliest},
			h, worker.Deps{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		go func() { errc <- w.Run(wctx) }()
	}
	// T: far enough ahead for the fill (at the first phase's fill rate, twice over) and the workers' joining.
	ahead := max(10*time.Second, time.Duration(2*float64(n)/fillRate*float64(time.Second))+5*time.Second)
	t := time.Now().Add(ahead).Truncate(time.Second)
	at.Store(t.UnixNano())
	filled, err := fillHerd(ctx, ns.opts, ns.names.Work, n, parts, t)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "herd:   %d ticks of %d schedules due at %s, all written %.1fs before it (in %.1fs)\n",
		n, n, t.Format("15:04:05"), t.Sub(filled).Seconds(), filled.Sub(t.Add(-ahead)).Seconds())
	if filled.After(t) {
		fmt.Fprintln(stdout, "herd:   not every tick was written before the instant: the figures below are not a herd's")
	}
	for started.Load() < int64(n) {
		select {
		case err := <-errc:
			return fmt.Errorf("herd: a worker stopped early: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	ds := append([]time.Duration(nil), starts...)
	ideal := time.Duration(float64(n) / rate * float64(time.Second))
	fmt.Fprintf(stdout, "herd:   handlers started after the instant: %s\n", quantiles(ds))
	last := ds[len(ds)-1] // quantiles sorted them
	fmt.Fprintf(stdout, "herd:   drain %.2fs against %d / %.0f ticks/s = %.2fs (the workers' rate above): %.2fx (goal at most 1.5x)\n",
		last.Seconds(), n, rate, ideal.Seconds(), last.Seconds()/ideal.Seconds())
	return nil
}

// fillHerd writes n ticks of n schedules, each due at t (not_before), in transactions of 10,000, and returns when
// the last committed.
func fillHerd(ctx context.Context, base []kgo.Opt, topic string, n, parts int, t time.Time) (time.Time, error) {
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.TransactionalID(fmt.Sprintf("tickbench-herd-%d", time.Now().UnixNano())),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20),
	)...)
	if err != nil {
		return time.Time{}, err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, 10_000)
	for i := 0; i < n; {
		recs = recs[:0]
		for end := min(i+10_000, n); i < end; i++ {
			tk := tick.New(fmt.Sprintf("herd-%07d", i), t, 0, 1)
			nb := t
			tk.NotBefore = &nb
			v, err := tick.Encode(tk)
			if err != nil {
				return time.Time{}, err
			}
			recs = append(recs, &kgo.Record{Topic: topic, Partition: tk.Partition(parts), Key: []byte(tk.ID), Value: v})
		}
		if err := transact(ctx, cl, recs); err != nil {
			return time.Time{}, fmt.Errorf("filling the herd: %w", err)
		}
	}
	return time.Now(), nil
}
