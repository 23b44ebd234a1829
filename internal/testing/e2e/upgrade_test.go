package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// previousRelease is the build the upgrade test starts the fleet on, and rolls back to: the last build before
// release v0.1.0 (tagged v0.0.0), by commit, so that a clone without tags has it too. CHANGELOG.md names it.
const previousRelease = "d42505d" // v0.0.0

// previousBuild builds the ticker and worker of rev from this repository's history (git archive), once: they are
// kept in the user's cache directory by commit.
func previousBuild(t *testing.T, rev string) (ticker, worker string) {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	full, err := exec.Command("git", "-C", root, "rev-parse", "--verify", "--quiet", rev+"^{commit}").Output()
	if err != nil {
		// A checkout without history (a shallow clone, an archive) cannot build it: say so plainly.
		t.Skipf("the previous release %s is not in this checkout's history (a shallow clone?): the upgrade test needs it", rev)
	}
	commit := strings.TrimSpace(string(full))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "tickgroup-e2e", "build-"+commit)
	ticker, worker = filepath.Join(dir, "ticker"), filepath.Join(dir, "worker")
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := os.Stat(worker); err == nil {
		return ticker, worker
	}
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive %s | tar -x -C %q", root, commit, src))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extracting %s: %v\n%s", commit, err, out)
	}
	// Two runs of the suite (CI runs one per Kafka release) may build it at once: each into names of its own.
	tmp := ".tmp" + strconv.Itoa(os.Getpid())
	for _, b := range []string{"ticker", "worker"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b+tmp), "./cmd/"+b)
		cmd.Dir = src
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s of %s: %v\n%s", b, commit, err, out)
		}
	}
	for _, b := range []string{"ticker", "worker"} { // the worker last: its presence says the build is whole
		if err := os.Rename(filepath.Join(dir, b+tmp), filepath.Join(dir, b)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("built %s (%s) into %s", rev, commit[:12], dir)
	return ticker, worker
}

// TestE2EUpgradeAndRollback: three tickers and three workers of the previous release run 1 s schedules over every
// work partition and a 2 s job every 3 s; each process in turn is stopped (SIGTERM) and started on this build,
// then a ticker and a worker are rolled back to the previous release. Counted from the handler's own record: no
// slot of the run is missing, no tick ran twice unmarked, and ticker audit passes.
func TestE2EUpgradeAndRollback(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	oldTicker, oldWorker := previousBuild(t, previousRelease)
	e := setup(t)
	f := e.f
	var names []string
	covered := map[int32]bool{}
	for i := 0; len(covered) < e.parts; i++ {
		name := "up-" + strconv.Itoa(i)
		if p := tick.Partition(name, 0, e.parts); !covered[p] {
			covered[p] = true
			names = append(names, name)
			f.cli("schedule", "put", name, "--every", "1s")
		}
	}
	f.cli("schedule", "put", "slow-job", "--every", "3s")
	begin := time.Now().Truncate(time.Second).Add(2 * time.Second)

	handlerEnv := []string{"HANDLER_LOG=" + e.log, "HANDLER_SLEEP_SLOW=2s"}
	tickerArgs := func(name string) []string {
		return []string{"run", "--session-timeout", "3s", "--heartbeat-interval", "250ms", "--instance", name}
	}
	workerArgs := func(name string) []string {
		return []string{"run", "--start", "earliest", "--session-timeout", "6s", "--worker-id", name, "--exec", handlerBin, "--grace", "5s"}
	}
	start := func(name string, old bool) *proc {
		bin, args, env := "ticker", tickerArgs(name), []string(nil)
		if strings.HasPrefix(name, "w") {
			bin, args, env = "worker", workerArgs(name), handlerEnv
		}
		if old {
			bin = map[string]string{"ticker": oldTicker, "worker": oldWorker}[bin]
		}
		return f.startEnv(name, bin, env, args...)
	}
	procs := map[string]*proc{}
	order := []string{"t1", "w1", "t2", "w2", "t3", "w3"}
	for _, n := range order {
		procs[n] = start(n, true)
	}
	// A slot that ran since the last change of the fleet: it is running.
	running := func(what string) {
		t.Helper()
		after := time.Now().Truncate(time.Second).Add(3 * time.Second)
		waitFor(t, 60*time.Second, what, func() (bool, string) {
			ex := e.executions()
			for _, n := range names {
				if len(ex[tick.ID(n, after, 0, 1)]) == 0 {
					return false, n + " has not run " + after.Format(time.TimeOnly)
				}
			}
			return true, ""
		})
	}
	running("the previous release running")
	swap := func(n string, old bool) {
		procs[n].signal(syscall.SIGTERM)
		if err := procs[n].wait(t, 30*time.Second); err != nil {
			t.Errorf("%s: stopped with %v", n, err)
		}
		procs[n] = start(n, old)
		running(fmt.Sprintf("slots after %s restarted (previous release: %v)", n, old))
	}
	for _, n := range order {
		swap(n, false)
	}
	t.Log("every process on this build")
	for _, n := range []string{"t2", "w3"} {
		swap(n, true)
	}
	t.Log("t2 and w3 rolled back to the previous release")
	end := time.Now().Truncate(time.Second).Add(-5 * time.Second)
	running("the last slots")

	ex := e.executions()
	missing, twice, marked := 0, 0, 0
	for _, n := range names {
		for s := begin; !s.After(end); s = s.Add(time.Second) {
			xs := ex[tick.ID(n, s, 0, 1)]
			if len(xs) == 0 {
				missing++
				t.Errorf("slot %s of %s never ran", s.Format(time.TimeOnly), n)
			}
			for _, x := range xs[min(len(xs), 1):] {
				if x.interrupted != "1" {
					twice++
					t.Errorf("slot %s of %s ran again unmarked (attempt %s on %s)", s.Format(time.TimeOnly), n, x.attempt, x.worker)
				} else {
					marked++
				}
			}
		}
	}
	t.Logf("%d schedules x %d slots: %d missing, %d ran twice unmarked, %d marked re-runs", len(names), int(end.Sub(begin)/time.Second)+1, missing, twice, marked)
	rep, code := runAudit(t, f, "--to", end.Format(time.RFC3339))
	if code != 0 || !rep.OK {
		t.Errorf("ticker audit: exit %d, ok %v", code, rep.OK)
	}
}
