package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// limitRun is one execution of the handler log as an interval: from its start line to its done line, or to its
// last sign of life (a run killed with its worker has no done line).
type limitRun struct {
	id, worker string
	start, end time.Time
}

// runsOf returns the executions of the ticks whose ID starts with prefix, as intervals, in start order.
func runsOf(ex map[string][]*execution, prefix string) []limitRun {
	var out []limitRun
	for id, xs := range ex {
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		for _, x := range xs {
			out = append(out, limitRun{id: id, worker: x.worker, start: x.start, end: x.last})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start.Before(out[j].start) })
	return out
}

// peakAtOnce returns the most runs that overlap at one instant, and that instant.
func peakAtOnce(runs []limitRun) (int, time.Time) {
	type edge struct {
		at time.Time
		d  int
	}
	var es []edge
	for _, r := range runs {
		es = append(es, edge{r.start, 1}, edge{r.end, -1})
	}
	// An end and a start at the same instant: the end first (a run that ended does not overlap the next).
	sort.Slice(es, func(i, j int) bool {
		if !es[i].at.Equal(es[j].at) {
			return es[i].at.Before(es[j].at)
		}
		return es[i].d < es[j].d
	})
	n, peak, at := 0, 0, time.Time{}
	for _, e := range es {
		if n += e.d; n > peak {
			peak, at = n, e.at
		}
	}
	return peak, at
}

// startsIn counts the runs that start in [from, to).
func startsIn(runs []limitRun, from, to time.Time) int {
	n := 0
	for _, r := range runs {
		if !r.start.Before(from) && r.start.Before(to) {
			n++
		}
	}
	return n
}

// limitNeighbour returns a schedule name whose ticks, without a limit, share the work partition of limit's.
func limitNeighbour(limit string, parts int) string {
	want := tick.LimitPartition(limit, parts)
	for i := 0; ; i++ {
		if n := fmt.Sprintf("free-%d", i); tick.Partition(n, 0, parts) == want {
			return n
		}
	}
}

// ownerOf returns the worker that started the newest run of runs.
func ownerOf(t *testing.T, runs []limitRun, ws []*proc) *proc {
	t.Helper()
	if len(runs) == 0 {
		t.Fatal("no run of the limit yet")
	}
	last := runs[len(runs)-1].worker
	for _, w := range ws {
		if w.name == last {
			return w
		}
	}
	t.Fatalf("the newest run of the limit was started by %s, not a running worker", last)
	return nil
}

// TestE2ELimitHoldsUnderFaults is issue 44's first proof on the real broker: 40 schedules every second in a
// limit of 5, each run 2 s, 3 workers; the worker that owns the limit is killed (kill -9), then the next owner
// frozen (SIGSTOP 10 s), then a fourth worker added. The handlers' own log shows at most 5 runs at once at every
// instant, the limit's throughput outside the faults is 2.5 runs/s within 10%, a schedule without the limit on
// the same partition starts its ticks within 1 s (p99) outside the faults, and `ticker audit` finds no slot
// missing or doubled (the ticks that waited past their next slot are recorded skipped_overlap).
func TestE2ELimitHoldsUnderFaults(t *testing.T) {
	e := setup(t)
	f := e.f
	f.cli("limit", "put", "api", "--concurrency", "5")
	free := limitNeighbour("api", e.parts)
	var file strings.Builder
	file.WriteString("schedules:\n")
	for i := range 40 {
		fmt.Fprintf(&file, "  - name: slowlim-%02d\n    every: 1s\n    limit: api\n", i) // slow*: the handler's 2 s
	}
	fmt.Fprintf(&file, "  - name: %s\n    every: 1s\n", free)
	path := filepath.Join(t.TempDir(), "limits.yaml")
	if err := os.WriteFile(path, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f.cli("schedule", "apply", "-f", path)
	handlerEnv := []string{"HANDLER_SLEEP_SLOW=2s", "HANDLER_HEARTBEAT=1"}
	flags := []string{"--exec", handlerBin, "--concurrency", "16"}
	ws := []*proc{e.start(handlerEnv, flags...), e.start(handlerEnv, flags...), e.start(handlerEnv, flags...)}
	tk := f.ticker("t1")

	steady := func(what string, d time.Duration) (time.Time, time.Time) {
		from := time.Now()
		time.Sleep(d) // the figures are measured over this span of the fleet's own pace
		t.Logf("%s: %s", what, d)
		return from, time.Now()
	}
	waitFor(t, 60*time.Second, "the first runs of the limit", func() (bool, string) {
		n := len(runsOf(e.executions(), "slowlim-"))
		return n >= 5, fmt.Sprintf("%d runs", n)
	})
	aFrom, aTo := steady("steady before the faults", 20*time.Second)

	owner := ownerOf(t, runsOf(e.executions(), "slowlim-"), ws)
	killAt := time.Now()
	e.kill9(owner)
	ws = slices.DeleteFunc(ws, func(p *proc) bool { return p == owner })
	t.Logf("kill -9 of the limit's owner %s", owner.name)
	time.Sleep(20 * time.Second) // the session (6 s) and the lease (5 s) of the killed owner's runs pass

	frozen := ownerOf(t, runsOf(e.executions(), "slowlim-"), ws)
	stopAt := time.Now()
	frozen.signal(syscall.SIGSTOP)
	time.Sleep(10 * time.Second) // the fault is the freeze: its length, not a wait for the program
	frozen.signal(syscall.SIGCONT)
	t.Logf("SIGSTOP of the limit's next owner %s for 10 s", frozen.name)
	time.Sleep(15 * time.Second) // the woken worker and its successor settle; the figures below exclude this span
	ws = append(ws, e.start(handlerEnv, flags...))
	addAt := time.Now()
	time.Sleep(10 * time.Second) // the rebalance the new worker makes settles
	cFrom, cTo := steady("steady after the faults", 20*time.Second)

	tk.signal(syscall.SIGTERM)
	if err := tk.wait(t, 30*time.Second); err != nil {
		t.Fatalf("ticker: %v", err)
	}
	stoppedAt := time.Now()
	// The ticks emitted ahead still run (or give way to their successors): the last of each key runs.
	waitFor(t, 90*time.Second, "every emitted tick finished", func() (bool, string) {
		rep, _ := runAudit(t, f, "--to", stoppedAt.Format(time.RFC3339), "--grace", "1s")
		open := 0 // the last ticks of each schedule wait for the limit: about 16 s for 40 of 2 s at 5 at once
		for _, s := range rep.Schedules {
			open += s.Pending + s.Missing
		}
		return open == 0, fmt.Sprintf("%d pending or without an outcome yet", open)
	})

	ex := e.executions()
	runs := runsOf(ex, "slowlim-")
	if peak, at := peakAtOnce(runs); peak > 5 {
		t.Errorf("%d runs of the limit at once at %s; want at most 5", peak, at.Format(time.TimeOnly+".000"))
		for _, r := range runs {
			if !r.start.After(at) && r.end.After(at) {
				t.Logf("  running then: %s on %s from %s to %s", r.id, r.worker, r.start.Format(time.TimeOnly+".000"), r.end.Format(time.TimeOnly+".000"))
			}
		}
		if b, err := os.ReadFile(e.log); err == nil {
			_ = os.WriteFile(filepath.Join(os.TempDir(), "limit-handler.log"), b, 0o644)
		}
	} else {
		t.Logf("at most %d runs of the limit at once over %d runs", peak, len(runs))
	}
	for _, span := range [][2]time.Time{{aFrom.Add(5 * time.Second), aTo}, {cFrom, cTo}} {
		rate := float64(startsIn(runs, span[0], span[1])) / span[1].Sub(span[0]).Seconds()
		t.Logf("the limit's throughput from %s to %s: %.2f runs/s", span[0].Format(time.TimeOnly), span[1].Format(time.TimeOnly), rate)
		if rate < 2.25 || rate > 2.75 {
			t.Errorf("the limit's throughput %.2f runs/s; want 2.5 within 10%%", rate)
		}
	}
	checkFreeDelay(t, runsOf(ex, free+"@"), [][2]time.Time{{aFrom, killAt}, {addAt.Add(10 * time.Second), stoppedAt}})
	rep, _ := runAudit(t, f, "--to", stoppedAt.Format(time.RFC3339), "--grace", "1s")
	for _, s := range rep.Schedules {
		if s.Missing != 0 || s.Doubled != 0 || s.RanTwice != 0 {
			t.Errorf("audit of %s: %d missing, %d doubled, %d ran twice", s.Name, s.Missing, s.Doubled, s.RanTwice)
		}
	}
	t.Logf("faults: kill -9 at %s, SIGSTOP at %s, 4th worker at %s", killAt.Format(time.TimeOnly), stopAt.Format(time.TimeOnly), addAt.Format(time.TimeOnly))
	for _, w := range ws {
		e.stop(w)
	}
}

// checkFreeDelay checks that the runs of the schedule without a limit that fell due in spans started within 1 s
// of their slot (p99).
func checkFreeDelay(t *testing.T, runs []limitRun, spans [][2]time.Time) {
	t.Helper()
	var delays []time.Duration
	for _, r := range runs {
		_, at, ok := strings.Cut(r.id, "@")
		slot, err := time.Parse(time.RFC3339, at)
		if !ok || err != nil {
			continue
		}
		for _, s := range spans {
			if !slot.Before(s[0]) && slot.Before(s[1]) {
				delays = append(delays, r.start.Sub(slot))
			}
		}
	}
	if len(delays) < 20 {
		t.Fatalf("%d runs of the schedule without a limit in the steady spans; want at least 20", len(delays))
	}
	slices.Sort(delays)
	p99 := delays[(len(delays)*99+99)/100-1]
	t.Logf("the schedule without a limit on the limit's partition: %d runs, start delay p50 %s, p99 %s", len(delays), delays[len(delays)/2].Round(time.Millisecond), p99.Round(time.Millisecond))
	if p99 > time.Second {
		t.Errorf("start delay p99 %s of the schedule without a limit; want under 1 s", p99)
	}
}

// applyFile writes the apply file text and applies it.
func applyFile(t *testing.T, f *fleet, text string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "apply.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f.cli("schedule", "apply", "-f", path)
}

// TestE2ELimitRate: a limit of 60 starts a minute, and 120 schedules due at one instant: every one runs, and no
// 59 s window of the handlers' own start times holds more than 60 (two workers; the limit's owner keeps the
// window; the second allows for the handlers' spawn, below). Two windows' worth: without the limit all 120
// start at once, and a window shorter than the limit's would let the second 60 in early.
func TestE2ELimitRate(t *testing.T) {
	countOnly(t)
	e := setup(t)
	f := e.f
	f.cli("limit", "put", "sixty", "--rate", "60/1m")
	due := time.Now().Add(40 * time.Second).Truncate(time.Second)
	offset := due.Unix() % 600
	var file strings.Builder
	file.WriteString("schedules:\n")
	const herd = 120
	for i := range herd {
		fmt.Fprintf(&file, "  - name: herd-%03d\n    every: 10m\n    offset: %ds\n    limit: sixty\n", i, offset)
	}
	applyFile(t, f, file.String())
	flags := []string{"--exec", handlerBin, "--concurrency", "32"}
	ws := []*proc{e.start(nil, flags...), e.start(nil, flags...)}
	f.ticker("t1")
	var runs []limitRun
	waitFor(t, due.Sub(time.Now())+4*time.Minute, "every run of the herd", func() (bool, string) {
		runs = runsOf(e.executions(), "herd-")
		return len(runs) >= herd, fmt.Sprintf("%d runs of %d", len(runs), herd)
	})
	ids := map[string]int{}
	for _, r := range runs {
		ids[r.id]++
	}
	if len(ids) != herd {
		t.Errorf("%d ticks ran; want %d", len(ids), herd)
	}
	// The limit counts a start from its handler's release; the handlers' log has each process's own start, later by
	// the spawn, which on these two cores, under CI's two suites at once, has varied by more than a second. So the
	// bound is checked on 59 s windows (a second of that jitter allowed); the 60 s figure is logged beside it.
	worst, strict := 0, 0
	for i, r := range runs {
		worst = max(worst, startsIn(runs[i:], r.start, r.start.Add(time.Minute-time.Second)))
		strict = max(strict, startsIn(runs[i:], r.start, r.start.Add(time.Minute)))
	}
	t.Logf("%d ticks due at %s: the first started at %s, the last at %s; at most %d starts in any 59 s, %d in any 60 s",
		herd, due.Format(time.TimeOnly), runs[0].start.Format(time.TimeOnly+".000"), runs[len(runs)-1].start.Format(time.TimeOnly+".000"), worst, strict)
	if worst > 60 {
		t.Errorf("%d starts in one 59 s window; want at most 60", worst)
	}
	for _, w := range ws {
		e.stop(w)
	}
}

// TestE2ELimitPriorities: in a limit of 1, three schedules of priority 5 every second keep it busy (each run
// 1 s); a schedule of priority 1 every second beside them still runs, within the bound docs/semantics.md states:
// at most (5-p+1) agings later than a priority-5 tick in its place would, which waits here for the three other
// schedules' runs: 5 x 1 s + 3 x 1 s, with a second of slack. The first run is of priority 5.
func TestE2ELimitPriorities(t *testing.T) {
	countOnly(t)
	e := setup(t)
	f := e.f
	f.cli("limit", "put", "one", "--concurrency", "1")
	var file strings.Builder
	file.WriteString("schedules:\n")
	for i := range 3 {
		fmt.Fprintf(&file, "  - name: hi-%d\n    every: 1s\n    limit: one\n    priority: 5\n", i)
	}
	file.WriteString("  - name: lo\n    every: 1s\n    limit: one\n    priority: 1\n")
	applyFile(t, f, file.String())
	w := e.start([]string{"HANDLER_SLEEP=1s"}, "--exec", handlerBin, "--priority-aging", "1s")
	f.ticker("t1")
	waitFor(t, 90*time.Second, "five runs of lo", func() (bool, string) {
		n := len(runsOf(e.executions(), "lo@"))
		return n >= 5, fmt.Sprintf("%d runs of lo", n)
	})
	ex := e.executions()
	all, lo := runsOf(ex, ""), runsOf(ex, "lo@")
	if !strings.HasPrefix(all[0].id, "hi-") {
		t.Errorf("the first run was %s; want one of priority 5", all[0].id)
	}
	if peak, at := peakAtOnce(all); peak > 1 {
		t.Errorf("%d runs at once at %s; want 1", peak, at.Format(time.TimeOnly+".000"))
	}
	bound := 5*time.Second + 3*time.Second + time.Second
	gaps := []time.Duration{lo[0].start.Sub(all[0].start)}
	for i := 1; i < len(lo); i++ {
		gaps = append(gaps, lo[i].start.Sub(lo[i-1].end))
	}
	for i, g := range gaps {
		if g > bound {
			t.Errorf("lo waited %s before its run %d; want at most %s", g.Round(time.Millisecond), i+1, bound)
		}
	}
	t.Logf("lo's waits between its runs: %v (bound %s); %d runs in all", gaps, bound, len(all))
	e.stop(w)
}

// slotDelays returns the start delays (handler start minus slot) of runs, sorted.
func slotDelays(runs []limitRun) []time.Duration {
	var out []time.Duration
	for _, r := range runs {
		_, at, _ := strings.Cut(r.id, "@")
		if slot, err := time.Parse(time.RFC3339, at); err == nil {
			out = append(out, r.start.Sub(slot))
		}
	}
	slices.Sort(out)
	return out
}

// TestE2ELimitFreeStartDelay: the cost of a limit that is not reached, on the start delay: 10 schedules every
// second in a limit of 100 and 10 without a limit, on one worker, 20 s. The limited ones start within 0.5 s of
// the others (p99), both within 2 s (a bound for a busy machine: alone they take under 1 s), and the figures go
// to docs/benchmarks.md.
func TestE2ELimitFreeStartDelay(t *testing.T) {
	countOnly(t)
	e := setup(t)
	f := e.f
	f.cli("limit", "put", "wide", "--concurrency", "100")
	var file strings.Builder
	file.WriteString("schedules:\n")
	for i := range 10 {
		fmt.Fprintf(&file, "  - name: wide-%d\n    every: 1s\n    limit: wide\n  - name: open-%d\n    every: 1s\n", i, i)
	}
	applyFile(t, f, file.String())
	w := e.start(nil, "--exec", handlerBin)
	f.ticker("t1")
	waitFor(t, 60*time.Second, "the first runs", func() (bool, string) {
		n := len(runsOf(e.executions(), "wide-"))
		return n > 0, fmt.Sprintf("%d runs", n)
	})
	from := time.Now().Add(2 * time.Second)
	time.Sleep(22 * time.Second) // the figures are over 20 s of the fleet's own pace
	ex := e.executions()
	p99s := map[string]time.Duration{}
	for _, prefix := range []string{"wide-", "open-"} {
		var in []limitRun
		for _, r := range runsOf(ex, prefix) {
			if r.start.After(from) {
				in = append(in, r)
			}
		}
		d := slotDelays(in)
		if len(d) < 100 {
			t.Fatalf("%s: %d runs in 20 s; want about 200", prefix, len(d))
		}
		p50, p99 := d[len(d)/2], d[(len(d)*99+99)/100-1]
		t.Logf("%s*: %d runs, start delay p50 %s, p99 %s", prefix, len(d), p50.Round(time.Millisecond), p99.Round(time.Millisecond))
		if p99 > 2*time.Second {
			t.Errorf("%s*: start delay p99 %s; want under 2 s", prefix, p99)
		}
		p99s[prefix] = p99
	}
	if extra := p99s["wide-"] - p99s["open-"]; extra > 500*time.Millisecond {
		t.Errorf("the free limit adds %s to the start delay's p99; want at most 0.5 s", extra)
	}
	e.stop(w)
}
