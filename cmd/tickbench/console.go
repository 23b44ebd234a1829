package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/cli"
)

func init() {
	register("console", command{
		summary: "load N schedules into a fresh namespace, then time ticker console's start, memory and pages, ticker status --fleet and NAME, and a pause and a trigger",
		run:     runConsoleBench,
	})
}

// consoleOptions are tickbench console's flags.
type consoleOptions struct {
	brokers, tickerBin string
	n, pages, above    int
	keep               bool
}

func runConsoleBench(ctx context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) error {
	var o consoleOptions
	fs := flag.NewFlagSet("tickbench console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.brokers, "brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
	fs.IntVar(&o.n, "schedules", 1_000_000, "schedules to load (every 10m, offsets spread)")
	fs.IntVar(&o.pages, "pages", 5, "times each page is asked for")
	fs.IntVar(&o.above, "catalog-above", 100_000, "the console's --catalog-above")
	fs.StringVar(&o.tickerBin, "ticker", "", "path of the ticker binary (default: go build ./cmd/ticker into a temp dir)")
	fs.BoolVar(&o.keep, "keep", false, "keep the namespace afterwards")
	if err := fs.Parse(args); err != nil {
		return cli.UsageError{Err: err}
	}
	if o.n < 2 || o.pages < 1 {
		return cli.Usagef("tickbench console: --schedules must be at least 2 and --pages at least 1")
	}
	ns, err := newBenchNamespace(ctx, o.brokers, "tickbench-console", 12, o.keep)
	if err != nil {
		return err
	}
	defer ns.close()
	if err := loadSchedules(ctx, ns.opts, ns.names.Schedules, o.n, 10*time.Minute, true); err != nil {
		return err
	}
	bin, cleanup, err := tickerBinary(ctx, o.tickerBin)
	if err != nil {
		return err
	}
	defer cleanup()
	env := append(os.Environ(), "TICKGROUP_BROKERS="+o.brokers, "TICKGROUP_NAMESPACE="+ns.cfg.Namespace)

	addr, err := child.FreeAddr()
	if err != nil {
		return err
	}
	start := time.Now()
	con, err := child.Start("the console", []string{bin, "console", "--listen", addr, "--metrics-addr", "", "--refresh", "10m",
		"--catalog-above", strconv.Itoa(o.above), "--log-level", "warn"}, child.Options{Env: env, Output: stderr, ParentDeath: syscall.SIGKILL})
	if err != nil {
		return err
	}
	defer con.Stop(5 * time.Second)
	base := "http://" + addr
	if err := awaitPage(ctx, base+"/", 30*time.Minute); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "console: ready after %.1fs (its first read of %d schedules)\n", time.Since(start).Seconds(), o.n)
	name := func(i int) string { return fmt.Sprintf("load-%07d", i) }
	for _, pg := range []struct{ what, path string }{
		{"list, first page", "/schedules"},
		{"list, the middle", "/schedules?after=" + name(o.n/2) + "&page=" + strconv.Itoa(o.n/200)},
		{"search, 10 matches", "/schedules?q=" + url.QueryEscape(name(o.n / 10)[:11])},
		{"search, none", "/schedules?q=nosuch"},
		{"paused (none)", "/schedules?state=paused"},
		{"fleet", "/"},
	} {
		times, err := timePages(ctx, o.pages, func(int) string { return base + pg.path })
		if err != nil {
			return fmt.Errorf("%s: %w", pg.what, err)
		}
		fmt.Fprintf(stdout, "page %-20s %s\n", pg.what, times)
	}
	times, err := timePages(ctx, o.pages, func(i int) string { return base + "/schedules/" + name((i*7919+13)%o.n) })
	if err != nil {
		return fmt.Errorf("a schedule's page: %w", err)
	}
	fmt.Fprintf(stdout, "page %-20s %s\n", "a schedule (uncached)", times)
	fmt.Fprintf(stdout, "console: peak RSS %s\n", peakRSS(con.Pid()))

	for _, args := range [][]string{{"status", "--fleet"}, {"status", name(o.n / 3)}, {"schedule", "pause", name(o.n / 4), "--reason", "tickbench"},
		{"schedule", "trigger", name(o.n / 4)}} {
		took, rss, err := timeCommand(ctx, env, bin, args...)
		if err != nil {
			return fmt.Errorf("ticker %s: %w", strings.Join(args, " "), err)
		}
		fmt.Fprintf(stdout, "ticker %-36s %.2fs, peak RSS %d MiB\n", strings.Join(args, " "), took.Seconds(), rss>>20)
	}
	return nil
}

// awaitPage waits until u answers 200.
func awaitPage(ctx context.Context, u string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if code, err := getPage(ctx, u); err == nil && code == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer 200 within %v", u, limit)
}

// getPage GETs u and reads its body.
func getPage(ctx context.Context, u string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// timePages asks for page(i) n times, one after the other, and says how long they took.
func timePages(ctx context.Context, n int, page func(i int) string) (string, error) {
	var ds []time.Duration
	for i := range n {
		start := time.Now()
		code, err := getPage(ctx, page(i))
		if err != nil {
			return "", err
		}
		if code != http.StatusOK {
			return "", fmt.Errorf("%s: %d", page(i), code)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return fmt.Sprintf("median %v, max %v (%d)", ds[len(ds)/2].Round(100*time.Microsecond), ds[len(ds)-1].Round(100*time.Microsecond), n), nil
}

// peakRSS is process pid's peak resident set (VmHWM).
func peakRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return fmt.Sprintf("%d MiB", kb>>10)
		}
	}
	return "unknown"
}

// timeCommand runs bin args to its end and returns how long it took and its peak RSS in bytes.
func timeCommand(ctx context.Context, env []string, bin string, args ...string) (time.Duration, int64, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s", err, out)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return took, 0, errors.New("no resource usage")
	}
	return took, ru.Maxrss << 10, nil
}
