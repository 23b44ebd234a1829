package failbench

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// SoakConfig is a soak: the whole system for Duration under random faults of every kind, and a count of what
// became of every slot.
type SoakConfig struct {
	Brokers []string
	// Bin holds the ticker and worker binaries.
	Bin string
	// Duration is how long the schedules run (default 30m); Schedules how many (default 300), with intervals
	// from 1s to 1m, every tenth a long job (a slow* schedule, every 10s to 1m), every third in the second pool.
	Duration  time.Duration
	Schedules int
	// ExecCommand is the workers' handler: it must take about 4 s for slow* schedules (their TICK_SCHEDULE)
	// and little for the others.
	ExecCommand string
	// FaultMin and FaultMax bound the time between two faults (default 20s and 60s); StopMin and StopMax how
	// long a SIGSTOP lasts (default 10s and 20s); RestartAfter how long after a kill or SIGTERM its process
	// starts again (default 3s).
	FaultMin, FaultMax, StopMin, StopMax, RestartAfter time.Duration
	// BrokerRestart, when set, is the command that restarts the broker (on the same data); it runs
	// BrokerRestarts times (default 2), spread over the run.
	BrokerRestart  []string
	BrokerRestarts int
	// Settle bounds the wait, after the run, for every slot's outcome (default 2m).
	Settle time.Duration
	// Seed makes the faults' draw repeatable (0: a random seed, reported).
	Seed   uint64
	LogDir string
	Keep   bool
}

// SoakResult is what became of every slot of a soak.
type SoakResult struct {
	Namespace string    `json:"namespace"`
	Seed      uint64    `json:"seed"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Schedules int       `json:"schedules"`
	Faults    []Fault   `json:"faults"`
	Settled   bool      `json:"settled"`
	// Counts are ticker audit's, over the run's slots (Pending: still without an outcome when the settle ended).
	audit.Counts `json:"counts"`
	// P50, P99 and Max are slot -> first start over every tick that ran, in milliseconds; Worst the five
	// schedules with the latest p99 start.
	P50     float64         `json:"p50_ms"`
	P99     float64         `json:"p99_ms"`
	Max     float64         `json:"max_ms"`
	Worst   []ScheduleDelay `json:"worst_schedules"`
	Memory  []MemoryFigure  `json:"memory"`
	Crashes []string        `json:"crashes,omitempty"`
	// OK is false when a slot is missing or pending, a tick was doubled or ran twice unmarked, or a process
	// crashed.
	OK bool `json:"ok"`
}

// ScheduleDelay is one schedule's slot -> first start.
type ScheduleDelay struct {
	Schedule string  `json:"schedule"`
	Ticks    int     `json:"ticks"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
}

// MemoryFigure is one role's resident memory over the run: its processes' largest and, at the first and the last
// sample, their sum.
type MemoryFigure struct {
	Role     string  `json:"role"`
	MaxMB    float64 `json:"max_mb"`
	FirstMB  float64 `json:"first_mb"`
	LastMB   float64 `json:"last_mb"`
	Samples  int     `json:"samples"`
	Sampling string  `json:"sampling"`
}

func (c SoakConfig) withDefaults() SoakConfig {
	c.Bin = cmp.Or(c.Bin, "./bin")
	c.Duration = cmp.Or(c.Duration, 30*time.Minute)
	c.Schedules = cmp.Or(c.Schedules, 300)
	c.FaultMin, c.FaultMax = cmp.Or(c.FaultMin, 20*time.Second), cmp.Or(c.FaultMax, 60*time.Second)
	c.StopMin, c.StopMax = cmp.Or(c.StopMin, 10*time.Second), cmp.Or(c.StopMax, 20*time.Second)
	c.RestartAfter = cmp.Or(c.RestartAfter, 3*time.Second)
	c.BrokerRestarts = cmp.Or(c.BrokerRestarts, 2)
	c.Settle = cmp.Or(c.Settle, 2*time.Minute)
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	return c
}

// soakPool is the second pool of a soak: the third host's worker serves it.
const soakPool = "soak2"

var soakIntervals = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second, time.Minute}

// Soak runs cfg: 3 hosts (a ticker and a worker each; the third worker serves a second pool), cfg.Schedules
// schedules, and at random every FaultMin-FaultMax one fault of a random process: kill -9 (started again
// RestartAfter later), SIGSTOP for StopMin-StopMax, or SIGTERM (started again); and BrokerRestart, spread over the
// run. Then it waits for every slot's outcome and counts, as ticker audit does, every slot: missing, doubled, run
// twice unmarked, marked re-runs; the start delays; and the processes' memory, sampled every 10 s.
func Soak(ctx context.Context, cfg SoakConfig, logger *slog.Logger) (SoakResult, error) {
	cfg = cfg.withDefaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x5eed))
	ns := fmt.Sprintf("soak-%d", time.Now().UnixNano())
	res := SoakResult{Namespace: ns, Seed: cfg.Seed, Schedules: cfg.Schedules}
	kcfg := kafka.Config{Brokers: cfg.Brokers, Namespace: ns, ClientID: "tickbench-soak"}
	opts, err := kcfg.Opts(nil)
	if err != nil {
		return res, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := kcfg.Names()
	if err := kafka.EnsureTopics(ctx, adm, names, kafka.TopicOptions{WorkPartitions: 12}); err != nil {
		return res, fmt.Errorf("creating the namespace's topics: %w", err)
	}
	if _, err := kafka.EnsurePoolTopics(ctx, adm, names.Pool(soakPool), kafka.TopicOptions{WorkPartitions: 12}); err != nil {
		return res, fmt.Errorf("creating pool %s's topics: %w", soakPool, err)
	}
	fcfg := Config{Brokers: cfg.Brokers, Bin: cfg.Bin, Hosts: 3, Handler: HandlerExec, ExecCommand: cfg.ExecCommand, LogDir: cfg.LogDir,
		WorkerPools: []string{"", "", soakPool}, Ready: 60 * time.Second}.withDefaults()
	f := newFleet(fcfg, ns, "", logger)
	defer f.killAll()
	if err := f.startAll(); err != nil {
		return res, err
	}
	if err := f.waitReady(ctx, fcfg.Ready); err != nil {
		return res, err
	}

	from, to := soakWindow(cfg.Duration)
	res.From, res.To = from, to
	scheds, err := writeSoakSchedules(ctx, cl, names.Schedules, cfg.Schedules, from, to)
	if err != nil {
		return res, err
	}
	logger.Info("soak: schedules written", "namespace", ns, "schedules", cfg.Schedules, "from", from.Format(time.TimeOnly), "to", to.Format(time.TimeOnly), "seed", cfg.Seed)

	mem := newMemory()
	sctx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	sampling.Go(func() { mem.sample(sctx, f, 10*time.Second) })
	defer func() { stopSampling(); sampling.Wait() }()

	res.Faults, err = soakFaults(ctx, f, cfg, rng, from, logger)
	if err != nil {
		return res, err
	}

	expected := Expected(scheds)
	window := Window{From: from, To: to}
	l, settled, err := settle(ctx, opts, names, expected, window, cfg.Settle)
	if err != nil {
		return res, err
	}
	res.Settled = settled
	rep := audit.Compare(l, audit.Options{From: from, To: to, Now: time.Now(), Grace: time.Second, Lead: audit.DefaultLead})
	res.Counts = rep.Totals
	res.P50, res.P99, res.Max, res.Worst = delays(l, expected, window)
	stopSampling()
	sampling.Wait()
	res.Memory = mem.figures()
	for _, p := range f.crashes() {
		res.Crashes = append(res.Crashes, p.Name)
	}
	f.stop(15 * time.Second)
	res.OK = res.Missing == 0 && res.Pending == 0 && res.Doubled == 0 && res.RanTwice == 0 && len(res.Crashes) == 0 && res.Expected > 0
	if !cfg.Keep {
		deleteSoakNamespace(ctx, adm, names)
	}
	logger.Info("soak done", "expected", res.Expected, "missing", res.Missing, "pending", res.Pending, "doubled", res.Doubled,
		"ran_twice", res.RanTwice, "marked_re_run", res.MarkedReRun, "faults", len(res.Faults), "ok", res.OK)
	return res, nil
}

// soakWindow returns the soak's slots, from the first whole minute at least 5 s from now (or half-minute, when
// that is over 50 s off) to d later: whole minutes, so every interval has its first slot.
func soakWindow(d time.Duration) (from, to time.Time) {
	from = time.Now().Add(5 * time.Second).Truncate(time.Minute).Add(time.Minute)
	if time.Until(from) > 50*time.Second {
		from = from.Add(-30 * time.Second).Truncate(30 * time.Second)
	}
	return from, from.Add(d - time.Second)
}

// writeSoakSchedules writes n schedules from from to to, on the soak's intervals in turn, every tenth a slow job
// and every third in the second pool, and returns them compiled.
func writeSoakSchedules(ctx context.Context, cl *kgo.Client, topic string, n int, from, to time.Time) ([]*schedule.Schedule, error) {
	var scheds []*schedule.Schedule
	for i := range n {
		name, every := fmt.Sprintf("soak-%03d", i), soakIntervals[i%len(soakIntervals)]
		if i%10 == 9 {
			// A long job (ExecCommand: 4 s), on an interval that it fits in: every run is expected to run.
			name, every = fmt.Sprintf("slow-%03d", i), soakIntervals[3+i%(len(soakIntervals)-3)]
		}
		spec := schedule.Spec{Name: name, Every: schedule.Duration(every), Catchup: schedule.CatchupAll,
			Start: &from, End: &to, Overlap: "queue"}
		if i%3 == 2 {
			spec.Pool = soakPool
		}
		s, err := spec.Compile()
		if err != nil {
			return nil, err
		}
		if _, err := store.Put(ctx, cl, topic, spec); err != nil {
			return nil, err
		}
		scheds = append(scheds, s)
	}
	return scheds, nil
}

// soakFaults injects the soak's faults from from to the end of the run: one fault of a random process every
// FaultMin-FaultMax, and the broker restarts spread evenly over the run. It returns when the run's time is up,
// with the faults injected (so far, on an error).
func soakFaults(ctx context.Context, f *fleet, cfg SoakConfig, rng *rand.Rand, from time.Time, logger *slog.Logger) ([]Fault, error) {
	var faults []Fault
	brokerAt := map[int]time.Time{}
	for i := 1; i <= cfg.BrokerRestarts && len(cfg.BrokerRestart) > 0; i++ {
		brokerAt[i] = from.Add(cfg.Duration * time.Duration(i) / time.Duration(cfg.BrokerRestarts+1))
	}
	end := from.Add(cfg.Duration)
	restarted := 0
	for next := from.Add(jitter(rng, cfg.FaultMin, cfg.FaultMax)); next.Before(end.Add(-cfg.FaultMin)); next = next.Add(jitter(rng, cfg.FaultMin, cfg.FaultMax)) {
		if at, ok := brokerAt[restarted+1]; ok && !at.After(next) {
			if !sleep(ctx, time.Until(at)) {
				return faults, ctx.Err()
			}
			faults = append(faults, restartBroker(ctx, cfg.BrokerRestart, logger))
			restarted++
		}
		if !sleep(ctx, time.Until(next)) {
			return faults, ctx.Err()
		}
		fault, err := soakFault(ctx, f, cfg, rng)
		if err != nil {
			return faults, err
		}
		faults = append(faults, fault)
	}
	for ; restarted < len(brokerAt); restarted++ {
		if !sleep(ctx, time.Until(brokerAt[restarted+1])) {
			return faults, ctx.Err()
		}
		faults = append(faults, restartBroker(ctx, cfg.BrokerRestart, logger))
	}
	if !sleep(ctx, time.Until(end)) {
		return faults, ctx.Err()
	}
	return faults, nil
}

// deleteSoakNamespace deletes the soak's groups and topics, both pools', within 30 s, even after ctx ends.
func deleteSoakNamespace(ctx context.Context, adm *kadm.Client, names kafka.Names) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	pool := names.Pool(soakPool)
	_, _ = adm.DeleteGroups(cctx, names.TickerGroup, names.WorkerGroup, pool.WorkerGroup)
	_, _ = adm.DeleteTopics(cctx, names.Ticker, names.Schedules, names.Work, names.Results, names.DLQ, names.Clock, names.Changes,
		names.Backfills, names.BackfillProgress, pool.Work, pool.Results, pool.DLQ)
}

func jitter(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// soakFault applies one random fault to one random process of f.
func soakFault(ctx context.Context, f *fleet, cfg SoakConfig, rng *rand.Rand) (Fault, error) {
	h := f.hosts[rng.IntN(len(f.hosts))]
	role := []string{"ticker", "worker"}[rng.IntN(2)]
	p := h.ticker
	if role == "worker" {
		p = h.worker
	}
	at := time.Now()
	if p == nil || !p.Running() {
		return Fault{At: at, Action: "none: " + role + " of h" + strconv.Itoa(h.n) + " not running"}, nil
	}
	var fault Fault
	switch rng.IntN(3) {
	case 0:
		fault = Fault{At: at, Action: "kill -9 " + p.Name}
		f.kill(p)
		if !sleep(ctx, cfg.RestartAfter) {
			return fault, ctx.Err()
		}
		if err := f.start(h, role); err != nil {
			return fault, err
		}
	case 1:
		d := jitter(rng, cfg.StopMin, cfg.StopMax)
		fault = Fault{At: at, Action: fmt.Sprintf("SIGSTOP %s for %s", p.Name, d.Round(time.Second))}
		_ = p.Signal(syscall.SIGSTOP)
		if !sleep(ctx, d) {
			_ = p.Signal(syscall.SIGCONT)
			return fault, ctx.Err()
		}
		_ = p.Signal(syscall.SIGCONT)
	default:
		fault = Fault{At: at, Action: "SIGTERM " + p.Name}
		_ = p.Signal(syscall.SIGTERM)
		if !p.Wait(45 * time.Second) {
			f.logger.Warn("no exit 45s after SIGTERM: killing", "process", p.Name)
			f.kill(p)
		}
		if !sleep(ctx, cfg.RestartAfter) {
			return fault, ctx.Err()
		}
		if err := f.start(h, role); err != nil {
			return fault, err
		}
	}
	f.logger.Info("soak: fault", "action", fault.Action)
	return fault, nil
}

// restartBroker runs the broker's restart command.
func restartBroker(ctx context.Context, argv []string, logger *slog.Logger) Fault {
	at := time.Now()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.CombinedOutput()
	action := "broker restart (" + time.Since(at).Round(time.Second).String() + ")"
	if err != nil {
		action = fmt.Sprintf("broker restart failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	logger.Info("soak: fault", "action", action)
	return Fault{At: at, Action: action}
}

// delays returns slot -> first start over the expected ticks that ran (p50, p99, max in ms) and the five
// schedules with the latest p99.
func delays(l *audit.Log, expected map[string]time.Time, w Window) (p50, p99, mx float64, worst []ScheduleDelay) {
	var all []time.Duration
	per := map[string][]time.Duration{}
	for id, slot := range expected {
		if !w.holds(slot) {
			continue
		}
		t := l.Ticks[id]
		if t == nil {
			continue
		}
		first, runs, _ := starts(t, slot)
		if runs == 0 || first.IsZero() {
			continue
		}
		d := first.Sub(slot)
		all = append(all, d)
		per[t.Schedule] = append(per[t.Schedule], d)
	}
	p50, p99, mx = quantiles(all)
	for name, ds := range per {
		slices.Sort(ds)
		worst = append(worst, ScheduleDelay{Schedule: name, Ticks: len(ds), P99: ms(Quantile(ds, 0.99)), Max: ms(ds[len(ds)-1])})
	}
	slices.SortFunc(worst, func(a, b ScheduleDelay) int { return cmp.Compare(b.P99, a.P99) })
	return p50, p99, mx, worst[:min(len(worst), 5)]
}

// memory samples the resident memory of a fleet's processes.
type memory struct {
	mu      sync.Mutex
	samples map[string][]float64 // role -> per sample, the role's largest process (MB)
	sums    map[string][]float64 // role -> per sample, the sum over its processes (MB)
}

func newMemory() *memory {
	return &memory{samples: map[string][]float64{}, sums: map[string][]float64{}}
}

func (m *memory) sample(ctx context.Context, f *fleet, every time.Duration) {
	for {
		largest, sum := map[string]float64{}, map[string]float64{}
		for _, p := range f.live() {
			role := "worker"
			if strings.Contains(p.Name, "-ticker-") {
				role = "ticker"
			}
			mb, err := rssMB(p.Pid())
			if err != nil {
				continue
			}
			largest[role] = max(largest[role], mb)
			sum[role] += mb
		}
		m.mu.Lock()
		for role, mb := range largest {
			m.samples[role] = append(m.samples[role], mb)
			m.sums[role] = append(m.sums[role], sum[role])
		}
		m.mu.Unlock()
		if !sleep(ctx, every) {
			return
		}
	}
}

func (m *memory) figures() []MemoryFigure {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []MemoryFigure
	for _, role := range []string{"ticker", "worker"} {
		s, sums := m.samples[role], m.sums[role]
		if len(s) == 0 {
			continue
		}
		out = append(out, MemoryFigure{Role: role, MaxMB: slices.Max(s), FirstMB: sums[0], LastMB: sums[len(sums)-1], Samples: len(s), Sampling: "10s"})
	}
	return out
}

// rssMB reads a process's resident memory (VmRSS) from /proc.
func rssMB(pid int) (float64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, errors.New("no VmRSS")
}
