package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestE2EChainsUnderKills: third-a runs every 2 s and fails every third slot (max_attempts 1, so it is
// dead-lettered); load runs after third-a when a slot succeeds. Two tickers and two workers; midway the leader
// and then a worker are killed (kill -9). By the handlers' own log and the work topic: load ran exactly once for
// each of third-a's slots that succeeded after load was written (as load@<that slot>; at most once for an earlier
// one) and never for one that failed, across both kills; a cycle is refused when written. The namespace has three
// leaders, and third-a's (2) is not load's (0): each replica follows the other's schedule on the schedule shares.
func TestE2EChainsUnderKills(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	countOnly(t)
	e := setupLeaders(t, 3)
	f := e.f
	f.cli("schedule", "put", "third-a", "--every", "2s", "--max-attempts", "1")
	f.cli("schedule", "put", "load", "--after", "third-a", "--when", "success")
	// A chain acts on the upstream's slots after the downstream was written (as any schedule, it catches up
	// nothing from before it existed): a slot of third-a before this instant may have its load or not.
	written := time.Now()
	if out, err := f.cliErr("schedule", "put", "third-a", "--after", "load"); err == nil || !strings.Contains(out+err.Error(), "cycle") {
		t.Errorf("a cycle was not refused: %v\n%s", err, out)
	}
	ticks := f.collect()
	tickers := []*proc{f.ticker("a"), f.ticker("b")}
	workers := []*proc{e.start(nil, "--exec", handlerBin), e.start(nil, "--exec", handlerBin)}
	lead := waitLeaders(t, 60*time.Second, 3, tickers)["0"] // leader 0 also copies the schedule shares

	// ran returns the slots of third-a that finished ok and failed, by the handlers' log, and load's runs. A
	// marked re-run (TICK_INTERRUPTED=1) of a run on the killed worker is the worker's documented window (its
	// handler exited, the kill came before the outcome was written): counted once, and logged.
	ran := func() (ok, failed []time.Time, loads map[string]int) {
		loads = map[string]int{}
		for id, xs := range e.executions() {
			name, rest, _ := strings.Cut(id, "@")
			slot, err := time.Parse(time.RFC3339, rest)
			if err != nil {
				continue
			}
			for i, x := range xs {
				if !x.done || (i > 0 && xs[i-1].done && x.interrupted == "1" && e.wasKilled(xs[i-1].worker)) {
					continue
				}
				switch name {
				case "third-a":
					if x.result == "ok" {
						ok = append(ok, slot)
					} else {
						failed = append(failed, slot)
					}
				case "load":
					loads[id]++
				}
			}
		}
		slices.SortFunc(ok, time.Time.Compare)
		return ok, failed, loads
	}
	runs := func(n int) func() bool {
		return func() bool { ok, failed, _ := ran(); return len(ok) >= n && len(failed) >= n/2 }
	}
	kafkatest.Eventually(t, 60*time.Second, "third-a's first 3 successes", runs(3))
	lead.signal(syscall.SIGKILL)
	t.Logf("%s, leading partition 0, killed", lead.name)
	kafkatest.Eventually(t, 60*time.Second, "third-a's 6 successes", runs(6))
	e.kill9(workers[0])
	t.Logf("worker %s killed", workers[0].name)
	kafkatest.Eventually(t, 90*time.Second, "third-a's 9 successes", runs(9))

	// Every success of third-a up to the last but one has its load run (the last may still be on its way).
	ok, failed, _ := ran()
	last := ok[len(ok)-2]
	waitFor(t, 30*time.Second, "load's runs for third-a's successes", func() (bool, string) {
		_, _, loads := ran()
		for _, s := range ok {
			if id := "load@" + s.UTC().Format(time.RFC3339); s.After(written) && !s.After(last) && loads[id] == 0 {
				return false, id + " has not run"
			}
		}
		return true, ""
	})
	_, _, loads := ran()
	for _, s := range ok {
		id := "load@" + s.UTC().Format(time.RFC3339)
		switch n := loads[id]; {
		case s.After(last): // may still be on its way
		case n > 1 || s.After(written) && n != 1:
			t.Errorf("%s ran %d times, want once (third-a's slot succeeded)", id, n)
		}
	}
	for _, s := range failed {
		if id := "load@" + s.UTC().Format(time.RFC3339); loads[id] != 0 {
			t.Errorf("%s ran %d times, want never (third-a's slot failed)", id, loads[id])
		}
	}
	// On the work topic: each load tick emitted once, each named by a slot of third-a that succeeded (the
	// handlers' log is read after the ticks: a slot's "done" line comes before its outcome, so before its load).
	emitted := map[string]int{}
	for _, s := range ticks.of("load") {
		emitted[s.tick.ID]++
	}
	okNow, _, _ := ran()
	okSet := map[string]bool{}
	for _, s := range okNow {
		okSet["load@"+s.UTC().Format(time.RFC3339)] = true
	}
	for id, n := range emitted {
		if n != 1 {
			t.Errorf("%s emitted %d times, want once", id, n)
		}
		if !okSet[id] {
			t.Errorf("%s emitted, but third-a's slot did not succeed (by the handlers' log)", id)
		}
	}
	t.Logf("third-a: %d slots ok, %d failed; load: %d runs, each once, across a leader and a worker kill -9", len(ok), len(failed), len(loads))

	// ticker audit derives load's expected ticks from third-a's outcomes: none missing, doubled or unexpected.
	rep, _ := runAudit(t, f, "--to", last.Format(time.RFC3339))
	for _, name := range []string{"third-a", "load"} {
		a := rep.schedule(t, name)
		t.Logf("audit of %s: expected %d, emitted %d, missing %d, doubled %d, unexpected %d", name, a.Expected, a.Emitted, a.Missing, a.Doubled, a.Unexpected)
		if a.Missing != 0 || a.Doubled != 0 || a.Unexpected != 0 || a.Expected == 0 {
			t.Errorf("audit of %s: %+v", name, a.auditCounts)
		}
	}
}

// TestE2EGateSkipsWithReason: third-g runs every 2 s and fails every third slot; gated runs every 2 s, 1 s
// after each of third-g's slots, and requires third-g within 2 s. Each of gated's slots runs when third-g's slot
// before it succeeded, and is recorded skipped_gate, with the reason, when it failed: by the handlers' own log
// and ticker history. A gate requiring a schedule that does not exist is refused. The namespace has three leaders,
// and third-g's (2) is not gated's (1): the gate's leader follows third-g on the schedule shares.
func TestE2EGateSkipsWithReason(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	countOnly(t)
	e := setupLeaders(t, 3)
	f := e.f
	if out, err := f.cliErr("schedule", "put", "gated", "--every", "2s", "--requires", "nope", "--requires-within", "2s"); err == nil ||
		!strings.Contains(out+err.Error(), `requires "nope": no such schedule`) {
		t.Errorf("a gate requiring nothing was not refused: %v\n%s", err, out)
	}
	f.cli("schedule", "put", "third-g", "--every", "2s", "--max-attempts", "1")
	f.cli("schedule", "put", "gated", "--every", "2s", "--offset", "1s", "--requires", "third-g", "--requires-within", "2s")
	f.ticker("a")
	e.start(nil, "--exec", handlerBin)

	// Six of gated's slots decided once the fleet formed: each runs if third-g's slot a second before it
	// succeeded, and is skipped with the reason otherwise.
	type hist struct {
		Ticks []struct {
			ID         string `json:"id"`
			Slot       time.Time
			State      string `json:"state"`
			Executions []struct {
				Status, Error string
			} `json:"executions"`
		} `json:"ticks"`
	}
	var h hist
	var decided int
	start := time.Now().Add(5 * time.Second)
	waitFor(t, 90*time.Second, "six of gated's slots decided", func() (bool, string) {
		out, code := runTicker(t, f, "history", "gated", "--since", "10m", "--grace", "1s", "--json")
		if code != 0 || json.Unmarshal([]byte(out), &h) != nil {
			return false, out
		}
		decided = 0
		for _, tk := range h.Ticks {
			if tk.Slot.After(start) && (tk.State == "ok" || tk.State == "skipped_gate") {
				decided++
			}
		}
		return decided >= 6, ""
	})
	ran := e.executions()
	aOK := func(slot time.Time) (bool, bool) {
		for _, x := range ran["third-g@"+slot.UTC().Format(time.RFC3339)] {
			if x.done {
				return x.result == "ok", true
			}
		}
		return false, false
	}
	skipped := 0
	for _, tk := range h.Ticks {
		if !tk.Slot.After(start) || tk.State != "ok" && tk.State != "skipped_gate" {
			continue
		}
		up := tk.Slot.Add(-time.Second)
		ok, known := aOK(up)
		if !known {
			t.Errorf("%s: third-g's slot %s did not run (by the handlers' log)", tk.ID, up.Format(time.RFC3339))
			continue
		}
		switch {
		case ok && tk.State != "ok":
			t.Errorf("%s is %s, but third-g's slot %s succeeded", tk.ID, tk.State, up.Format(time.RFC3339))
		case !ok && tk.State != "skipped_gate":
			t.Errorf("%s is %s, but third-g's slot %s failed", tk.ID, tk.State, up.Format(time.RFC3339))
		case !ok:
			skipped++
			want := "requires third-g: its slot " + up.UTC().Format(time.RFC3339) + " ended with failure"
			if len(tk.Executions) == 0 || tk.Executions[0].Error != want {
				t.Errorf("%s: skipped with %+v, want the reason %q", tk.ID, tk.Executions, want)
			}
			if len(ran[tk.ID]) != 0 {
				t.Errorf("%s was skipped by its gate, but its handler ran", tk.ID)
			}
		}
	}
	if skipped == 0 {
		t.Errorf("no slot of gated was skipped in %d decided: the test saw no failed slot of third-g", decided)
	}
	t.Logf("gated: %d slots decided, %d skipped by the gate with their reason", decided, skipped)
}
