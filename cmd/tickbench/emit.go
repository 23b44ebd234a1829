package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func init() {
	register("emit", command{
		summary: "load N schedules into a fresh namespace, run one real ticker, measure emission lag and leader memory",
		run:     runEmitBench,
	})
}

func runEmitBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tickbench emit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	n := fs.Int("schedules", 100_000, "schedules to load")
	every := fs.Duration("every", time.Minute, "interval of every schedule")
	spread := fs.Bool("spread", false, "spread the schedules' offsets over the interval instead of aligning them all on one slot")
	rounds := fs.Int("rounds", 2, "slots to measure per schedule")
	parts := fs.Int("partitions", 12, "partitions of the work topic")
	tickerBin := fs.String("ticker", "", "path of the ticker binary (default: go build ./cmd/ticker into a temp dir)")
	profileDir := fs.String("profile-dir", "", "write the leader's heap profiles to this directory: heap-peak.pb.gz whenever its RSS reaches a new peak (at most every 2s), heap-end.pb.gz at the end")
	fs.Usage = cli.Usage(fs, `Usage: tickbench emit [flags]

Loads --schedules interval schedules into a fresh namespace, measures raw transactional produce throughput of
the same volume (baseline), then starts one real ticker process and measures, for --rounds slots: emission lag
(slot -> tick visible to a read_committed consumer) p50/p99/max, the time to emit a whole slot, the leader's
throughput against the baseline, and the leader's peak memory (RSS and Go heap from its /metrics).`)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return err
	}
	if *n < 1 || *rounds < 1 || *every < time.Second {
		return cli.Usagef("--schedules and --rounds must be at least 1, --every at least 1s")
	}
	ns, err := newBenchNamespace(ctx, *brokers, "tickbench-emit", *parts, false)
	if err != nil {
		return err
	}
	defer ns.close()
	kcfg, names, base, adm := ns.cfg, ns.names, ns.opts, ns.adm
	rawTopic := names.Work + ".raw"
	if _, err := adm.CreateTopic(ctx, int32(*parts), -1, nil, rawTopic); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "namespace %s: %d schedules every %v (%s), %d work partitions\n", kcfg.Namespace, *n, *every, map[bool]string{true: "offsets spread", false: "all on one slot"}[*spread], *parts)

	// Baseline: the same number of records the leader writes per slot (a tick and a state record per schedule),
	// transactionally, 10,000 records per transaction.
	// A warm-up transaction first: a topic created a moment ago takes a while to appear in metadata.
	if err := fill(ctx, base, rawTopic, 100, *parts, 100); err != nil {
		return fmt.Errorf("baseline warm-up: %w", err)
	}
	start := time.Now()
	if err := fill(ctx, base, rawTopic, 2**n, *parts, *n); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	rawRate := float64(2**n) / time.Since(start).Seconds()
	fmt.Fprintf(stdout, "baseline: raw transactional produce of %d records in %.2fs: %.0f records/s\n", 2**n, time.Since(start).Seconds(), rawRate)

	// The schedules.
	if err := loadSchedules(ctx, base, names.Schedules, *n, *every, *spread); err != nil {
		return err
	}

	// The ticker.
	bin := *tickerBin
	if bin == "" {
		dir, err := os.MkdirTemp("", "tickbench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		bin = filepath.Join(dir, "ticker")
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ticker").CombinedOutput(); err != nil {
			return fmt.Errorf("building the ticker: %w\n%s", err, out)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	targs := []string{"run", "--brokers", *brokers, "--namespace", kcfg.Namespace, "--metrics-addr", metricsAddr, "--log-level", "warn"}
	if *profileDir != "" {
		targs = append(targs, "--pprof")
	}
	cmd := exec.Command(bin, targs...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()

	// Tick arrivals, read_committed.
	type arrival struct {
		slot time.Time
		seen time.Time
	}
	var (
		mu       sync.Mutex
		arrivals []arrival
	)
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.ConsumeTopics(names.Work),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	cctx, stopConsume := context.WithCancel(ctx)
	defer stopConsume()
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			fetches := cl.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			now := time.Now()
			mu.Lock()
			fetches.EachRecord(func(r *kgo.Record) {
				if t, err := tick.Decode(r.Value); err == nil {
					arrivals = append(arrivals, arrival{t.Slot, now})
				}
			})
			mu.Unlock()
		}
	}()

	// Peak memory, sampled every 250 ms.
	var peakRSS, peakHeap float64
	var profiled time.Time
	sample := func() {
		m := scrape(metricsAddr)
		if rss := m["process_resident_memory_bytes"]; rss > peakRSS && *profileDir != "" && time.Since(profiled) > 2*time.Second {
			profiled = time.Now()
			saveProfile(metricsAddr, filepath.Join(*profileDir, "heap-peak.pb.gz"))
		}
		peakRSS = max(peakRSS, m["process_resident_memory_bytes"])
		peakHeap = max(peakHeap, m["go_memstats_heap_inuse_bytes"])
	}
	want := *n * *rounds
	deadline := time.Now().Add(time.Duration(*rounds+1)**every + 2*time.Minute)
	for {
		sample()
		mu.Lock()
		got := len(arrivals)
		mu.Unlock()
		if got >= want {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d ticks after %v", got, want, time.Until(deadline))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	sample()
	stopConsume()
	<-consumed
	final := scrape(metricsAddr)
	if *profileDir != "" {
		saveProfile(metricsAddr, filepath.Join(*profileDir, "heap-end.pb.gz"))
	}

	mu.Lock()
	defer mu.Unlock()
	lags := make([]time.Duration, 0, len(arrivals))
	bySlot := map[time.Time][]time.Time{}
	for _, a := range arrivals {
		lags = append(lags, a.seen.Sub(a.slot))
		bySlot[a.slot] = append(bySlot[a.slot], a.seen)
	}
	slices.Sort(lags)
	q := func(p float64) time.Duration { return lags[min(len(lags)-1, int(p*float64(len(lags))))] }
	fmt.Fprintf(stdout, "emitted: %d ticks over %d slots; emission lag (slot -> visible read_committed): p50 %v  p99 %v  max %v\n",
		len(arrivals), len(bySlot), q(0.50).Round(time.Millisecond), q(0.99).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
	if !*spread {
		slots := make([]time.Time, 0, len(bySlot))
		for s := range bySlot {
			slots = append(slots, s)
		}
		slices.SortFunc(slots, func(a, b time.Time) int { return a.Compare(b) })
		for _, s := range slots {
			seen := bySlot[s]
			last := slices.MaxFunc(seen, func(a, b time.Time) int { return a.Compare(b) })
			took := last.Sub(s)
			rate := float64(2*len(seen)) / took.Seconds()
			fmt.Fprintf(stdout, "slot %s: %d ticks, last visible %v after the slot: %.0f records/s (%.2f of the raw baseline)\n",
				s.Format(time.TimeOnly), len(seen), took.Round(time.Millisecond), rate, rate/rawRate)
		}
	}
	fmt.Fprintf(stdout, "leader memory: peak RSS %.0f MiB, peak Go heap in use %.0f MiB; transactions committed %.0f, ticks emitted %.0f\n",
		peakRSS/(1<<20), peakHeap/(1<<20), final[`tickgroup_transactions_total{result="committed"}`], final["tickgroup_ticks_emitted_total"])
	return nil
}

func loadSchedules(ctx context.Context, base []kgo.Opt, topic string, n int, every time.Duration, spread bool) error {
	cl, err := kgo.NewClient(append(base[:len(base):len(base)], kgo.ProducerBatchMaxBytes(1<<20))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	start := time.Now()
	var (
		mu    sync.Mutex
		first error
	)
	for i := range n {
		spec := schedule.Spec{Name: fmt.Sprintf("load-%07d", i), Every: schedule.Duration(every), Payload: "x"}
		if spread {
			spec.Offset = schedule.Duration(time.Duration(i%int(every/time.Second)) * time.Second)
		}
		v, err := schedule.Encode(spec)
		if err != nil {
			return err
		}
		cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(spec.Name), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = err
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if first != nil {
		return fmt.Errorf("writing schedules: %w", first)
	}
	fmt.Printf("schedules: %d written in %.2fs\n", n, time.Since(start).Seconds())
	return nil
}

// scrape reads a /metrics page (empty when it cannot be read).
func scrape(addr string) admin.Samples {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	m, err := admin.Scrape(ctx, http.DefaultClient, "http://"+addr+"/metrics")
	if err != nil {
		return admin.Samples{}
	}
	return m
}

// saveProfile writes the heap profile served at addr to path (nothing when it cannot be read).
func saveProfile(addr, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/debug/pprof/heap", nil)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return
	}
	_ = os.WriteFile(path, b, 0o644)
}
