package failbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/child"
)

// proc is one start of a ticker or worker binary. An exit it did not cause by a signal is a crash.
type proc struct {
	*child.Process        // its Name: "h1-ticker-2", host, role and start number
	addr           string // its --metrics-addr
	logPath        string
	// baseline is a worker's histogram at the window's start (empty for one started later).
	baseline Histogram
}

func (p *proc) url(path string) string { return "http://" + p.addr + path }

// host is one ticker and one worker with a shared, stable instance ID.
type host struct {
	n              int
	ticker, worker *proc
	starts         map[string]int // starts per role
}

func (h *host) instanceID() string { return fmt.Sprintf("failbench-h%d", h.n) }

// fleet is the processes of one run.
type fleet struct {
	cfg     Config
	ns      string
	forward string // the forward handler's topic
	logger  *slog.Logger
	hosts   []*host

	mu    sync.Mutex
	procs []*proc // every process ever started, for clean-up and the crash count

	hist               Histogram // summed over the worker processes scraped so far
	scraped, unscraped int       // worker processes whose histogram was (not) collected
}

func newFleet(cfg Config, ns, forward string, logger *slog.Logger) *fleet {
	f := &fleet{cfg: cfg, ns: ns, forward: forward, logger: logger}
	for i := range cfg.Hosts {
		f.hosts = append(f.hosts, &host{n: i + 1, starts: map[string]int{}})
	}
	return f
}

// start starts role ("ticker" or "worker") of h.
func (f *fleet) start(h *host, role string) error {
	h.starts[role]++
	name := fmt.Sprintf("h%d-%s-%d", h.n, role, h.starts[role])
	addr, err := child.FreeAddr()
	if err != nil {
		return err
	}
	args := []string{"run", "--brokers", strings.Join(f.cfg.Brokers, ","), "--namespace", f.ns, "--metrics-addr", addr}
	if f.cfg.GroupProtocol != "" {
		args = append(args, "--group-protocol", f.cfg.GroupProtocol)
	}
	if f.cfg.GroupProtocol != "consumer" && !f.cfg.Dynamic {
		args = append(args, "--instance-id", h.instanceID())
	}
	switch role {
	case "ticker":
		args = append(args, "--instance", fmt.Sprintf("h%d", h.n))
		args = append(args, f.cfg.TickerArgs...)
	default:
		// A worker ID per start: a restarted worker is another owner in the ledger.
		args = append(args, "--worker-id", name)
		if f.cfg.Handler == HandlerExec {
			args = append(args, "--exec", f.cfg.ExecCommand)
		} else {
			args = append(args, "--forward", f.forward)
		}
		if n := h.n - 1; n < len(f.cfg.WorkerPools) && f.cfg.WorkerPools[n] != "" {
			args = append(args, "--pool", f.cfg.WorkerPools[n])
		}
		args = append(args, f.cfg.WorkerArgs...)
	}
	logPath := filepath.Join(f.cfg.LogDir, f.ns+"-"+name+".log")
	out, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Not a group of its own: a kill -9 of the worker leaves its exec handlers to the worker's supervisor, as
	// on a host. The kernel kills what this tool started when it dies, even by kill -9.
	ps, err := child.Start(name, append([]string{filepath.Join(f.cfg.Bin, role)}, args...),
		child.Options{Output: out, ParentDeath: syscall.SIGKILL, Exited: func(error) { out.Close() }})
	if err != nil {
		out.Close()
		return err
	}
	p := &proc{Process: ps, addr: addr, logPath: logPath}
	f.procs = append(f.procs, p)
	if role == "ticker" {
		h.ticker = p
	} else {
		h.worker = p
	}
	f.logger.Debug("started", "process", name, "pid", ps.Pid(), "metrics", addr)
	return nil
}

// startAll starts every host's worker and ticker.
func (f *fleet) startAll() error {
	for _, h := range f.hosts {
		if err := f.start(h, "worker"); err != nil {
			return err
		}
		if err := f.start(h, "ticker"); err != nil {
			return err
		}
	}
	return nil
}

// live returns the running processes.
func (f *fleet) live() []*proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*proc
	for _, p := range f.procs {
		if p.Running() {
			out = append(out, p)
		}
	}
	return out
}

// waitReady waits until every running process answers /-/ready and exactly one ticker leads.
func (f *fleet) waitReady(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		ready := true
		for _, p := range f.live() {
			if !httpOK(ctx, p.url("/-/ready")) {
				ready = false
				break
			}
		}
		if ready {
			if _, n := f.leaders(ctx); n == 1 {
				return nil
			}
		}
		if err := f.crashed(); err != nil {
			return err
		}
		if !sleep(ctx, 200*time.Millisecond) {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("the fleet was not ready (every process ready, one leader) within %s", d)
			}
			return ctx.Err()
		}
	}
}

// crashed returns an error naming the processes that exited without being signalled.
func (f *fleet) crashed() error {
	var errs []error
	for _, p := range f.crashes() {
		if p.Err() == nil {
			errs = append(errs, fmt.Errorf("%s exited by itself (status 0); log: %s", p.Name, p.logPath))
			continue
		}
		errs = append(errs, fmt.Errorf("%s exited by itself (%w); log: %s", p.Name, p.Err(), p.logPath))
	}
	return errors.Join(errs...)
}

func (f *fleet) crashes() []*proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*proc
	for _, p := range f.procs {
		if !p.Running() && !p.Signalled() {
			out = append(out, p)
		}
	}
	return out
}

// leaders returns the host whose running ticker reports tickgroup_leader 1, and how many do.
func (f *fleet) leaders(ctx context.Context) (*host, int) {
	var found *host
	n := 0
	for _, h := range f.hosts {
		if h.ticker == nil || !h.ticker.Running() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		s, err := admin.Scrape(sctx, http.DefaultClient, h.ticker.url("/metrics"))
		cancel()
		if err != nil {
			continue
		}
		if v, ok := s.Get("tickgroup_leader"); ok && v == 1 {
			found = h
			n++
		}
	}
	return found, n
}

// leader waits up to d for exactly one ticker to lead and returns its host.
func (f *fleet) leader(ctx context.Context, d time.Duration) (*host, error) {
	deadline := time.Now().Add(d)
	for {
		h, n := f.leaders(ctx)
		if n == 1 {
			return h, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d tickers lead after %s of looking (want exactly one)", n, d)
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return nil, ctx.Err()
		}
	}
}

// baseline records every running worker's start-delay histogram: what collect later subtracts (the
// warm-up's ticks).
func (f *fleet) baseline(ctx context.Context) error {
	for _, h := range f.hosts {
		if h.worker == nil || !h.worker.Running() {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		b, err := scrapeHistogram(sctx, h.worker.url("/metrics"), StartDelayMetric)
		cancel()
		if err != nil {
			return fmt.Errorf("%s at the window's start: %w", h.worker.Name, err)
		}
		h.worker.baseline = b
	}
	return nil
}

// collect adds worker p's start-delay histogram, less its baseline, to the fleet's sum. Call it just before p
// is killed, and for every live worker at the end: a process's histogram dies with it.
func (f *fleet) collect(ctx context.Context, p *proc) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	h, err := scrapeHistogram(sctx, p.url("/metrics"), StartDelayMetric)
	if err != nil {
		f.unscraped++
		f.logger.Warn("worker histogram lost", "process", p.Name, "error", err)
		return
	}
	f.hist = f.hist.Add(h.Sub(p.baseline))
	f.scraped++
}

// kill kill -9s p and waits until it is gone.
func (f *fleet) kill(p *proc) {
	if p == nil || !p.Running() {
		return
	}
	_ = p.Signal(syscall.SIGKILL)
	<-p.Done()
}

// stop SIGTERMs every running process, waits up to grace for them to exit and kill -9s the rest.
func (f *fleet) stop(grace time.Duration) {
	live := f.live()
	for _, p := range live {
		_ = p.Signal(syscall.SIGCONT) // harmless when running; wakes a stopped one so it can exit
		_ = p.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for _, p := range live {
		if !p.Wait(time.Until(deadline)) {
			f.logger.Warn("no exit after SIGTERM: killing", "process", p.Name, "grace", grace)
			f.kill(p)
		}
	}
}

// killAll kill -9s every running process and waits for each: the clean-up on every path out of a run.
func (f *fleet) killAll() {
	for _, p := range f.live() {
		f.kill(p)
	}
}

func httpOK(ctx context.Context, url string) bool {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// sleep waits d or until ctx ends, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
