package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

func init() {
	register("worker", command{
		summary: "fill a fresh work topic with N ticks, then measure raw consumption and the worker library",
		run:     runWorkerBench,
	})
}

func runWorkerBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tickbench worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	n := fs.Int("ticks", 200_000, "ticks to write and consume")
	parts := fs.Int("partitions", 12, "partitions of the fresh work topic")
	schedules := fs.Int("schedules", 1000, "distinct schedules the ticks belong to")
	concurrency := fs.Int("concurrency", worker.DefaultConcurrency, "worker concurrency")
	keep := fs.Bool("keep", false, "keep the namespace's topics and group afterwards")
	fs.Usage = cli.Usage(fs, "Usage: tickbench worker [flags]\n\nWrites --ticks ticks into a fresh namespace, then measures (1) raw franz-go\nconsumption (read_committed, no processing) and (2) the worker library with a no-op handler\n(outcome records and offset commits included), and prints both rates and their ratio.")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if *n < 1 || *parts < 1 || *schedules < 1 {
		return cli.Usagef("--ticks, --partitions and --schedules must be at least 1")
	}
	ns, err := newBenchNamespace(ctx, *brokers, "tickbench", *parts, *keep)
	if err != nil {
		return err
	}
	defer ns.close()
	kcfg, names, base, adm := ns.cfg, ns.names, ns.opts, ns.adm
	fmt.Fprintf(stdout, "namespace %s: %d ticks, %d partitions, %d schedules, GOMAXPROCS %d\n", kcfg.Namespace, *n, *parts, *schedules, runtime.GOMAXPROCS(0))

	// Fill, transactionally like the leader, 10,000 ticks per transaction.
	start := time.Now()
	if err := fill(ctx, base, names.Work, *n, *parts, *schedules); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "fill:   %8d ticks in %6.2fs  %9.0f ticks/s\n", *n, time.Since(start).Seconds(), float64(*n)/time.Since(start).Seconds())

	// (1) Raw consumption: read_committed, no group, no processing.
	raw, ends, err := consumeRaw(ctx, base, names.Work, *n)
	if err != nil {
		return err
	}
	rawRate := float64(*n) / raw.Seconds()
	fmt.Fprintf(stdout, "raw:    %8d ticks in %6.2fs  %9.0f ticks/s  (franz-go, read_committed, no processing)\n", *n, raw.Seconds(), rawRate)

	// (2) The worker library: group, lanes, no-op handler, outcome records, offset commits.
	wd, handled, err := runWorkerLib(ctx, kcfg, adm, names, ends, *concurrency)
	if err != nil {
		return err
	}
	wRate := float64(*n) / wd.Seconds()
	fmt.Fprintf(stdout, "worker: %8d ticks in %6.2fs  %9.0f ticks/s  (internal/worker, no-op handler, %d handled, outcomes + commits)\n", *n, wd.Seconds(), wRate, handled)
	fmt.Fprintf(stdout, "ratio:  worker/raw = %.3f\n", wRate/rawRate)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(stdout, "memory: Go heap in use %.1f MiB, heap reserved from the OS %.1f MiB, %s\n", float64(ms.HeapInuse)/(1<<20), float64(ms.HeapSys)/(1<<20), rss())
	return nil
}

func fill(ctx context.Context, base []kgo.Opt, topic string, n, parts, schedules int) error {
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.TransactionalID(fmt.Sprintf("tickbench-fill-%d", time.Now().UnixNano())),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	slot0 := time.Now().Truncate(time.Second).Add(-24 * time.Hour)
	for i := 0; i < n; {
		if err := cl.BeginTransaction(); err != nil {
			return err
		}
		var perr atomic.Value
		for end := min(i+10_000, n); i < end; i++ {
			tk := tick.New(fmt.Sprintf("bench-%04d", i%schedules), slot0.Add(time.Duration(i/schedules)*time.Second), 0, 1)
			v, err := tick.Encode(tk)
			if err != nil {
				return err
			}
			cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: tick.Partition(tk.Schedule, 0, parts), Key: []byte(tk.ID), Value: v},
				func(_ *kgo.Record, err error) {
					if err != nil {
						perr.CompareAndSwap(nil, err)
					}
				})
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if e, _ := perr.Load().(error); e != nil {
			return fmt.Errorf("filling: %w", e)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("filling: %w", err)
		}
	}
	return nil
}

// consumeRaw reads n records and returns how long it took and, per partition, the offset after its last data
// record (a worker is done when it has committed those; transaction markers sit after them).
func consumeRaw(ctx context.Context, base []kgo.Opt, topic string, n int) (time.Duration, map[int32]int64, error) {
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)...)
	if err != nil {
		return 0, nil, err
	}
	defer cl.Close()
	start := time.Now()
	got := 0
	ends := map[int32]int64{}
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		fs.EachError(func(t string, p int32, err error) { fmt.Fprintln(os.Stderr, "fetch error:", t, p, err) })
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if k := len(p.Records); k > 0 {
				got += k
				ends[p.Partition] = p.Records[k-1].Offset + 1
			}
		})
	}
	return time.Since(start), ends, nil
}

func runWorkerLib(ctx context.Context, kcfg kafka.Config, adm *kadm.Client, names kafka.Names, ends map[int32]int64, concurrency int) (time.Duration, int64, error) {
	var handled atomic.Int64
	h := worker.HandlerFunc(func(context.Context, tick.Tick, worker.Attempt) error {
		handled.Add(1)
		return nil
	})
	w, err := worker.New(worker.Config{Kafka: kcfg, WorkerID: "tickbench", Concurrency: concurrency, Start: worker.StartEarliest},
		h, worker.Deps{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, 0, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	start := time.Now()
	go func() { errc <- w.Run(wctx) }()
	for {
		select {
		case err := <-errc:
			return 0, 0, fmt.Errorf("worker stopped early: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
		committed, err := adm.FetchOffsets(ctx, names.WorkerGroup)
		if err != nil {
			continue
		}
		done := true
		for p, end := range ends {
			if c, ok := committed.Lookup(names.Work, p); !ok || c.At < end {
				done = false
			}
		}
		if done {
			d := time.Since(start)
			stop()
			if err := <-errc; err != nil {
				return 0, 0, err
			}
			return d, handled.Load(), nil
		}
	}
}

// rss returns the process's resident set size and its peak, from /proc (Linux only).
func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "RSS unknown"
	}
	var cur, peak string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			cur = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			peak = strings.TrimSpace(v)
		}
	}
	return fmt.Sprintf("RSS %s (peak %s)", cur, peak)
}
