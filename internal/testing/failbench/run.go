package failbench

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// Result is one run's measurement.
type Result struct {
	Mode      string    `json:"mode"`
	Handler   string    `json:"handler"`
	Run       int       `json:"run"`
	Hosts     int       `json:"hosts"`
	Namespace string    `json:"namespace"`
	From      time.Time `json:"from"` // the window's first slot
	To        time.Time `json:"to"`   // the window's last slot
	// WarmupS is how long the schedules ran before From, in seconds.
	WarmupS float64 `json:"warmup_s"`
	Faults  []Fault `json:"faults"`
	// Ledger is the figure from the results topic: authoritative, it survives kill -9.
	Ledger Figures `json:"ledger"`
	// Histogram is the workers' own tickgroup_worker_start_delay_seconds, summed over every worker process.
	Histogram HistogramFigures `json:"histogram"`
	// Crashes names the processes that exited without being signalled.
	Crashes []string `json:"crashes,omitempty"`
	// Settled is false when some expected tick still had no outcome when Settle ran out.
	Settled bool `json:"settled"`
}

// Fault is one injected fault.
type Fault struct {
	At     time.Time `json:"at"`
	Action string    `json:"action"` // "kill -9 h2-ticker-1", ...
}

// HistogramFigures are the workers' histogram's count and quantiles (Prometheus' histogram_quantile
// interpolation), in milliseconds.
type HistogramFigures struct {
	Count float64 `json:"count"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	// Scraped and Lost count the worker processes whose histogram was collected, and those whose was not.
	Scraped int `json:"scraped"`
	Lost    int `json:"lost"`
}

// Run runs cfg.Runs runs one after the other and returns the result of each that completed. logger reports
// progress.
func Run(ctx context.Context, cfg Config, logger *slog.Logger) ([]Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	var out []Result
	for i := 1; i <= cfg.Runs; i++ {
		r, err := runOnce(ctx, cfg, i, logger.With("run", i))
		if err != nil {
			return out, fmt.Errorf("run %d: %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func runOnce(ctx context.Context, cfg Config, run int, logger *slog.Logger) (res Result, err error) {
	ns := fmt.Sprintf("failbench-%d", time.Now().UnixNano())
	kcfg := kafka.Config{Brokers: cfg.Brokers, Namespace: ns, ClientID: "tickbench-failover"}
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
	forward := ns + ".fwd"
	defer func() {
		if cfg.Keep {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_, _ = adm.DeleteGroups(cctx, names.TickerGroup, names.WorkerGroup)
		_, _ = adm.DeleteTopics(cctx, names.Ticker, names.Schedules, names.Work, names.Results, names.DLQ, forward)
	}()
	if err := kafka.EnsureTopics(ctx, adm, names, kafka.TopicOptions{WorkPartitions: int32(cfg.Partitions)}); err != nil {
		return res, fmt.Errorf("creating the namespace's topics: %w", err)
	}
	if cfg.Handler == HandlerForward {
		if _, err := adm.CreateTopic(ctx, int32(cfg.Partitions), -1, nil, forward); err != nil {
			return res, fmt.Errorf("creating %s: %w", forward, err)
		}
	}

	f := newFleet(cfg, ns, forward, logger)
	defer f.killAll() // every path out, an error or a cancelled context included
	logger.Info("starting the fleet", "namespace", ns, "hosts", cfg.Hosts, "handler", cfg.Handler, "logs", cfg.LogDir)
	if err := f.startAll(); err != nil {
		return res, err
	}
	if err := f.waitReady(ctx, cfg.Ready); err != nil {
		return res, err
	}

	// The schedules live from Warmup before the window to its end; the window starts a little ahead, so the
	// leader has read them before their first slot.
	from := time.Now().Add(2*time.Second + cfg.Warmup).Truncate(cfg.ScheduleEvery).Add(cfg.ScheduleEvery)
	to := from.Add(cfg.Duration - cfg.ScheduleEvery)
	scheds, err := putSchedules(ctx, cl, names.Schedules, cfg, from.Add(-cfg.Warmup), to)
	if err != nil {
		return res, err
	}
	res = Result{Mode: cfg.Mode, Handler: cfg.Handler, Run: run, Hosts: cfg.Hosts, Namespace: ns, From: from, To: to, WarmupS: cfg.Warmup.Seconds()}
	logger.Info("schedules written", "schedules", cfg.Schedules, "every", cfg.ScheduleEvery, "warmup", cfg.Warmup,
		"from", from.Format(time.TimeOnly), "to", to.Format(time.TimeOnly), "mode", cfg.Mode)
	// The histograms' baseline: just before the window's first slot, after the warm-up's last start.
	if !sleep(ctx, time.Until(from.Add(-200*time.Millisecond))) {
		return res, ctx.Err()
	}
	if err := f.baseline(ctx); err != nil {
		return res, err
	}
	if err := f.crashed(); err != nil {
		return res, err
	}

	end := from.Add(cfg.Duration)
	if cfg.Mode != ModeNone {
		for at := from.Add(cfg.Every); at.Before(end); at = at.Add(cfg.Every) {
			if !sleep(ctx, time.Until(at)) {
				return res, ctx.Err()
			}
			fault, err := inject(ctx, f, cfg)
			if err != nil {
				return res, err
			}
			res.Faults = append(res.Faults, fault)
		}
	}
	if !sleep(ctx, time.Until(end)) {
		return res, ctx.Err()
	}

	expected := Expected(scheds)
	window := Window{From: from, To: to}
	schedNames := map[string]bool{}
	for _, s := range scheds {
		schedNames[s.Spec().Name] = true
	}
	l, settled, err := settle(ctx, opts, names, expected, window, cfg.Settle)
	if err != nil {
		return res, err
	}
	res.Settled = settled
	res.Ledger = Measure(l, expected, window, schedNames, cfg.LateBound)

	for _, h := range f.hosts {
		if h.worker != nil && h.worker.Running() {
			f.collect(ctx, h.worker)
		}
	}
	res.Histogram = HistogramFigures{Count: f.hist.Total(), P50: nanToZero(f.hist.Quantile(0.5)) * 1000,
		P99: nanToZero(f.hist.Quantile(0.99)) * 1000, Scraped: f.scraped, Lost: f.unscraped}
	for _, p := range f.crashes() {
		res.Crashes = append(res.Crashes, p.Name)
	}
	f.stop(10 * time.Second)
	logger.Info("run done", "expected", res.Ledger.Expected, "missing", res.Ledger.Missing, "doubled", res.Ledger.Doubled, "re_run", res.Ledger.ReRun,
		"p50_ms", res.Ledger.P50, "p99_ms", res.Ledger.P99, "max_ms", res.Ledger.Max)
	return res, nil
}

func nanToZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// putSchedules writes cfg.Schedules interval schedules with catch-up all, living from from to to (inclusive).
func putSchedules(ctx context.Context, cl *kgo.Client, topic string, cfg Config, from, to time.Time) ([]*schedule.Schedule, error) {
	var out []*schedule.Schedule
	for i := range cfg.Schedules {
		name := "fb"
		if cfg.Schedules > 1 {
			name = fmt.Sprintf("fb-%d", i)
		}
		start, stop := from.UTC(), to.UTC()
		spec := schedule.Spec{Name: name, Every: schedule.Duration(cfg.ScheduleEvery), Catchup: schedule.CatchupAll, Start: &start, End: &stop}
		s, err := spec.Compile()
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", name, err)
		}
		if _, err := store.Put(ctx, cl, topic, spec); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// inject finds the leading ticker and applies the fault of cfg.Mode to it (or its host), then, RestartAfter
// later, starts the victims again with the same instance IDs.
func inject(ctx context.Context, f *fleet, cfg Config) (Fault, error) {
	h, err := f.leader(ctx, 10*time.Second)
	if err != nil {
		if ctx.Err() != nil {
			return Fault{}, ctx.Err()
		}
		f.logger.Warn("no fault injected", "error", err)
		return Fault{At: time.Now(), Action: "none: " + err.Error()}, nil
	}
	at := time.Now()
	var fault Fault
	roles := []string{"ticker"}
	switch cfg.Mode {
	case ModeKillLeader:
		fault = Fault{At: at, Action: "kill -9 " + h.ticker.Name}
		f.kill(h.ticker)
	case ModeKillHost:
		fault = Fault{At: at, Action: fmt.Sprintf("kill -9 %s and %s", h.ticker.Name, h.worker.Name)}
		if h.worker.Running() {
			f.collect(ctx, h.worker) // its histogram dies with it
		}
		_ = h.ticker.Signal(syscall.SIGKILL)
		_ = h.worker.Signal(syscall.SIGKILL)
		<-h.ticker.Done()
		<-h.worker.Done()
		roles = append(roles, "worker")
	case ModeGraceful:
		fault = Fault{At: at, Action: "SIGTERM " + h.ticker.Name}
		_ = h.ticker.Signal(syscall.SIGTERM)
	}
	f.logger.Info("fault", "action", fault.Action)
	if !sleep(ctx, time.Until(at.Add(cfg.RestartAfter))) {
		return fault, ctx.Err()
	}
	if cfg.Mode == ModeGraceful && !h.ticker.Wait(30*time.Second) {
		f.logger.Warn("no exit 30s after SIGTERM: killing", "process", h.ticker.Name)
		f.kill(h.ticker)
	}
	for _, role := range roles {
		if err := f.start(h, role); err != nil {
			return fault, err
		}
	}
	return fault, f.crashed()
}

// settle reads the namespace's topics until every expected tick has an outcome, or d has passed since the
// first read, and returns the last read and whether every tick had one.
func settle(ctx context.Context, opts []kgo.Opt, names kafka.Names, expected map[string]time.Time, w Window, d time.Duration) (*audit.Log, bool, error) {
	deadline := time.Now().Add(d)
	for {
		l, err := audit.Read(ctx, opts, names)
		if err != nil {
			return nil, false, fmt.Errorf("reading the namespace's topics: %w", err)
		}
		if finished(l, expected, w) {
			return l, true, nil
		}
		if time.Now().After(deadline) {
			return l, false, nil
		}
		if !sleep(ctx, time.Second) {
			return nil, false, ctx.Err()
		}
	}
}

func finished(l *audit.Log, expected map[string]time.Time, w Window) bool {
	for id, slot := range expected {
		if !w.holds(slot) {
			continue
		}
		t := l.Ticks[id]
		if t == nil {
			return false
		}
		done := false
		for _, e := range t.Ledger {
			if e.Kind == ledger.KindOutcome {
				done = true
			}
		}
		if !done {
			return false
		}
	}
	return true
}
