package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tickgroup/tickgroup/internal/child"
)

// demoSchedules is written to <data-dir>/schedules.yaml and applied on every start (without --prune, so
// schedules added with `ticker schedule put` stay).
const demoSchedules = `# The demo schedules of 'make run', applied by tickgroup-dev on every start.
# Add your own with: ticker schedule put NAME --every 3s --brokers ... --namespace ...
schedules:
  - name: demo-beat
    every: 2s
  - name: demo-shards
    every: 5s
    shards: 2
  - name: demo-cron
    cron: "*/10 * * * * *"
    tz: Europe/Berlin
`

// fleet is everything that runs on the development broker: the setup commands, the ticker replicas, the
// workers, the leader watch, the automatic handoffs and the view of the work and results topics.
type fleet struct {
	cfg     config
	brokers string
	scr     *screen
	logger  *slog.Logger
}

// Run sets up the namespace, starts the children and the view, and runs until ctx ends; then it stops the
// children (each within stopTimeout) and returns.
func (f *fleet) Run(ctx context.Context) error {
	if err := f.setup(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	addrs, err := freeAddrs(numTickers + numWorkers)
	if err != nil {
		return err
	}
	logDir := filepath.Join(f.cfg.dataDir, "logs")
	var tickers, workers []*proc
	for i := range numWorkers {
		name := fmt.Sprintf("worker-%d", i+1)
		addr := addrs[numTickers+i]
		workers = append(workers, newProc(name, []string{
			filepath.Join(f.cfg.binDir, "worker"), "run",
			"--brokers", f.brokers, "--namespace", f.cfg.namespace,
			"--worker-id", name, "--metrics-addr", addr,
			"--exec", f.cfg.exec,
			// Within stopTimeout, so that a Ctrl-C never has to kill a worker.
			"--grace", "5s",
		}, filepath.Join(logDir, name+".log"), addr, f.scr))
	}
	for i := range numTickers {
		name := fmt.Sprintf("ticker-%d", i+1)
		tickers = append(tickers, newProc(name, []string{
			filepath.Join(f.cfg.binDir, "ticker"), "run",
			"--brokers", f.brokers, "--namespace", f.cfg.namespace,
			"--instance", name, "--metrics-addr", addrs[i],
			// A fast failover for the demo; the broker accepts session timeouts down to 1s.
			"--session-timeout", "3s", "--heartbeat-interval", "500ms",
		}, filepath.Join(logDir, name+".log"), addrs[i], f.scr))
	}

	v, err := newView(f.cfg, f.brokers, f.scr, f.logger, newLeaderWatch(tickers, f.cfg.namespace, f.scr))
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return v.Run(gctx) })

	// Workers first: a brand-new worker group starts at the end of the work topic, so ticks emitted before the
	// workers joined would never run in the demo.
	for _, w := range workers {
		g.Go(func() error { return w.Run(gctx) })
		f.scr.event("START", colorDim, "%-8s  metrics http://%s/metrics  log %s", w.name, w.metricsAddr, w.logPath)
	}
	f.waitReady(gctx, workers)
	for _, t := range tickers {
		g.Go(func() error { return t.Run(gctx) })
		f.scr.event("START", colorDim, "%-8s  metrics http://%s/metrics  log %s", t.name, t.metricsAddr, t.logPath)
	}
	g.Go(func() error { return v.leaders.Run(gctx) })
	if f.cfg.handoffEvery > 0 {
		g.Go(func() error { return f.handoffs(gctx, v.leaders, tickers) })
	}

	<-gctx.Done()
	if ctx.Err() != nil {
		f.scr.info("stopping %d tickers and %d workers (SIGTERM; SIGKILL after %s) ...", numTickers, numWorkers, stopTimeout)
	}
	return g.Wait()
}

// setup creates the namespace's topics and applies the demo schedules, with each command's output in
// logs/setup.log.
func (f *fleet) setup(ctx context.Context) error {
	file := filepath.Join(f.cfg.dataDir, "schedules.yaml")
	if err := os.WriteFile(file, []byte(demoSchedules), 0o640); err != nil {
		return fmt.Errorf("writing the demo schedules: %w", err)
	}
	ticker := filepath.Join(f.cfg.binDir, "ticker")
	common := []string{"--brokers", f.brokers, "--namespace", f.cfg.namespace}
	if _, err := f.runSetup(ctx, append([]string{ticker, "init"}, common...)); err != nil {
		return err
	}
	out, err := f.runSetup(ctx, append([]string{ticker, "schedule", "apply", "-f", file}, common...))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f.scr.event("APPLY", colorDim, "%s", line)
	}
	return nil
}

// runSetup runs a short command to completion, appending its output to logs/setup.log; it returns its stdout.
func (f *fleet) runSetup(ctx context.Context, argv []string) (string, error) {
	logPath := filepath.Join(f.cfg.dataDir, "logs", "setup.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return "", fmt.Errorf("opening %s: %w", logPath, err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "--- tickgroup-dev %s: %s\n", time.Now().Format(time.RFC3339), strings.Join(argv, " "))
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...) //nolint:gosec // the binaries this tool built or was given
	cmd.Stdout = &stdout
	cmd.Stderr = logFile
	cmd.Env = childEnv()
	err = cmd.Run()
	_, _ = logFile.Write(stdout.Bytes())
	if err != nil {
		return "", fmt.Errorf("%s %s: %s; see %s:\n%s", filepath.Base(argv[0]), argv[1], child.ExitText(err), logPath, tail(logPath, 12))
	}
	return stdout.String(), nil
}

// waitReady waits until every worker reports ready (it has its first partition assignment), at most 30s.
func (f *fleet) waitReady(ctx context.Context, workers []*proc) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	for _, w := range workers {
		for {
			if ready(ctx, client, "http://"+w.metricsAddr+"/-/ready") {
				break
			}
			select {
			case <-ctx.Done():
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					f.scr.info("%s is not ready after 30s; starting the tickers anyway (see %s)", w.name, w.logPath)
				}
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	f.scr.info("workers joined %s.workers; starting the tickers", f.cfg.namespace)
}

func ready(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// handoffWait bounds how long a handoff waits for another replica to lead before restarting the old leader.
const handoffWait = 15 * time.Second

// handoffs stops the leader every handoffEvery and starts it again, so that the view shows a handoff. A round
// without a known leader is skipped.
func (f *fleet) handoffs(ctx context.Context, lw *leaderWatch, tickers []*proc) error {
	t := time.NewTicker(f.cfg.handoffEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		name := lw.Current()
		var p *proc
		for _, t := range tickers {
			if t.name == name {
				p = t
			}
		}
		if p == nil {
			continue
		}
		f.scr.event("HANDOFF", colorYellow, "stopping %s (the leader) to show failover", p.name)
		// Start it again only once another replica leads: restarted at once, it would rejoin within the same
		// rebalance, and the group could give partition 0 straight back to it.
		err := p.restart(ctx, func(ctx context.Context) {
			if !lw.waitOther(ctx, p.name, handoffWait) && ctx.Err() == nil { // not when the run is ending
				f.scr.info("no other replica took over within %s; restarting %s anyway", handoffWait, p.name)
			}
		})
		if err != nil {
			return err
		}
		t.Reset(f.cfg.handoffEvery)
	}
}

// freeAddrs returns n distinct free loopback addresses for the children's admin servers. The ports are free when
// this returns, not reserved: good enough for a development run, and a restarted replica keeps its port.
func freeAddrs(n int) ([]string, error) {
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}
