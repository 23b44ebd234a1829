//go:build linux

package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/supervisor"
)

// The fake worker is this test binary run again with fakeWorkerEnv set: TestExecFakeWorker then runs one
// Handler attempt of groupScript, renewing a 500 ms lease every 100 ms like a lane, until it is killed.
const (
	fakeWorkerEnv = "EXEC_TEST_FAKE_WORKER"
	pidFileEnv    = "EXEC_TEST_PID_FILE"
)

// groupScript starts a background grandchild, writes "<grandchild> <program> <supervisor>" to $0 once all run,
// and sleeps.
const groupScript = `sh -c 'sleep 300 & echo "$! $$ $PPID" > "$0.tmp" && mv "$0.tmp" "$0"; sleep 300'`

func TestExecFakeWorker(t *testing.T) {
	if os.Getenv(fakeWorkerEnv) == "" {
		t.Skip("only run as the fake worker of the supervisor tests")
	}
	h, err := New(Config{Command: groupScript + " " + os.Getenv(pidFileEnv)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &testLease{}
	l.extend(time.Now().Add(500 * time.Millisecond))
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			l.extend(time.Now().Add(500 * time.Millisecond))
		}
	}()
	err = h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1, Lease: l.deadline}))
	t.Fatalf("Handle returned (%v); the fake worker should have been killed first", err)
}

// startFakeWorker runs the fake worker and returns it with the pids of its handler's group and its supervisor.
func startFakeWorker(t *testing.T) (*exec.Cmd, []int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command(os.Args[0], "-test.run=^TestExecFakeWorker$", "-test.count=1")
	cmd.Env = append(os.Environ(), fakeWorkerEnv+"=1", pidFileEnv+"="+pidFile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("fake worker output:\n%s", out.String())
		}
	})
	var pids []int
	waitFor(t, 20*time.Second, "the handler's group to start", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pids = nil
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("pid file %q: %v", b, err)
			}
			pids = append(pids, pid)
		}
		return true
	})
	if len(pids) != 3 || pids[2] == cmd.Process.Pid {
		t.Fatalf("pids %v: want grandchild, program and supervisor (not the worker, %d)", pids, cmd.Process.Pid)
	}
	for _, pid := range pids {
		if allDead([]int{pid}) {
			t.Fatalf("pid %d of %v is not running before the test", pid, pids)
		}
	}
	t.Cleanup(func() {
		if !allDead(pids) {
			// The test failed: do not leave the group running on the machine.
			_ = syscall.Kill(-pids[1], syscall.SIGKILL)
			_ = syscall.Kill(pids[2], syscall.SIGKILL)
		}
	})
	return cmd, pids
}

func TestExecSupervisorKillsGroupWhenWorkerIsKilled(t *testing.T) {
	t.Parallel()
	worker, pids := startFakeWorker(t)
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, 10*time.Second, "the handler's group to die with the worker", func() bool { return allDead(pids) })
	t.Logf("group %v dead %s after SIGKILL of the worker", pids, time.Since(killed).Round(time.Millisecond))
}

func TestExecSupervisorKillsGroupWhenLeaseRunsOut(t *testing.T) {
	t.Parallel()
	worker, pids := startFakeWorker(t)
	if err := worker.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	// The lease had at most 500 ms left: ~1.5 s leaves a second for scheduling on loaded cores; 3 s is the bound.
	group := pids[:2] // the supervisor outlives one run
	waitFor(t, 3*time.Second, "the handler's group to die after its lease", func() bool { return allDead(group) })
	t.Logf("group %v dead %s after SIGSTOP of the worker", group, time.Since(stopped).Round(time.Millisecond))
	if st := procState(worker.Process.Pid); st != "T" {
		t.Errorf("worker state %q, want T (stopped): the group must die while the worker is frozen", st)
	}
	_ = worker.Process.Signal(syscall.SIGCONT)
}

func TestExecLeaseExpiredInProcess(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h, err := New(Config{Command: "sleep 60"}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	l := &testLease{}
	l.extend(time.Now().Add(300 * time.Millisecond))
	start := time.Now()
	err = h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1, Lease: l.deadline}))
	if err == nil || !strings.Contains(err.Error(), "lease expired") {
		t.Fatalf("Handle: got %v, want a lease expired error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Handle took %s with a 300 ms lease", d)
	}
	if !strings.Contains(logs.String(), "lease expired") {
		t.Errorf("logs do not mention the lease:\n%s", logs.String())
	}
}

func TestExecSuccessWhileChildHoldsStdout(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	var logs bytes.Buffer
	h, err := New(Config{
		Command: `sh -c 'sleep 300 & echo $! > "$0"; echo done' ` + pidFile,
	}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1})); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	// Well below KillGrace (5 s), which would mean Handle waited for the child to let go of stdout.
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Handle took %s", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	waitFor(t, 5*time.Second, "the background child to be killed", func() bool { return allDead([]int{pid}) })
	if got := logs.String(); !strings.Contains(got, `level=DEBUG msg="handler succeeded"`) || !strings.Contains(got, "output=done") {
		t.Errorf("logs:\n%s\nwant a debug line \"handler succeeded\" with output=done", got)
	}
}

func TestExecProgramSeesNoSupervisorTrace(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "out")
	h, err := New(Config{
		Command: `sh -c 'env > "$0"; cat /proc/$PPID/cmdline | tr "\0" " " >> "$0"; exit 7' ` + out,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1}))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit 7: got %v, want exit status 7", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "TICKGROUP_EXEC_SUPERVISOR") {
		t.Errorf("the program saw the supervisor marker:\n%s", b)
	}
	if !strings.Contains(string(b), supervisor.Name+" ") {
		t.Errorf("the program's parent is not the supervisor:\n%s", b)
	}
}

func TestExecSignalStatus(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Command: `sh -c 'kill -9 $$'`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1}))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+9 || tickgroup.IsPermanent(err) {
		t.Fatalf("program killed by SIGKILL: got %v, want a retryable exit status 137", err)
	}
	h2, _ := New(Config{Command: "/dev/null"}, nil) // exists, cannot be executed
	if err := h2.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1})); !tickgroup.IsPermanent(err) {
		t.Fatalf("unexecutable program: got %v, want a permanent error", err)
	}
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// allDead reports whether every pid is gone or a zombie (dead, waiting for a reaper).
func allDead(pids []int) bool {
	for _, pid := range pids {
		if st := procState(pid); st != "" && st != "Z" {
			return false
		}
	}
	return true
}

// procState is the state letter of pid in /proc, "" when there is no such process.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, rest, ok := strings.Cut(string(b), ") ")
	if !ok || rest == "" {
		return ""
	}
	return rest[:1]
}

func TestExecSIGTERMReachesProgramThroughSupervisor(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	ready := filepath.Join(t.TempDir(), "ready")
	h, err := New(Config{
		Command:   `sh -c 'trap "echo got-term; exit 0" TERM; touch "$0"; sleep 30 & wait' ` + ready,
		KillGrace: 10 * time.Second,
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := cancelWhenExists(ready) // once the trap is set, not at a fixed instant
	defer cancel()
	start := time.Now()
	if err := h.Handle(ctx, testTick(tickgroup.Tick{Attempt: 1})); !errors.Is(err, context.Canceled) {
		t.Fatalf("Handle: got %v, want the context's cancellation", err)
	}
	// Well within KillGrace: the program obeyed SIGTERM, and the supervisor, which caught it, exited with it.
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Handle took %s", d)
	}
	if got := logs.String(); !strings.Contains(got, "got-term") || !strings.Contains(got, "signal=SIGTERM") {
		t.Errorf("logs:\n%s\nwant the program's SIGTERM trap output and signal=SIGTERM", got)
	}
}

func TestExecLeaseExpiredBeforeStart(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	h, err := New(Config{Command: "touch " + marker}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := &testLease{}
	l.extend(time.Now().Add(-time.Second))
	if err := h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1, Lease: l.deadline})); err == nil || !strings.Contains(err.Error(), "lease expired") {
		t.Fatalf("Handle: got %v, want a lease expired error", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran on an expired lease")
	}
}

// TestExecConcurrentAttemptsShareNoPipes runs attempts side by side: a program must hold no pipe of the worker
// beyond its standard streams (another attempt's lease pipe would keep that supervisor from seeing EOF). Fds
// the test process itself inherited without close-on-exec are passed on to every child, as before.
func TestExecConcurrentAttemptsShareNoPipes(t *testing.T) {
	t.Parallel()
	inherited := map[string]bool{}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil {
			inherited[target] = true
		}
	}
	var logs syncedBuffer
	h, err := New(Config{
		// ls, a child of the shell, lists the shell's fds: a glob would show the directory the shell itself reads.
		Command: `sh -c 'sleep 0.2; ls -l /proc/$$/fd'`,
	}, slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() { errs <- h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1})) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var lines []string
	for _, rec := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var entry struct{ Output string }
		if err := json.Unmarshal([]byte(rec), &entry); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(entry.Output, "\n")...)
	}
	for _, line := range lines {
		// "lr-x------ 1 user group 64 Dec  1 10:09 3 -> pipe:[102405]"
		before, target, ok := strings.Cut(line, " -> ")
		if !ok {
			continue
		}
		f := strings.Fields(before)
		if fd, _ := strconv.Atoi(f[len(f)-1]); fd > 2 && !inherited[target] {
			t.Errorf("a program holds %s (fd %d), which the test process did not have before the attempts", target, fd)
		}
	}
	if len(lines) < n {
		t.Errorf("only %d output lines of %d programs: %q", len(lines), n, lines)
	}
}

type syncedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncedBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestExecSweepsHelpersThatLeftTheGroup: a helper that leaves the program's process group with setsid (so the
// group kill cannot reach it) is killed once the run is over, as is its own child.
func TestExecSweepsHelpersThatLeftTheGroup(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	h, err := New(Config{
		// The helper starts a grandchild, records both pids and the program exits at once, leaving them behind.
		Command: `sh -c 'setsid sh -c "sleep 300 & echo \$\$ \$! > \"$0.tmp\"; mv \"$0.tmp\" \"$0\"; wait" & while [ ! -e "$0" ]; do sleep 0.01; done' ` + ready,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), testTick(tickgroup.Tick{Attempt: 1})); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	pids := readPids(t, ready)
	waitFor(t, 5*time.Second, "the setsid helper and its child to be killed", func() bool { return allDead(pids) })
}

// TestExecSweepsAfterEscalation: a program that ignores SIGTERM is killed after KillGrace by its supervisor,
// which sweeps the helper the program left outside its group (setsid) on the way.
func TestExecSweepsAfterEscalation(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	pidFile := filepath.Join(t.TempDir(), "pids")
	h, err := New(Config{
		Command:   `sh -c 'trap "" TERM; setsid sh -c "sleep 300 & echo \$\$ \$! > \"$0.tmp\"; mv \"$0.tmp\" \"$0\"; wait" & while [ ! -e "$0" ]; do sleep 0.01; done; sleep 300' ` + pidFile,
		KillGrace: 200 * time.Millisecond,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := cancelWhenExists(pidFile)
	defer cancel()
	if err := h.Handle(ctx, testTick(tickgroup.Tick{Attempt: 1})); err == nil {
		t.Fatal("cancelled handler: got nil error")
	}
	pids := readPids(t, pidFile)
	waitFor(t, 5*time.Second, "the setsid helper and its child to be killed", func() bool { return allDead(pids) })
}

// readPids reads the two pids (a helper's and its child's) a test program wrote to path.
func readPids(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %q", b)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("pid file %q, want the helper's and its child's", b)
	}
	return pids
}

// testLease is a lease the test extends, as a lane does.
type testLease struct{ unixNano atomic.Int64 }

func (l *testLease) extend(until time.Time) { l.unixNano.Store(until.UnixNano()) }
func (l *testLease) deadline() time.Time    { return time.Unix(0, l.unixNano.Load()) }
