package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/cli"
	"github.com/tickgroup/tickgroup/internal/dispatch"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/shares"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func init() {
	register("emit", command{
		summary: "load N schedules into a fresh namespace, run real tickers (one, or --replicas R), measure emission lag and memory",
		run:     runEmitBench,
	})
}

func runEmitBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parseEmitOptions(args, getenv, stderr)
	if err != nil {
		return err
	}
	ns, err := newBenchNamespaceLeaders(ctx, o.brokers, "tickbench-emit", o.parts, o.leaders, o.keep)
	if err != nil {
		return err
	}
	defer ns.close()
	b, err := measureBaseline(ctx, o, ns, stdout)
	if err != nil {
		return err
	}
	defer b.seen.stop()

	// The schedules.
	if err := loadSchedules(ctx, ns.opts, ns.names.Schedules, o.n, o.every, o.spread); err != nil {
		return err
	}
	if o.leaders > 1 {
		// The schedule shares, as leader 0 keeps them: the replicas then start on their leaders' shares, as in a
		// namespace whose schedules were written while it ran.
		if err := copyShares(ctx, ns, o.leaders, stdout); err != nil {
			return err
		}
	}

	// The ticker.
	bin, cleanup, err := tickerBinary(ctx, o.tickerBin)
	if err != nil {
		return err
	}
	defer cleanup()
	extra := o.tickerArgs()
	replicas, err := startReplicas(bin, o, ns.cfg.Namespace, extra, stderr)
	for _, p := range replicas {
		defer p.stop()
	}
	if err != nil {
		return err
	}
	leaderProc := replicas[0]

	// Tick arrivals, read_committed.
	ticks, err := consumeArrivals(ctx, ns.opts, ns.names.Work)
	if err != nil {
		return err
	}
	defer ticks.stop()

	r := &emitRun{o: o, ns: ns, base: b, bin: bin, extra: extra, leader: leaderProc, replicas: replicas, ticks: ticks,
		baselines: []baselineRun{{at: b.at, rate: b.rate}}, stdout: stdout, stderr: stderr}
	defer r.stopStandby()
	if err := r.watch(ctx); err != nil {
		return err
	}
	r.sample()
	if err := r.finalBaseline(ctx); err != nil {
		return err
	}
	ticks.stop()
	final := leaderProc.scrape()
	if leaderProc.killed && r.standby != nil {
		final = r.standby.scrape() // the counters of the term that finished the run
	}
	if len(replicas) > 1 {
		final = liveCounters(replicas)
	}
	if o.profileDir != "" && !leaderProc.killed {
		saveProfile(leaderProc.addr, filepath.Join(o.profileDir, "heap-end.pb.gz"))
	}
	r.report(final)
	return nil
}

// emitOptions are tickbench emit's flags.
type emitOptions struct {
	brokers   string
	n         int
	every     time.Duration
	spread    bool
	rounds    int
	parts     int
	tickerBin string
	takeover  bool
	lead      time.Duration
	leaders   int
	// memoryLimit is the tickers' GOMEMLIMIT ("": none).
	memoryLimit string
	replicas    int
	killOne     bool
	profileDir  string
	logDir      string
	keep        bool
}

// parseEmitOptions parses and checks tickbench emit's flags.
func parseEmitOptions(args []string, getenv func(string) string, stderr io.Writer) (emitOptions, error) {
	var o emitOptions
	fs := flag.NewFlagSet("tickbench emit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.brokers, "brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	fs.IntVar(&o.n, "schedules", 100_000, "schedules to load")
	fs.DurationVar(&o.every, "every", time.Minute, "interval of every schedule")
	fs.BoolVar(&o.spread, "spread", false, "spread the schedules' offsets over the interval instead of aligning them all on one slot")
	fs.IntVar(&o.rounds, "rounds", 2, "slots to measure per schedule")
	fs.IntVar(&o.parts, "partitions", 12, "partitions of the work topic")
	fs.StringVar(&o.tickerBin, "ticker", "", "path of the ticker binary (default: go build ./cmd/ticker into a temp dir)")
	fs.BoolVar(&o.takeover, "takeover", false, "run a standby ticker beside the leader and SIGKILL the leader halfway through the run; report the takeover time, the state rebuild, the lag around it and every slot missing or doubled")
	fs.DurationVar(&o.lead, "lead", -1, "the tickers' --lead (default: theirs)")
	fs.IntVar(&o.leaders, "leaders", 1, "leaders of the namespace (ticker init --leaders): the one ticker process leads them all; the lag is also reported per leader")
	fs.IntVar(&o.replicas, "replicas", 1, "ticker processes started at once, sharing the --leaders: each one's peak RSS is reported")
	fs.StringVar(&o.memoryLimit, "memory-limit", "", "GOMEMLIMIT of the ticker processes (e.g. 1200MiB): the Go runtime's soft memory limit, which makes it collect garbage harder as the heap nears it; empty: none")
	fs.BoolVar(&o.killOne, "kill-one", false, "with --replicas 2 or more: SIGKILL the replica leading the most leaders halfway through the run, and report the ticks its takeover made late and every slot missing or doubled")
	fs.StringVar(&o.profileDir, "profile-dir", "", "write the leader's heap profiles to this directory: heap-peak.pb.gz whenever its RSS reaches a new peak (at most every 2s), heap-end.pb.gz at the end")
	fs.BoolVar(&o.keep, "keep", false, "keep the namespace (topics and groups) afterwards, for ticker audit or status on it")
	fs.StringVar(&o.logDir, "log-dir", "", "write every ticker's log (JSON, info and above) to <name>.log in this directory")
	fs.Usage = cli.Usage(fs, emitUsage)
	if err := cli.Parse(fs, args, getenv); err != nil {
		return o, err
	}
	if o.n < 1 || o.rounds < 1 || o.every < time.Second {
		return o, cli.Usagef("--schedules and --rounds must be at least 1, --every at least 1s")
	}
	if o.leaders < 1 || o.leaders > kafka.MaxLeaders {
		return o, cli.Usagef("--leaders %d: want 1 to %d", o.leaders, kafka.MaxLeaders)
	}
	if o.memoryLimit != "" && !memoryLimitRE.MatchString(o.memoryLimit) {
		return o, cli.Usagef("--memory-limit %q: want a number of bytes with an optional unit, B, KiB, MiB, GiB or TiB (as GOMEMLIMIT)", o.memoryLimit)
	}
	switch {
	case o.replicas < 1 || o.replicas > 16:
		return o, cli.Usagef("--replicas %d: want 1 to 16", o.replicas)
	case o.killOne && o.replicas < 2:
		return o, cli.Usagef("--kill-one needs --replicas 2 or more")
	case o.takeover && o.replicas > 1:
		return o, cli.Usagef("--takeover runs one leader and a standby: use --kill-one with --replicas")
	}
	return o, nil
}

const emitUsage = `Usage: tickbench emit [flags]

Loads --schedules interval schedules into a fresh namespace, measures raw transactional produce throughput of
records of the same shape (baseline: a tick and a state record per schedule; producing and committing only,
and also as the benchmark's read_committed consumer sees the ticks), then starts one real ticker process and
measures, for --rounds slots: emission lag (slot -> tick visible to a consumer of the same code) p50/p99/max,
the time to emit a whole slot, the leader's throughput against both baselines, and the leader's peak memory
(RSS and Go heap from its /metrics).

With all schedules on one slot (no --spread, no --takeover), the baseline is measured again while the leader
waits after each slot, and once after the last: each slot is also compared with the mean of the baselines
measured either side of it, and the median of the whole slots with the median of the baselines, as the
machine's speed drifts over the minutes of a run.

With --takeover a standby ticker starts beside the leader once the leader emits, and the leader gets SIGKILL
halfway through the run: the report adds the takeover time, both terms' start phases (from their logs), the
lag of the slots around the kill, the slots missing or doubled, and the standby's memory.

With --replicas R, R ticker processes start at once and share the namespace's --leaders; the report gives each
one's peak RSS ("peak RSS N MiB"). With --kill-one, the replica leading the most leaders gets SIGKILL halfway
through the run, and the report says how many ticks of the slots after the kill were visible after their slot
("N ticks late after the takeover") and which slots went missing or doubled.`

// tickerArgs are the flags the benchmark passes to each ticker it starts.
func (o emitOptions) tickerArgs() []string {
	extra := []string{}
	if o.lead >= 0 {
		extra = append(extra, "--lead", o.lead.String())
	}
	if o.profileDir != "" {
		extra = append(extra, "--pprof")
	}
	return extra
}

// tickerBinary returns bin, or when it is empty a ticker built into a temporary directory that cleanup removes.
func tickerBinary(ctx context.Context, bin string) (_ string, cleanup func(), _ error) {
	if bin != "" {
		return bin, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "tickbench")
	if err != nil {
		return "", nil, err
	}
	bin = filepath.Join(dir, "ticker")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ticker").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building the ticker: %w\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// rawBaseline is the first measurement of the raw baseline, and the topics and consumer it used.
type rawBaseline struct {
	topic, states string           // the raw tick and state topics
	seen          *arrivalConsumer // the raw ticks as the benchmark's consumer sees them
	took          time.Duration    // producing and committing the records
	rate          float64          // records/s, producing and committing only
	at            time.Time        // when it ended
	seenRate      float64          // records/s as the consumer saw them
}

// measureBaseline creates the raw topics beside ns and measures the first raw baseline, after a warm-up.
//
// Baseline: the records the leader writes per slot, a tick to a work partition and a state record to a
// one-partition topic per schedule, transactionally, 10,000 records per transaction. The benchmark's consumer
// reads the ticks as it reads the leader's, so the baseline is also given as the consumer sees it: the leader's
// figures are taken with that consumer on the same cores. A warm-up first (see warmUp).
func measureBaseline(ctx context.Context, o emitOptions, ns *benchNamespace, stdout io.Writer) (_ *rawBaseline, err error) {
	b := &rawBaseline{topic: ns.names.Work + ".raw", states: ns.names.Ticker + ".raw"}
	if _, err := ns.adm.CreateTopic(ctx, int32(o.parts), -1, nil, b.topic); err != nil {
		return nil, err
	}
	if _, err := ns.adm.CreateTopic(ctx, 1, -1, nil, b.states); err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "namespace %s: %d schedules every %v (%s), %d work partitions\n", ns.cfg.Namespace, o.n, o.every, map[bool]string{true: "offsets spread", false: "all on one slot"}[o.spread], o.parts)

	if b.seen, err = consumeArrivals(ctx, ns.opts, b.topic); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.seen.stop()
		}
	}()
	if _, err := fillBaseline(ctx, ns.opts, b.topic, b.states, warmUp, o.parts); err != nil {
		return nil, fmt.Errorf("baseline warm-up: %w", err)
	}
	if err := b.seen.await(ctx, warmUp, time.Minute); err != nil {
		return nil, fmt.Errorf("baseline warm-up: %w", err)
	}
	if b.took, err = fillBaseline(ctx, ns.opts, b.topic, b.states, o.n, o.parts); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	b.rate, b.at = float64(2*o.n)/b.took.Seconds(), time.Now()
	if err := b.seen.await(ctx, warmUp+o.n, time.Minute); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	seenSpan := b.seen.span(warmUp)
	// Records: the ticks' span covers their states as well. Like a leader's slot rate below, it counts the first
	// transaction's records in a span that starts when they become visible (0.5 % at a million schedules).
	b.seenRate = float64(2*o.n) / seenSpan.Seconds()
	fmt.Fprintf(stdout, "baseline: raw transactional produce of %d records, a tick and a state per schedule, in %.2fs (producing and committing only; the records built before the clock starts): %.0f records/s; as the benchmark's consumer saw the ticks (first to last visible, the measure of a leader's slot below): %.2fs, %.0f records/s\n",
		2*o.n, b.took.Seconds(), b.rate, seenSpan.Seconds(), b.seenRate)
	return b, nil
}

// emitRun is one run of tickbench emit from the leader's start: its tickers, the ticks seen, and the peak memory
// of each process, sampled every 250 ms; the standby's takeover comes halfway through the run.
type emitRun struct {
	o      emitOptions
	ns     *benchNamespace
	base   *rawBaseline
	bin    string
	extra  []string
	leader *tickerProc
	// replicas are the ticker processes of --replicas, leader the first (one process without it).
	replicas []*tickerProc
	ticks    *arrivalConsumer

	// With --kill-one: the replica killed, the leaders it led then, and when.
	victim    *tickerProc
	victimLed int
	victimAt  time.Time

	standby                 *tickerProc
	killedAt                time.Time
	standbyRSS, takeoverRSS float64
	// On one slot, the baseline is measured again while the leader waits after each slot (and once after the
	// last): the machine's speed drifts over the minutes of a run, and each slot is then compared with the
	// baselines measured either side of it (the raw consumer stays on, as during the first).
	baselines []baselineRun

	stdout, stderr io.Writer
}

// stopStandby stops the standby ticker, if one was started.
func (r *emitRun) stopStandby() {
	if r.standby != nil {
		r.standby.stop()
	}
}

// sample records the peak memory of each ticker process.
func (r *emitRun) sample() {
	r.leader.sample(r.o.profileDir)
	for _, p := range r.replicas[1:] {
		p.sample("")
	}
	if r.standby != nil {
		rss := r.standby.sample("")
		if r.killedAt.IsZero() {
			r.standbyRSS = max(r.standbyRSS, rss)
		} else {
			r.takeoverRSS = max(r.takeoverRSS, rss)
		}
	}
}

// again reports whether the baseline is measured again between slots (all schedules on one slot, no takeover,
// no kill).
func (r *emitRun) again() bool { return !r.o.spread && !r.o.takeover && !r.o.killOne }

// rebaseline measures the raw baseline again.
func (r *emitRun) rebaseline(ctx context.Context) error {
	took, err := fillBaseline(ctx, r.ns.opts, r.base.topic, r.base.states, r.o.n, r.o.parts)
	if err != nil {
		return fmt.Errorf("baseline again: %w", err)
	}
	r.baselines = append(r.baselines, baselineRun{at: time.Now(), rate: float64(2*r.o.n) / took.Seconds()})
	return nil
}

// roomFor reports whether the next slot's emission is far enough off for a baseline: the schedules' slots are
// multiples of every in Unix time, emitted lead ahead.
func (r *emitRun) roomFor() bool {
	leadTime := dispatch.DefaultLead
	if r.o.lead >= 0 {
		leadTime = r.o.lead
	}
	e := int64(max(r.o.every/time.Second, 1))
	next := time.Unix((time.Now().Add(leadTime).Unix()/e+1)*e, 0).Add(-leadTime)
	return time.Until(next) >= 2*r.base.took+3*time.Second
}

// idle reports whether the leader has emitted nothing for 3 s (its slot is done).
func (r *emitRun) idle() bool { return time.Since(r.ticks.lastSeen()) >= 3*time.Second }

// watch waits for every tick of the run, sampling memory every 250 ms, measuring the baseline again between
// slots, and with --takeover starting the standby and killing the leader halfway.
func (r *emitRun) watch(ctx context.Context) error {
	seenAtBaseline := 0
	want := r.o.n * r.o.rounds
	deadline := time.Now().Add(time.Duration(r.o.rounds+1)*r.o.every + 3*time.Minute)
	for {
		r.sample()
		got := r.ticks.count()
		if r.again() && got > seenAtBaseline && got < want && r.idle() {
			// The leader has waited 3 s since its last tick.
			if r.roomFor() {
				if err := r.rebaseline(ctx); err != nil {
					return err
				}
			}
			seenAtBaseline = got
		}
		if got >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d ticks after the deadline", got, want)
		}
		if err := r.takeover(got, want); err != nil {
			return err
		}
		r.killOne(got, want)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// takeover, with --takeover, starts the standby beside the leader once the leader emits, and kills the leader
// once half of the want ticks are seen and the standby is ready.
func (r *emitRun) takeover(got, want int) error {
	if r.o.takeover && r.standby == nil && got > 0 {
		// The first leader emits: start the standby beside it.
		standby, err := startTicker(r.bin, r.o.brokers, r.ns.cfg.Namespace, "standby", r.extra, r.o.tickerEnv(), r.o.logDir, r.stderr)
		if err != nil {
			return err
		}
		r.standby = standby
	}
	if r.standby != nil && r.killedAt.IsZero() && got >= want/2 && r.standby.ready() {
		r.killedAt = time.Now()
		r.leader.kill()
		fmt.Fprintf(r.stdout, "takeover: SIGKILL to the leader at %s (%d of %d ticks seen); standby peak RSS so far %.0f MiB\n",
			r.killedAt.Format("15:04:05.000"), got, want, r.standbyRSS/(1<<20))
	}
	return nil
}

// finalBaseline measures the baseline once more after the last slot, when it is measured between slots: once the
// leader has been quiet for 3 s after its last slot (for at most an interval: with a short one it may not be),
// and if its next slot leaves room.
func (r *emitRun) finalBaseline(ctx context.Context) error {
	if !r.again() {
		return nil
	}
	limit := time.Now().Add(r.o.every + 10*time.Second)
	for !r.idle() && time.Now().Before(limit) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if r.idle() && r.roomFor() {
		return r.rebaseline(ctx)
	}
	return nil
}

// report prints the run's emission lag, its slots against the baselines, the leader's memory and, with
// --takeover, the takeover; final are the counters of the last leader.
func (r *emitRun) report(final admin.Samples) {
	stdout := r.stdout
	arrivals := r.ticks.list
	bySlot := r.reportLag(arrivals)
	if !r.o.spread {
		r.reportSlots(bySlot)
	}
	if len(r.replicas) > 1 {
		r.reportReplicas(final, arrivals)
		return
	}
	fmt.Fprintf(stdout, "leader memory: peak RSS %.0f MiB (%.0f B a schedule), peak Go heap in use %.0f MiB; transactions committed %.0f, ticks emitted %.0f (the last leader's counters)\n",
		r.leader.peakRSS/(1<<20), r.leader.peakRSS/float64(r.o.n), r.leader.peakHeap/(1<<20), final[`tickgroup_transactions_total{result="committed"}`], final["tickgroup_ticks_emitted_total"])
	if ts := r.leader.termStart(); ts != "" {
		fmt.Fprintf(stdout, "leader term start: %s\n", ts)
	}
	if r.standby != nil {
		reportTakeover(stdout, arrivals, r.killedAt, r.standby, r.standbyRSS, r.takeoverRSS, r.o.every)
	}
}

// reportLag prints the emission lag of the run's ticks: of all, from the leader's start, after the first
// interval, and per leader; it returns the times each slot's ticks were seen, by slot.
func (r *emitRun) reportLag(arrivals []arrival) map[int64][]int64 {
	stdout := r.stdout
	lags := make([]time.Duration, 0, len(arrivals))
	bySlot := map[int64][]int64{}
	late := 0
	for _, a := range arrivals {
		lag := a.lag()
		lags = append(lags, lag)
		if lag > 0 {
			late++
		}
		bySlot[a.slot] = append(bySlot[a.slot], a.seen)
	}
	fmt.Fprintf(stdout, "emitted: %d ticks over %d slots; emission lag (slot -> visible read_committed; negative: committed ahead of its slot): %s; visible after their slot: %.2f%%\n",
		len(arrivals), len(bySlot), quantiles(lags), 100*float64(late)/float64(len(lags)))
	// From the leader's start: the slots due once the first ticker process ran. The slots due before it (while
	// the tool wrote the schedules: a schedule's first slot is its first after it was written) were late before
	// any leader existed; they are counted apart.
	var sinceStart []time.Duration
	for _, a := range arrivals {
		if a.slot*int64(time.Second) >= r.leader.started.UnixNano() {
			sinceStart = append(sinceStart, a.lag())
		}
	}
	firstSeen := slices.MinFunc(arrivals, func(a, b arrival) int { return cmp.Compare(a.seen, b.seen) }).seen
	fmt.Fprintf(stdout, "emission lag from the leader's process start (its cold start included): %s over %d ticks; %d ticks of slots due before it started, while the schedules were written, not counted here; first tick visible %v after the process start\n",
		quantiles(sinceStart), len(sinceStart), len(arrivals)-len(sinceStart), time.Duration(firstSeen-r.leader.started.UnixNano()).Round(time.Millisecond))
	// The same without the start-up: the slots from one interval after the first slot on.
	firstSlot := slices.Min(slices.Collect(maps.Keys(bySlot)))
	var steady []time.Duration
	for _, a := range arrivals {
		if a.slot >= firstSlot+int64(r.o.every/time.Second) {
			steady = append(steady, a.lag())
		}
	}
	fmt.Fprintf(stdout, "emission lag after the first interval (start-up excluded): %s over %d ticks\n", quantiles(steady), len(steady))
	if r.o.leaders > 1 {
		per := make([][]time.Duration, r.o.leaders)
		for _, a := range arrivals {
			if a.sched >= 0 {
				k := kafka.LeaderOf(fmt.Sprintf("load-%07d", a.sched), r.o.leaders)
				per[k] = append(per[k], a.lag())
			}
		}
		for k, ls := range per {
			fmt.Fprintf(stdout, "leader %d: %d ticks, emission lag %s\n", k, len(ls), quantiles(ls))
		}
	}
	return bySlot
}

// reportSlots prints, with all schedules on one slot, each slot's throughput against the baselines, and the
// median of the whole slots against the median of the baselines.
func (r *emitRun) reportSlots(bySlot map[int64][]int64) {
	stdout, rawRate := r.stdout, r.base.rate
	slots := slices.Sorted(maps.Keys(bySlot))
	var slotRates []float64 // records/s of the whole slots
	for _, s := range slots {
		seen := bySlot[s]
		first, last := time.Unix(0, slices.Min(seen)), time.Unix(0, slices.Max(seen))
		span := max(last.Sub(first), time.Millisecond)
		// A tick and its state record per schedule (a ticker built with -tags tickgroup_unsafe_nostate writes the
		// ticks alone: the records/s are then twice what it wrote, and ticks/s is its figure).
		ticks := float64(len(seen)) / span.Seconds()
		rate := 2 * ticks
		fmt.Fprintf(stdout, "slot %s: %d ticks, first visible %v and last %v after the slot: %.0f ticks/s (%.2f of the raw baseline's records/s), %.0f records/s (%.2f; %.2f of the baseline as its consumer saw it)",
			time.Unix(s, 0).UTC().Format(time.TimeOnly), len(seen), first.Sub(time.Unix(s, 0)).Round(time.Millisecond),
			last.Sub(time.Unix(s, 0)).Round(time.Millisecond), ticks, ticks/rawRate, rate, rate/rawRate, rate/r.base.seenRate)
		if before, after, ok := around(r.baselines, first, last); ok {
			mean := (before.rate + after.rate) / 2
			fmt.Fprintf(stdout, "; against the baselines either side of it (%s %.0f and %s %.0f records/s, mean %.0f): %.2f in records, %.2f in ticks",
				before.at.Format(time.TimeOnly), before.rate, after.at.Format(time.TimeOnly), after.rate, mean, rate/mean, ticks/mean)
		}
		fmt.Fprintln(stdout)
		if len(seen) == r.o.n {
			slotRates = append(slotRates, rate)
		}
	}
	if len(r.baselines) > 1 && len(slotRates) > 0 {
		// The machine's speed drifts: the median of the slots against the median of the baselines of the run
		// pairs no slot with one baseline.
		var baseRates []float64
		for _, b := range r.baselines {
			baseRates = append(baseRates, b.rate)
		}
		fmt.Fprintf(stdout, "over the run: median of %d whole slots %.0f records/s, median of %d baselines %.0f records/s: %.2f in records, %.2f in ticks\n",
			len(slotRates), median(slotRates), len(baseRates), median(baseRates), median(slotRates)/median(baseRates), median(slotRates)/2/median(baseRates))
	}
}

// median is the median of xs (which it sorts).
func median(xs []float64) float64 {
	slices.Sort(xs)
	if n := len(xs); n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[len(xs)/2]
}

// baselineRun is one measurement of the raw baseline: when it ended and its records/s.
type baselineRun struct {
	at   time.Time
	rate float64
}

// around returns the last baseline that ended before first and the first that ended after last (runs is in
// the order measured).
func around(runs []baselineRun, first, last time.Time) (before, after baselineRun, ok bool) {
	var hasBefore bool
	for _, r := range runs {
		switch {
		case !r.at.After(first):
			before, hasBefore = r, true
		case r.at.After(last):
			return before, r, hasBefore
		}
	}
	return before, after, false
}

// benchPayload is the payload of the benchmark's schedules, and of its baseline's ticks.
const benchPayload = "x"

// warmUp is the number of schedules of the baseline's warm-up, written (and read by the consumer) before the
// baseline is timed: a topic created a moment ago takes a while to appear in metadata, and a broker started a
// moment ago runs its produce path interpreted until the JVM has compiled it (the first baseline after a start
// runs far slower than the next ones: docs/benchmarks.md, "Figures behind code comments").
const warmUp = 50_000

// fillBaseline writes what a leader writes for one slot of n schedules, n ticks to topic's partitions and n
// state records to stateTopic's partition 0, in transactions of 10,000 records (5,000 schedules, a leader's
// batch), and returns the time spent producing and committing them. One transaction's records are built
// before the clock starts and written again by every transaction, so that nothing but producing and committing
// happens between the first tick visible and the last: the consumer's view of the baseline is then the
// leader's slot without the leader's work.
//
// The records have the fields of the leader's for the benchmark's schedules (loadSchedules), with values of
// the same lengths: each tick its schedule's payload and version, the term's epoch, the transaction's emission
// instant and the slot's due instant; each state the fields of a leader's state.
func fillBaseline(ctx context.Context, base []kgo.Opt, topic, stateTopic string, n, parts int) (time.Duration, error) {
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.TransactionalID(fmt.Sprintf("tickbench-baseline-%d", time.Now().UnixNano())),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20),
	)...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	const perTxn = 5000
	slot := time.Now().Truncate(time.Second).Add(-24 * time.Hour)
	emitted := time.Now() // one instant for all, as a leader's transaction has
	recs := make([]*kgo.Record, 0, 2*min(n, perTxn))
	for i := range min(n, perTxn) {
		// A leader's version is its schedule record's offset: at a million schedules, about seven digits.
		src := tick.Source{Schedule: fmt.Sprintf("load-%07d", i), Payload: benchPayload, Version: int64(1_000_000 + i), LeaderEpoch: 1}
		tk := src.AppendSlot(nil, slot, slot, emitted)[0] // a leader's ticks carry their due instant, ahead or not
		v, err := tick.Encode(tk)
		if err != nil {
			return 0, err
		}
		st := leaderstate.EncodeState(leaderstate.State{LastSlot: slot, ScheduleVersion: src.Version, ProducerID: 1, LeaderEpoch: 1, EmittedAt: emitted})
		recs = append(recs,
			&kgo.Record{Topic: topic, Partition: tick.Partition(tk.Schedule, 0, parts), Key: []byte(tk.ID), Value: v},
			&kgo.Record{Topic: stateTopic, Partition: 0, Key: []byte(tk.Schedule), Value: st})
	}
	var took time.Duration
	for left := n; left > 0; left -= perTxn {
		txn := recs[:2*min(left, perTxn)]
		stamp := time.Now() // one timestamp a transaction, as a leader stamps its batch
		for _, r := range txn {
			r.Timestamp = stamp
		}
		start := time.Now()
		if err := transact(ctx, cl, txn); err != nil {
			return 0, fmt.Errorf("baseline: %w", err)
		}
		took += time.Since(start)
	}
	return took, nil
}

// arrivalConsumer reads a topic of ticks read_committed from its start and notes when each tick became
// visible. The leader's ticks and the raw baseline are read by the same code, so both figures carry its cost.
type arrivalConsumer struct {
	cl       *kgo.Client
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once

	mu   sync.Mutex
	list []arrival // in the order seen; safe to read without mu once stop has returned
}

func consumeArrivals(ctx context.Context, base []kgo.Opt, topic string) (*arrivalConsumer, error) {
	cl, err := kgo.NewClient(append(base[:len(base):len(base)],
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)...)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	c := &arrivalConsumer{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			fetches := cl.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			now := time.Now().UnixNano()
			c.mu.Lock()
			fetches.EachRecord(func(r *kgo.Record) {
				if a, ok := arrivalOf(r, now); ok {
					c.list = append(c.list, a)
				}
			})
			c.mu.Unlock()
		}
	}()
	return c, nil
}

// lastSeen is when the last tick was seen (the zero time before the first).
func (c *arrivalConsumer) lastSeen() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.list) == 0 {
		return time.Time{}
	}
	return time.Unix(0, c.list[len(c.list)-1].seen)
}

// count is the number of ticks seen so far.
func (c *arrivalConsumer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.list)
}

// await waits until n ticks were seen, for at most limit.
func (c *arrivalConsumer) await(ctx context.Context, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for c.count() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d records visible after %v", c.count(), n, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// span is the time from the first to the last visible of the ticks seen after the first skip.
func (c *arrivalConsumer) span(skip int) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := c.list[skip:]
	first := slices.MinFunc(seen, func(a, b arrival) int { return cmp.Compare(a.seen, b.seen) }).seen
	last := slices.MaxFunc(seen, func(a, b arrival) int { return cmp.Compare(a.seen, b.seen) }).seen
	return max(time.Duration(last-first), time.Millisecond)
}

// stop ends the consumer and waits for it; later calls return at once.
func (c *arrivalConsumer) stop() {
	c.stopOnce.Do(func() {
		c.cancel()
		<-c.done
		c.cl.Close()
	})
}

// arrival is one tick as the benchmark's consumer saw it.
type arrival struct {
	slot  int64 // Unix seconds
	seen  int64 // Unix nanoseconds
	epoch int32
	sched int32 // the N of load-N, -1 for another name
}

// arrivalOf reads a tick record seen at now. It reads the schedule and the slot from the key (the tick ID,
// name@slot) and the leader epoch from the value without decoding the tick: the benchmark's consumer shares
// the cores with the leader it measures.
func arrivalOf(r *kgo.Record, now int64) (arrival, bool) {
	name, at, ok := bytes.Cut(r.Key, []byte("@"))
	if !ok || bytes.ContainsAny(at, "~#") { // a trigger, or a shard of a sharded schedule: not this benchmark's
		return arrival{}, false
	}
	slot, err := time.Parse(time.RFC3339Nano, string(at))
	if err != nil {
		return arrival{}, false
	}
	a := arrival{slot: slot.Unix(), seen: now, sched: -1}
	if v, err := strconv.ParseInt(strings.TrimPrefix(string(name), "load-"), 10, 32); err == nil {
		a.sched = int32(v)
	}
	const field = `"leader_epoch":`
	if i := bytes.Index(r.Value, []byte(field)); i >= 0 {
		v := r.Value[i+len(field):]
		if j := bytes.IndexAny(v, ",}"); j > 0 {
			if e, err := strconv.ParseInt(string(v[:j]), 10, 32); err == nil {
				a.epoch = int32(e)
			}
		}
	}
	return a, true
}

func (a arrival) lag() time.Duration { return time.Duration(a.seen - a.slot*int64(time.Second)) }

// quantiles formats p50, p99 and max of ds (sorted in place).
func quantiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	slices.Sort(ds)
	q := func(p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	return fmt.Sprintf("p50 %v  p99 %v  max %v", q(0.50).Round(time.Millisecond), q(0.99).Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
}

// reportTakeover prints the takeover's figures: the time from the SIGKILL to the first tick of the new term,
// the new leader's state rebuild (its log), the lag of the slots around the kill, and every slot missing or
// doubled (a gap in a schedule's slots between its first and last seen, or a slot seen twice).
func reportTakeover(w io.Writer, arrivals []arrival, killedAt time.Time, standby *tickerProc, standbyRSS, takeoverRSS float64, every time.Duration) {
	if killedAt.IsZero() {
		fmt.Fprintln(w, "takeover: the leader was never killed (the standby was not ready before the run ended)")
		return
	}
	var oldEpoch int32
	kill := killedAt.UnixNano()
	for _, a := range arrivals {
		if a.seen < kill {
			oldEpoch = max(oldEpoch, a.epoch)
		}
	}
	var first int64
	for _, a := range arrivals {
		if a.epoch > oldEpoch && (first == 0 || a.seen < first) {
			first = a.seen
		}
	}
	takeover := time.Duration(first - kill)
	if first == 0 {
		takeover = -1
	}
	// The slots around the kill: from 10 s before it to 10 s after the new term's first tick.
	var around []time.Duration
	lo, hi := kill/int64(time.Second)-10, (max(first, kill)/int64(time.Second))+10
	for _, a := range arrivals {
		if a.slot >= lo && a.slot <= hi {
			around = append(around, a.lag())
		}
	}
	missing, doubled, schedules := gaps(arrivals, every)
	fmt.Fprintf(w, "takeover: kill -> first tick of the new term (epoch > %d) visible: %v; new leader's term start: %s\n",
		oldEpoch, takeover.Round(time.Millisecond), standby.termStart())
	fmt.Fprintf(w, "takeover: lag of the %d ticks of the slots around it (slot -> visible): %s\n", len(around), quantiles(around))
	fmt.Fprintf(w, "takeover: %d slots missing, %d doubled, over %d schedules\n", missing, doubled, schedules)
	fmt.Fprintf(w, "takeover: standby peak RSS %.0f MiB while it waited; peak RSS %.0f MiB as the new leader\n", standbyRSS/(1<<20), takeoverRSS/(1<<20))
}

// gaps counts, per schedule, the slots missing between its first and last slot seen and the slots seen twice.
func gaps(arrivals []arrival, every time.Duration) (missing, doubled, schedules int) {
	type span struct {
		min, max int64
		n        int
	}
	seen := make(map[uint64]uint8, len(arrivals))
	spans := map[int32]*span{}
	for _, a := range arrivals {
		k := uint64(uint32(a.sched))<<32 | uint64(uint32(a.slot))
		if seen[k]++; seen[k] > 1 {
			doubled++
			continue
		}
		sp, ok := spans[a.sched]
		if !ok {
			sp = &span{min: a.slot, max: a.slot}
			spans[a.sched] = sp
		}
		sp.min, sp.max = min(sp.min, a.slot), max(sp.max, a.slot)
		sp.n++
	}
	step := int64(max(every/time.Second, 1))
	for _, sp := range spans {
		missing += int((sp.max-sp.min)/step+1) - sp.n
	}
	return missing, doubled, len(spans)
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
		spec := schedule.Spec{Name: fmt.Sprintf("load-%07d", i), Every: schedule.Duration(every), Payload: benchPayload}
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
	_ = os.WriteFile(path, b, 0o600)
}

// copyShares copies the schedules written into their shares (package shares), and says how long it took.
func copyShares(ctx context.Context, ns *benchNamespace, leaders int, stdout io.Writer) error {
	c, err := shares.New(shares.Config{Names: ns.names, Leaders: leaders}, ns.opts, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := c.CatchUp(ctx); err != nil {
		return fmt.Errorf("copying the schedule shares: %w", err)
	}
	fmt.Fprintf(stdout, "schedule shares: copied in %v (leader 0's copier, at a namespace's move to the shares)\n", time.Since(start).Round(time.Millisecond))
	return nil
}

// tickerEnv is the environment of the ticker processes: this process's, with --memory-limit as GOMEMLIMIT.
func (o emitOptions) tickerEnv() []string {
	if o.memoryLimit == "" {
		return nil
	}
	return append(os.Environ(), "GOMEMLIMIT="+o.memoryLimit)
}

// memoryLimitRE is what the Go runtime takes as GOMEMLIMIT, less "off".
var memoryLimitRE = regexp.MustCompile(`^[0-9]+(B|KiB|MiB|GiB|TiB)?$`)
