package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// TestMain lets the test binary serve as the demo handler: the workers run os.Executable() + " handle", which in
// a test is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == handleCommand {
		os.Exit(handle())
	}
	os.Exit(m.Run())
}

func TestDemoSchedulesParse(t *testing.T) {
	t.Parallel()
	specs, err := schedule.ParseFile(strings.NewReader(demoSchedules))
	if err != nil {
		t.Fatalf("the demo schedules do not parse: %v", err)
	}
	var got []string
	for _, s := range specs {
		got = append(got, s.Name)
	}
	if want := "demo-beat demo-shards demo-cron"; strings.Join(got, " ") != want {
		t.Fatalf("demo schedules = %v, want %s", got, want)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	env := func(string) string { return "" }
	if err := run(t.Context(), []string{"--handoff-every", "-1s"}, env, &stdout, &stderr); err == nil {
		t.Fatal("run with a negative --handoff-every succeeded, want a usage error")
	}
	if err := run(t.Context(), []string{"extra"}, env, &stdout, &stderr); err == nil {
		t.Fatal("run with an argument succeeded, want a usage error")
	}
}

// TestDevRun runs the whole development setup (building the binaries, broker, 3 tickers, 2 workers, the view,
// handoffs every 8s) until it has shown ticks emitted and run and one leadership change (about 10s after the
// build on an idle machine), then cancels it and expects a clean exit.
func TestDevRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs the development fleet for ~25s")
	}
	dataDir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out child.Log
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--data-dir", dataDir, "--handoff-every", "8s"},
			func(string) string { return "" }, &out, &stderr)
	}()

	emit := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  EMIT +demo-beat@\S+ +by ticker-\d \(epoch \d+\)$`)
	ran := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  RUN +demo-beat@\S+ +ok +on worker-\d in \S+`)
	handoff := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  LEADER +(ticker-\d) \(was (ticker-\d)\)$`)
	changed := func(s string) bool {
		for _, m := range handoff.FindAllStringSubmatch(s, -1) {
			if m[1] != m[2] {
				return true
			}
		}
		return false
	}
	// Building the binaries takes as long as the build cache makes it; the 30s run starts after the banner.
	building := time.After(5 * time.Minute)
	for !strings.Contains(out.String(), "This is the embedded development broker") {
		select {
		case err := <-done:
			t.Fatalf("run returned before its banner: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), stderr.String())
		case <-building:
			t.Fatalf("no banner within 5 minutes; stdout:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	// The bound is generous (a handoff every 8s, lines within seconds on an idle machine): a loaded machine
	// starts four processes on two cores.
	deadline := time.After(2 * time.Minute)
	for !(emit.MatchString(out.String()) && ran.MatchString(out.String()) && changed(out.String())) {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), stderr.String())
		case <-deadline:
			cancel()
			<-done
			t.Fatalf("no EMIT, RUN and LEADER handoff lines within 2m; stdout:\n%s\nstderr:\n%s", out.String(), stderr.String())
		case <-time.After(200 * time.Millisecond):
		}
	}

	cancel()
	stopped := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after cancel = %v, want nil; stdout:\n%s\nlogs:\n%s", err, out.String(), logTails(dataDir))
		}
	case <-time.After(time.Minute):
		t.Fatalf("run did not return within a minute of cancel; stdout:\n%s", out.String())
	}
	t.Logf("stopped in %s; output:\n%s", time.Since(stopped).Round(time.Millisecond), out.String())
	for _, want := range []string{"This is the embedded development broker", "ticker-1 stopped (exit 0)", "worker-2 stopped (exit 0)", "logs are in"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join(dataDir, "logs", "ticker-1.log")); err != nil {
		t.Errorf("ticker log: %v", err)
	}
}

// logTails is the last lines of each process log of a run in dataDir, for a failure's report.
func logTails(dataDir string) string {
	paths, _ := filepath.Glob(filepath.Join(dataDir, "logs", "*.log"))
	var b strings.Builder
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(p), strings.Join(lines[max(len(lines)-15, 0):], "\n"))
	}
	return b.String()
}
