package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestSeedOneBinaryOnEveryHost is the question this project answers, with the Go API: three "hosts" run the
// same program (examples/fleet: a tickgroup.Ticker, a tickgroup.Worker and a handler in one binary) with a
// schedule every second. Every 10 s one host is killed with kill -9, alternately the leader and the host that
// ran the last tick, and restarted a second later. Counted from the handler's own record: every slot between
// the first and the last ran, and none ran twice but as a marked re-run of a run that a kill cut off.
func TestSeedOneBinaryOnEveryHost(t *testing.T) {
	countOnly(t)
	f := newFleet(t)
	record := filepath.Join(t.TempDir(), "runs")
	hosts := map[string]*proc{}
	start := func(name string) {
		hosts[name] = f.start(name, "fleet", "run", "--instance", name, "--record", record)
	}
	names := []string{"host-1", "host-2", "host-3"}
	for _, n := range names {
		start(n)
	}
	live := func() []*proc {
		var out []*proc
		for _, n := range names {
			out = append(out, hosts[n])
		}
		return out
	}
	leaderOf(t, 60*time.Second, live()...)
	waitFor(t, 60*time.Second, "the first runs", func() (bool, string) {
		n := len(readRuns(t, record))
		return n >= 3, fmt.Sprint(n)
	})
	for round := range 4 {
		time.Sleep(10 * time.Second) // the faults' timing, not a wait for a condition
		victim := leaderOf(t, 30*time.Second, live()...).name
		if round%2 == 1 {
			runs := readRuns(t, record)
			victim = runs[len(runs)-1].host // the host that ran the last tick (it owns the partition)
		}
		hosts[victim].signal(syscall.SIGKILL)
		_ = hosts[victim].wait(t, 10*time.Second)
		t.Logf("round %d: killed %s", round, victim)
		time.Sleep(time.Second) // the restart's delay: part of the fault
		start(victim)
	}
	after := len(readRuns(t, record))
	waitFor(t, 60*time.Second, "5 runs after the last restart", func() (bool, string) {
		n := len(readRuns(t, record)) - after
		return n >= 5, fmt.Sprint(n)
	})
	for _, p := range live() {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range live() {
		if err := p.wait(t, 60*time.Second); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}

	runs := readRuns(t, record)
	byID := map[string][]run{}
	var slots []time.Time
	for _, r := range runs {
		if len(byID[r.id]) == 0 {
			slot, err := time.Parse(time.RFC3339, strings.TrimPrefix(r.id, "beat@"))
			if err != nil {
				t.Fatalf("record %q: %v", r.id, err)
			}
			slots = append(slots, slot)
		}
		byID[r.id] = append(byID[r.id], r)
	}
	slices.SortFunc(slots, time.Time.Compare)
	missing, reruns, doubled := 0, 0, 0
	for s := slots[0]; !s.After(slots[len(slots)-1]); s = s.Add(time.Second) {
		rs := byID[tick.ID("beat", s, 0, 1)]
		switch {
		case len(rs) == 0:
			missing++
			t.Errorf("slot %s never ran", s.Format(time.RFC3339))
		case len(rs) > 1:
			for _, r := range rs[1:] {
				if r.interrupted {
					reruns++
				} else {
					doubled++
					t.Errorf("slot %s ran again without being marked interrupted: %+v", s.Format(time.RFC3339), rs)
				}
			}
		}
	}
	t.Logf("%d slots from %s to %s, %d runs: %d missing, %d run twice, %d re-runs of runs cut by a kill (marked interrupted)",
		len(slots), slots[0].Format(time.TimeOnly), slots[len(slots)-1].Format(time.TimeOnly), len(runs), missing, doubled, reruns)
	if len(slots) < 40 {
		t.Errorf("only %d slots ran over the test's minute", len(slots))
	}
}

// run is one line of the fleet program's record: "<tick ID> <attempt> <interrupted> <instance>".
type run struct {
	id          string
	attempt     int
	interrupted bool
	host        string
}

func readRuns(t *testing.T, path string) []run {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []run
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r run
		if line == "" {
			continue
		}
		if _, err := fmt.Sscanf(line, "%s %d %t %s", &r.id, &r.attempt, &r.interrupted, &r.host); err != nil {
			t.Fatalf("record line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}
