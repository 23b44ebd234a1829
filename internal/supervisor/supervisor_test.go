//go:build linux

package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// setup starts a supervisor for the test and closes it at the end.
func setup(t *testing.T) *Supervisor {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Warning(); w != "" {
		t.Logf("supervisor warning: %s", w)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// start runs a shell script under s with the marker TICK_ID=<id>.
func start(t *testing.T, s *Supervisor, id, script string, lease func() int64) *Run {
	t.Helper()
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r, err := s.Start(Spec{
		Path: "/bin/sh", Args: []string{"sh", "-c", script},
		Env:    []string{"PATH=/usr/bin:/bin", "TICK_ID=" + id},
		Stdin:  stdin,
		Output: out,
		Marker: "TICK_ID=" + id,
		Lease:  lease,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	s := setup(t)
	for _, c := range []struct {
		script string
		want   func(syscall.WaitStatus) bool
	}{
		{"exit 0", func(ws syscall.WaitStatus) bool { return ws == 0 }},
		{"exit 3", func(ws syscall.WaitStatus) bool { return ws.Exited() && ws.ExitStatus() == 3 }},
		{"kill -9 $$", func(ws syscall.WaitStatus) bool { return ws.Signaled() && ws.Signal() == syscall.SIGKILL }},
	} {
		if e := start(t, s, "x", c.script, nil).Wait(); e.Err != nil || e.LeaseExpired || !c.want(e.Status) {
			t.Errorf("%q: got %+v", c.script, e)
		}
	}
}

func TestStartError(t *testing.T) {
	t.Parallel()
	s := setup(t)
	stdin, _ := os.Open(os.DevNull)
	defer stdin.Close()
	_, err := s.Start(Spec{Path: os.DevNull, Args: []string{"null"}, Stdin: stdin, Output: os.Stderr})
	var se *StartError
	if !errors.As(err, &se) || se.LeaseExpired {
		t.Fatalf("got %v, want a start error", err)
	}
	// The supervisor is still there for the next run.
	if e := start(t, s, "x", "exit 0", nil).Wait(); e.Status != 0 {
		t.Fatalf("after a failed start: %+v", e)
	}
}

func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	s := setup(t)
	// An hour at the start; once the program runs, the lease is moved to end 300 ms later, as a lane whose
	// renewals stop would leave it (the client sends the moved deadline within leasePoll).
	var deadline atomic.Int64
	deadline.Store(time.Now().Add(time.Hour).UnixNano())
	r := start(t, s, "x", "sleep 60", deadline.Load)
	moved := time.Now()
	deadline.Store(moved.Add(300 * time.Millisecond).UnixNano())
	e := r.Wait()
	if !e.LeaseExpired || !e.Status.Signaled() {
		t.Fatalf("got %+v, want a run killed at its lease's end", e)
	}
	if d := time.Since(moved); d > 10*time.Second {
		t.Errorf("killed %s after the lease was moved 300 ms ahead", d)
	}
	past := time.Now().Add(-time.Second).UnixNano()
	stdin, _ := os.Open(os.DevNull)
	defer stdin.Close()
	_, err := s.Start(Spec{Path: "/bin/true", Args: []string{"true"}, Stdin: stdin, Output: os.Stderr, Lease: func() int64 { return past }})
	var se *StartError
	if !errors.As(err, &se) || !se.LeaseExpired {
		t.Fatalf("start on an expired lease: got %v", err)
	}
}

// TestHelpersOfConcurrentRuns: two runs each leave a helper outside their process group (setsid) that the
// supervisor takes in; the end of one run kills its own helper, not the other run's, which dies with its run.
func TestHelpersOfConcurrentRuns(t *testing.T) {
	t.Parallel()
	s := setup(t)
	dir := t.TempDir()
	// A subshell starts the helper and exits at once, so the helper is the supervisor's while its run goes on.
	script := func(pidFile, then string) string {
		return fmt.Sprintf(`(setsid sleep 300 & echo $! > %[1]s.tmp; mv %[1]s.tmp %[1]s); %s`, pidFile, then)
	}
	ready := filepath.Join(dir, "b-ready")
	b := start(t, s, "b", script(filepath.Join(dir, "b"), "touch "+ready+"; sleep 300"), nil)
	waitFile(t, ready)
	a := start(t, s, "a", script(filepath.Join(dir, "a"), "exit 0"), nil)
	if e := a.Wait(); e.Status != 0 {
		t.Fatalf("run a: %+v", e)
	}
	helperA, helperB := readPid(t, filepath.Join(dir, "a")), readPid(t, filepath.Join(dir, "b"))
	if alive(helperA) {
		t.Errorf("run a's helper %d outlived run a", helperA)
	}
	if !alive(helperB) {
		t.Fatalf("run b's helper %d was killed when run a ended", helperB)
	}
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	if e := b.Wait(); !e.Status.Signaled() {
		t.Fatalf("run b after Kill: %+v", e)
	}
	if alive(helperB) {
		t.Errorf("run b's helper %d outlived run b", helperB)
	}
}

func TestCloseKillsRuns(t *testing.T) {
	t.Parallel()
	s := setup(t)
	r := start(t, s, "x", "sleep 300", nil)
	pid := r.Pid()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if e := r.Wait(); e.Err == nil {
		t.Errorf("run after Close: %+v, want the supervisor's end as its error", e)
	}
	if alive(pid) {
		t.Errorf("program %d outlived the supervisor", pid)
	}
	if _, err := s.Start(Spec{}); err == nil {
		t.Error("Start after Close: got nil error")
	}
}

func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// alive reports whether pid runs (a zombie, dead and waiting for its reaper, does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// TestNothingOfTheWorkerReachesTheSupervisor: its environment is the marker alone, whatever the worker's.
func TestNothingOfTheWorkerReachesTheSupervisor(t *testing.T) {
	t.Setenv("TICKGROUP_SASL_PASSWORD", "hunter2")
	s := setup(t)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", s.Pid()))
	if err != nil {
		// Not dumpable: only a privileged reader (root, as in CI) may look.
		t.Skipf("cannot read the supervisor's environment: %v", err)
	}
	if got := string(b); got != supervisorEnv+"=1\x00" {
		t.Errorf("supervisor environment %q, want the marker alone", got)
	}
}

// TestBytesReachTheProgramAsTheyAre: arguments and environment that are not UTF-8 (a binary payload) arrive
// unchanged.
func TestBytesReachTheProgramAsTheyAre(t *testing.T) {
	t.Parallel()
	s := setup(t)
	out := filepath.Join(t.TempDir(), "out")
	payload := "a\xffb\xc3("
	stdin, _ := os.Open(os.DevNull)
	defer stdin.Close()
	r, err := s.Start(Spec{
		Path: "/bin/sh", Args: []string{"sh", "-c", `printf %s "$X|$1" > "$0"`, out, payload},
		Env: []string{"X=" + payload}, Stdin: stdin, Output: os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	if e := r.Wait(); e.Status != 0 {
		t.Fatalf("%+v", e)
	}
	if b, _ := os.ReadFile(out); string(b) != payload+"|"+payload {
		t.Errorf("program saw %q, want %q twice", b, payload)
	}
}

// TestStartWhenTheSupervisorDies: a start that the supervisor never answers, because it was killed, fails with a
// retryable error (not a StartError, which the exec handler makes permanent).
func TestStartWhenTheSupervisorDies(t *testing.T) {
	t.Parallel()
	s := setup(t)
	if err := syscall.Kill(s.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	go func() {
		stdin, _ := os.Open(os.DevNull)
		defer stdin.Close()
		_, err := s.Start(Spec{Path: "/bin/true", Args: []string{"true"}, Stdin: stdin, Output: os.Stderr})
		errs <- err
	}()
	time.Sleep(100 * time.Millisecond) // the fault's timing: the request is (most likely) written by then
	if err := syscall.Kill(s.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var se *StartError
	if err := <-errs; err == nil || errors.As(err, &se) {
		t.Fatalf("Start with the supervisor killed: got %v, want an error that is not a StartError", err)
	}
	<-s.Done()
	if s.Err() == nil {
		t.Error("Err after the supervisor died: nil")
	}
}
