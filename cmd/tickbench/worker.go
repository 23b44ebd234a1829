package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/limit"
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
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the worker library's phase to this file")
	memProfile := fs.String("memprofile", "", "write an allocation profile (every allocation of the run, sampled) to this file after the worker library's phase")
	workers := fs.Int("workers", 1, "worker instances in this process, in one group")
	sleep := fs.Duration("handler-sleep", 0, "how long the handler takes (waiting, not computing): 0 is a no-op handler")
	forward := fs.Bool("forward", false, "forward mode instead of a handler: each tick republished to <ns>.fwd, exactly once, in a transaction with its outcome and offset")
	limited := fs.Bool("limited", false, "then fill a second fresh namespace with the same ticks, each counting against a limit (one per partition, none reached), and measure the worker library again: the cost of a limit")
	herd := fs.Int("herd", 0, "then the drain of a herd: this many ticks of as many schedules, all due at one instant and written ahead of it, run by the same workers (0: none); compared with --ticks / the worker rate of this run")
	brokerPID := fs.Int("broker-pid", 0, "the process ID of a broker on this machine (scripts/kafka-dev.sh pid): its CPU per tick over the worker phase is printed too")
	fs.Usage = cli.Usage(fs, "Usage: tickbench worker [flags]\n\n"+
		"Writes --ticks ticks into a fresh namespace, then measures (1) raw franz-go consumption (read_committed,\n"+
		"no processing) and (2) the worker library (--workers instances in one group, a no-op handler, one that waits\n"+
		"--handler-sleep, or forward mode; outcome records and offset commits included). Prints both rates, their\n"+
		"ratio, each partition's rate, the worker phase's CPU and allocations per tick (this process), how busy the\n"+
		"machine's CPUs were over that phase (and the broker's CPU per tick, with --broker-pid), and the round trip\n"+
		"of one produce and its read-back (the floor of a lane's per-tick ledger cost).")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if *n < 1 || *parts < 1 || *schedules < 1 || *workers < 1 || *sleep < 0 {
		return cli.Usagef("--ticks, --partitions, --schedules and --workers must be at least 1, --handler-sleep not negative")
	}
	if *brokerPID != 0 {
		if _, err := pidCPU(*brokerPID); err != nil {
			return cli.Usagef("--broker-pid %d: %v", *brokerPID, err)
		}
	}
	if *herd < 0 || *herd > 0 && (*sleep > 0 || *forward) {
		return cli.Usagef("--herd (not negative) measures the no-op handler: leave --handler-sleep and --forward out")
	}
	if *forward && *sleep > 0 {
		return cli.Usagef("--forward has no handler to sleep in: leave --handler-sleep out")
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
	if _, err := fill(ctx, base, names.Work, *n, *parts, *schedules, false); err != nil {
		return err
	}
	fillRate := float64(*n) / time.Since(start).Seconds()
	fmt.Fprintf(stdout, "fill:   %8d ticks in %6.2fs  %9.0f ticks/s\n", *n, time.Since(start).Seconds(), fillRate)

	// (1) Raw consumption: read_committed, no group, no processing.
	raw, ends, counts, err := consumeRaw(ctx, base, names.Work, *n)
	if err != nil {
		return err
	}
	rawRate := float64(*n) / raw.Seconds()
	fmt.Fprintf(stdout, "raw:    %8d ticks in %6.2fs  %9.0f ticks/s  (franz-go, read_committed, no processing)\n", *n, raw.Seconds(), rawRate)

	// The floor of one lane's per-tick cost: a synchronous produce read back by a consumer already positioned at
	// the partition, which is what the worker does for each started entry.
	if rtt, err := roundTrip(ctx, base, adm, names.Work+".rtt", 300); err != nil {
		fmt.Fprintf(stdout, "round trip: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "round trip: produce + read back one record, 300 times: median %.2f ms, p90 %.2f ms  (bound: %.0f ticks/s per partition)\n",
			ms(rtt[len(rtt)/2]), ms(rtt[len(rtt)*9/10]), 1/rtt[len(rtt)/2].Seconds())
	}

	// (2) The worker library: group, lanes, no-op handler, outcome records, offset commits.
	stopProfile, err := startCPUProfile(*cpuProfile)
	if err != nil {
		return err
	}
	fwd := ""
	if *forward {
		fwd = kcfg.Namespace + ".fwd"
		if _, err := kafka.EnsureTopic(ctx, adm, kafka.TopicSpec{Name: fwd, Partitions: int32(*parts)}, -1); err != nil {
			return err
		}
	}
	cpu0, allocs0, machine0 := processCPU(), mallocs(), readMachineCPU()
	broker0, _ := pidCPU(*brokerPID)
	wd, handled, done, err := runWorkerLib(ctx, kcfg, adm, names, ends, *concurrency, *workers, *sleep, fwd, nil)
	cpu, allocs, machine := processCPU()-cpu0, mallocs()-allocs0, readMachineCPU()
	broker1, brokerErr := pidCPU(*brokerPID)
	stopProfile()
	if err != nil {
		return err
	}
	if err := writeAllocProfile(*memProfile); err != nil {
		return err
	}
	wRate := float64(*n) / wd.Seconds()
	if fwd != "" {
		fmt.Fprintf(stdout, "worker: %8d ticks in %6.2fs  %9.0f ticks/s  (internal/worker x%d, forward mode to %s: ticks, outcomes and offsets in transactions)\n",
			*n, wd.Seconds(), wRate, *workers, fwd)
	} else {
		fmt.Fprintf(stdout, "worker: %8d ticks in %6.2fs  %9.0f ticks/s  (internal/worker x%d, concurrency %d, handler %s, %d handled, outcomes + commits)\n",
			*n, wd.Seconds(), wRate, *workers, *concurrency, handlerName(*sleep), handled)
	}
	fmt.Fprintf(stdout, "ratio:  worker/raw = %.3f\n", wRate/rawRate)
	printPerPartition(stdout, counts, done)
	printCost(stdout, *n, wd, cpu, allocs, machine0, machine, *brokerPID, broker1-broker0, brokerErr)
	printMemory(stdout)
	if *limited {
		if err := limitedPhase(ctx, stdout, *brokers, *n, *parts, *schedules, *concurrency, *workers, *sleep, *keep, wRate); err != nil {
			return err
		}
	}
	if *herd > 0 {
		return herdPhase(ctx, stdout, *brokers, *herd, *parts, *concurrency, *workers, wRate, fillRate, *keep)
	}
	return nil
}

// printCost prints what the worker phase of n ticks over d cost: this process's CPU (cpu) and allocations, how
// busy the machine's CPUs were between machine0 and machine, and, with brokerPID, the broker's CPU (broker).
func printCost(stdout io.Writer, n int, d, cpu time.Duration, allocs uint64, machine0, machine machineCPU, brokerPID int, broker time.Duration, brokerErr error) {
	fmt.Fprintf(stdout, "cost:   %.1f µs of CPU per tick (this process: the worker and its Kafka clients; %.2f cores), %.0f allocations per tick\n",
		float64(cpu.Microseconds())/float64(n), cpu.Seconds()/d.Seconds(), float64(allocs)/float64(n))
	if !machine0.ok || !machine.ok || machine.total <= machine0.total {
		return
	}
	ncpu := runtime.NumCPU()
	busy := float64(machine.busy-machine0.busy) / float64(machine.total-machine0.total)
	line := fmt.Sprintf("machine: %.2f of %d CPUs busy over the worker phase", busy*float64(ncpu), ncpu)
	if brokerPID != 0 && brokerErr == nil {
		line += fmt.Sprintf("; the broker (pid %d) %.1f µs of CPU per tick (%.2f cores)", brokerPID, float64(broker.Microseconds())/float64(n), broker.Seconds()/d.Seconds())
	}
	fmt.Fprintln(stdout, line)
}

// printMemory prints this process's Go heap and resident memory.
func printMemory(stdout io.Writer) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(stdout, "memory: Go heap in use %.1f MiB, heap reserved from the OS %.1f MiB, %s\n", float64(ms.HeapInuse)/(1<<20), float64(ms.HeapSys)/(1<<20), rss())
}

// limitedPhase fills a fresh namespace with n limited ticks (benchLimits: one limit per partition, none
// reached) and measures the worker library on them, against unlimited, the rate of the same run's first phase.
func limitedPhase(ctx context.Context, stdout io.Writer, brokers string, n, parts, schedules, concurrency, workers int, sleep time.Duration, keep bool, unlimited float64) error {
	ns, err := newBenchNamespace(ctx, brokers, "tickbench", parts, keep)
	if err != nil {
		return err
	}
	defer ns.close()
	if _, err := fill(ctx, ns.opts, ns.names.Work, n, parts, schedules, true); err != nil {
		return err
	}
	_, ends, _, err := consumeRaw(ctx, ns.opts, ns.names.Work, n)
	if err != nil {
		return err
	}
	wd, handled, _, err := runWorkerLib(ctx, ns.cfg, ns.adm, ns.names, ends, concurrency, workers, sleep, "", benchLimits(parts))
	if err != nil {
		return err
	}
	rate := float64(n) / wd.Seconds()
	fmt.Fprintf(stdout, "limited: %7d ticks in %6.2fs  %9.0f ticks/s  (the same, every tick in a limit of %d at once, one limit per partition; %d handled)\n",
		n, wd.Seconds(), rate, benchLimitConcurrency, handled)
	fmt.Fprintf(stdout, "ratio:  limited/unlimited = %.3f\n", rate/unlimited)
	return nil
}

// benchLimitConcurrency is the bound of tickbench's limits: more than a worker runs at once, so none is reached
// and what is measured is the bookkeeping.
const benchLimitConcurrency = 10_000

// staticLimits is a worker.LimitSource of fixed limits.
type staticLimits map[string]limit.Limit

func (s staticLimits) Loaded() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (s staticLimits) Get(name string) (limit.Limit, bool) {
	l, ok := s[name]
	return l, ok
}

// benchLimitName returns the name of tickbench's limit on work partition p of parts.
func benchLimitName(p int32, parts int) string {
	for i := 0; ; i++ {
		if name := fmt.Sprintf("bench-%d-%d", p, i); tick.LimitPartition(name, parts) == p {
			return name
		}
	}
}

// benchLimits returns tickbench's limits, one per partition.
func benchLimits(parts int) staticLimits {
	out := staticLimits{}
	for p := range int32(parts) {
		name := benchLimitName(p, parts)
		out[name] = limit.Limit{Name: name, Concurrency: benchLimitConcurrency}
	}
	return out
}

// startCPUProfile starts a CPU profile into path (none when path is empty) and returns the function that ends it.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// fill writes n tick records to topic in transactions of 10,000 and returns the time spent producing and
// committing them: each transaction's records are built before its clock starts, so the figure is the client's
// and the broker's, not the encoding's (tickbench emit's raw baseline).
func fill(ctx context.Context, base []kgo.Opt, topic string, n, parts, schedules int, limited bool) (time.Duration, error) {
	names := make([]string, parts) // with limited, the limit of each partition's ticks
	if limited {
		for p := range int32(parts) {
			names[p] = benchLimitName(p, parts)
		}
	}
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.TransactionalID(fmt.Sprintf("tickbench-fill-%d", time.Now().UnixNano())),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20),
	)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	slot0 := time.Now().Truncate(time.Second).Add(-24 * time.Hour)
	var took time.Duration
	recs := make([]*kgo.Record, 0, 10_000)
	for i := 0; i < n; {
		recs = recs[:0]
		for end := min(i+10_000, n); i < end; i++ {
			tk := tick.New(fmt.Sprintf("bench-%04d", i%schedules), slot0.Add(time.Duration(i/schedules)*time.Second), 0, 1)
			tk.Limit = names[tick.Partition(tk.Schedule, 0, parts)] // the same partition as without the limit
			v, err := tick.Encode(tk)
			if err != nil {
				return 0, err
			}
			recs = append(recs, &kgo.Record{Topic: topic, Partition: tk.Partition(parts), Key: []byte(tk.ID), Value: v})
		}
		start := time.Now()
		if err := transact(ctx, cl, recs); err != nil {
			return 0, fmt.Errorf("filling: %w", err)
		}
		took += time.Since(start)
	}
	return took, nil
}

// transact produces recs in one transaction of cl and commits it.
func transact(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	var perr firstError
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			perr.set(err)
		}
	}
	for _, r := range recs {
		cl.Produce(ctx, r, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if e := perr.get(); e != nil {
		return e
	}
	return cl.EndTransaction(ctx, kgo.TryCommit)
}

// consumeRaw reads n records and returns how long it took and, per partition, the offset after its last data
// record (a worker is done when it has committed those; transaction markers sit after them).
func consumeRaw(ctx context.Context, base []kgo.Opt, topic string, n int) (time.Duration, map[int32]int64, map[int32]int, error) {
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)...)
	if err != nil {
		return 0, nil, nil, err
	}
	defer cl.Close()
	start := time.Now()
	got := 0
	ends := map[int32]int64{}
	counts := map[int32]int{}
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, nil, nil, err
		}
		fs.EachError(func(t string, p int32, err error) { fmt.Fprintln(os.Stderr, "fetch error:", t, p, err) })
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if k := len(p.Records); k > 0 {
				got += k
				counts[p.Partition] += k
				ends[p.Partition] = p.Records[k-1].Offset + 1
			}
		})
	}
	return time.Since(start), ends, counts, nil
}

// runWorkerLib runs the worker library until every partition is committed up to its end and returns the total
// time, the ticks handled and, per partition, when its commit first reached its end (polled every 100 ms).
func runWorkerLib(ctx context.Context, kcfg kafka.Config, adm *kadm.Client, names kafka.Names, ends map[int32]int64, concurrency, workers int, sleep time.Duration, forward string, limits worker.LimitSource) (time.Duration, int64, map[int32]time.Duration, error) {
	var handled atomic.Int64
	var h worker.Handler = worker.HandlerFunc(func(ctx context.Context, _ tick.Tick, _ worker.Attempt) error {
		handled.Add(1)
		if sleep > 0 {
			t := time.NewTimer(sleep)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	var ws []*worker.Worker
	for i := range workers {
		if forward != "" {
			h = nil // forward mode runs no handler
		}
		w, err := worker.New(worker.Config{Kafka: kcfg, WorkerID: fmt.Sprintf("tickbench-%d", i), Concurrency: concurrency, Start: worker.StartEarliest, Forward: forward, Limits: limits},
			h, worker.Deps{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return 0, 0, nil, err
		}
		ws = append(ws, w)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, workers)
	start := time.Now()
	doneAt := map[int32]time.Duration{}
	for _, w := range ws {
		go func() { errc <- w.Run(wctx) }()
	}
	for {
		select {
		case err := <-errc:
			return 0, 0, nil, fmt.Errorf("worker stopped early: %w", err)
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
			} else if _, seen := doneAt[p]; !seen {
				doneAt[p] = time.Since(start)
			}
		}
		if done {
			d := time.Since(start)
			stop()
			for range ws {
				if err := <-errc; err != nil {
					return 0, 0, nil, err
				}
			}
			return d, handled.Load(), doneAt, nil
		}
	}
}

func handlerName(sleep time.Duration) string {
	if sleep == 0 {
		return "no-op"
	}
	return "sleeping " + sleep.String()
}

// printPerPartition prints what one partition's lane achieved: its ticks over the time until its commit reached
// its end (the group join included), as the median, minimum and maximum over the partitions.
func printPerPartition(w io.Writer, counts map[int32]int, done map[int32]time.Duration) {
	var rates []float64
	for p, k := range counts {
		if d := done[p]; d > 0 {
			rates = append(rates, float64(k)/d.Seconds())
		}
	}
	if len(rates) == 0 {
		return
	}
	sort.Float64s(rates)
	med := rates[len(rates)/2]
	if len(rates)%2 == 0 {
		med = (rates[len(rates)/2-1] + rates[len(rates)/2]) / 2
	}
	fmt.Fprintf(w, "per partition (%d): median %.0f ticks/s (%.2f ms per tick), min %.0f, max %.0f  (ticks / time until its last commit)\n",
		len(rates), med, 1000/med, rates[0], rates[len(rates)-1])
}

// roundTrip creates a one-partition topic and n times produces a record synchronously (with the worker's
// producer options) and waits until a consumer already positioned at the partition, with the ledger reader's
// fetch wait, has fetched it; it returns the n durations, sorted.
func roundTrip(ctx context.Context, base []kgo.Opt, adm *kadm.Client, topic string, n int) ([]time.Duration, error) {
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		return nil, err
	}
	prod, err := kgo.NewClient(append(append(base[:len(base):len(base)], kafka.WorkerProducerOpts()...), kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		return nil, err
	}
	defer prod.Close()
	cons, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cons.Close()
	var out []time.Duration
	for i := 0; i < n+1; i++ { // the first one warms up both clients
		start := time.Now()
		r := &kgo.Record{Value: []byte("rtt")}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			return nil, err
		}
		for seen := false; !seen; {
			fs := cons.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			fs.EachRecord(func(got *kgo.Record) { seen = seen || got.Offset >= r.Offset })
		}
		if i > 0 {
			out = append(out, time.Since(start))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// writeAllocProfile writes the process's allocation profile to path (nothing when path is empty).
func writeAllocProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// processCPU returns the CPU time (user and system) this process has used so far; 0 where the OS does not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mallocs returns how many heap objects this process has allocated so far.
func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
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

// firstError keeps the first error set, from any goroutine (produce promises). An atomic.Value would panic on a
// second error of another type.
type firstError struct {
	mu  sync.Mutex
	err error
}

func (f *firstError) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

func (f *firstError) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
