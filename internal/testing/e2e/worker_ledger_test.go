package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// The execution ledger under churn, counted from the handler's own log: 3 workers (default session timeout), a
// 1 s schedule with 4 shards, a 0.3 s exec handler; 6 graceful rolling restarts, then 10 kill -9 of a random
// worker 9 s apart (restarted after 1 s). Every emitted tick must finish; no tick may run again after it
// finished; no two runs of one tick may overlap; a re-run may only follow a run cut off by a kill, and a kill
// cuts off at most one run per partition.
func TestE2ELedgerChurn(t *testing.T) {
	countOnly(t)
	e := setup(t)
	handlerEnv := []string{"HANDLER_SLEEP=300ms", "HANDLER_HEARTBEAT=1"}
	flags := []string{"--exec", handlerBin, "--kill-grace", "1s"} // the default session timeout (6s)
	var mu sync.Mutex
	ws := []*proc{e.start(handlerEnv, flags...), e.start(handlerEnv, flags...), e.start(handlerEnv, flags...)}
	e.waitGroupStable(3)

	prod := e.producer()
	ctx, cancel := context.WithCancel(context.Background())
	var emitted []string
	emitDone := make(chan struct{})
	go func() { // the schedule: every second, 4 shards in one transaction, as the leader emits them
		defer close(emitDone)
		slot := time.Now().Truncate(time.Second)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tk.C:
			}
			slot = slot.Add(time.Second)
			var recs []*kgo.Record
			var ids []string
			for shard := range 4 {
				x := tick.New("beat", slot, shard, 4)
				ids = append(ids, x.ID)
				recs = append(recs, e.tickRecord(x))
			}
			if err := e.tryEmit(prod, recs...); err != nil {
				t.Errorf("emitting slot %s: %v", slot.Format(time.TimeOnly), err) // not Fatal: not the test's goroutine
				return
			}
			mu.Lock()
			emitted = append(emitted, ids...)
			mu.Unlock()
		}
	}()

	replace := func(i int, kill bool) {
		mu.Lock()
		victim := ws[i]
		mu.Unlock()
		if kill {
			e.kill9(victim)
			time.Sleep(time.Second)
		} else {
			e.stop(victim)
		}
		nw := e.start(handlerEnv, flags...)
		mu.Lock()
		ws[i] = nw
		mu.Unlock()
	}
	for i := range 6 { // graceful rolling restarts
		replace(i%3, false)
		time.Sleep(3 * time.Second)
	}
	for range 10 {
		time.Sleep(8 * time.Second)
		replace(rand.N(3), true)
	}
	time.Sleep(3 * time.Second)
	cancel()
	<-emitDone
	mu.Lock()
	ids := append([]string(nil), emitted...)
	mu.Unlock()

	ex := e.waitAllOK(ids, 3*time.Minute)
	e.mu.Lock()
	killed := map[string]bool{}
	for id := range e.killed {
		killed[id] = true
	}
	e.mu.Unlock()

	reruns, cut := 0, map[string]map[int32]int{} // killed worker -> partition -> runs it had cut off
	for _, id := range ids {
		xs := ex[id]
		for i, x := range xs {
			if i == 0 {
				continue
			}
			reruns++
			prev := xs[i-1]
			if prev.done && prev.result == "ok" {
				// The one window no ledger can close: the handler had exited, and its worker was killed before
				// the outcome record was acknowledged. Allowed only when the kill followed the run closely: within
				// what an outcome's write can take on a loaded machine (the suite runs tests in parallel on 2
				// cores). That no outcome of the first run was written is checked exactly below: one per tick.
				e.mu.Lock()
				at, wasKilled := e.killAt[prev.worker]
				e.mu.Unlock()
				if !wasKilled || at.Sub(prev.last) > 2*time.Second || at.Before(prev.last.Add(-50*time.Millisecond)) {
					t.Errorf("tick %s ran again (attempt %s on %s) after it had finished on %s at %s (killed: %v at %s)", id, x.attempt, x.worker, prev.worker,
						prev.last.Format("15:04:05.000"), wasKilled, at.Format("15:04:05.000"))
				} else {
					t.Logf("tick %s: %s was killed %s after its handler exited, before the outcome was written: run again", id, prev.worker, at.Sub(prev.last))
				}
			}
			if !killed[prev.worker] {
				t.Errorf("tick %s ran again on %s although %s, which ran it before, was not killed", id, x.worker, prev.worker)
			}
			if !prev.last.Before(x.start) {
				t.Errorf("tick %s: two runs overlapped: %s's run lived until %s, %s's started at %s", id, prev.worker,
					prev.last.Format(time.RFC3339Nano), x.worker, x.start.Format(time.RFC3339Nano))
			}
			if x.interrupted != "1" || x.attempt != fmt.Sprint(i+1) {
				t.Errorf("tick %s re-run: TICK_INTERRUPTED=%s TICK_ATTEMPT=%s, want 1 and %d", id, x.interrupted, x.attempt, i+1)
			}
			p := partitionOf(t, id, e.parts)
			if cut[prev.worker] == nil {
				cut[prev.worker] = map[int32]int{}
			}
			cut[prev.worker][p]++
		}
	}
	for w, ps := range cut {
		for p, n := range ps {
			if n > 1 {
				t.Errorf("kill of %s cut off %d runs on partition %d, want at most 1", w, n, p)
			}
		}
	}
	// The ledger: exactly one outcome per tick, ok.
	outcomes := map[string][]string{}
	for _, r := range readAll(t, e.brokers, e.names.Results) {
		os, _ := ledger.Outcomes(r.Value)
		for _, o := range os {
			outcomes[o.ID] = append(outcomes[o.ID], o.Status+" by "+o.Worker)
		}
	}
	for _, id := range ids {
		if got := outcomes[id]; len(got) != 1 || !strings.HasPrefix(got[0], "ok ") {
			t.Errorf("outcomes of %s = %v, want one ok", id, got)
		}
	}
	t.Logf("%d ticks emitted and finished, 6 rolling restarts, %d kills, %d re-runs (each after a kill, none overlapping)", len(ids), len(killed), reruns)
	mu.Lock()
	defer mu.Unlock()
	for _, w := range ws {
		e.stop(w)
	}
}

// An interrupted tick is known as interrupted: run again with the attempt counting on (rerun, the default), or
// never again (--on-interrupted skip), recorded as "interrupted".
func TestE2EInterruptedRerunAndSkip(t *testing.T) {
	e := setup(t)
	handlerEnv := []string{"HANDLER_SLEEP=4s", "HANDLER_HEARTBEAT=1"}
	flags := []string{"--exec", handlerBin, "--kill-grace", "1s"}
	prod := e.producer()
	slot := time.Now().Truncate(time.Second)
	x := tick.New("long", slot, 0, 1)
	y := tick.New("long", slot.Add(time.Second), 0, 1)

	started := func(id string, n int) {
		waitFor(t, 40*time.Second, fmt.Sprintf("start %d of %s", n, id), func() (bool, string) {
			got := len(e.executions()[id])
			return got >= n, fmt.Sprintf("%d starts", got)
		})
	}
	a := e.start(handlerEnv, flags...)
	e.emit(prod, e.tickRecord(x))
	started(x.ID, 1)
	e.kill9(a) // mid-run

	b := e.start(handlerEnv, flags...) // rerun (default)
	started(x.ID, 2)
	e.waitAllOK([]string{x.ID}, 40*time.Second)
	xs := e.executions()[x.ID]
	if second := xs[1]; second.attempt != "2" || second.interrupted != "1" || second.worker != b.name {
		t.Errorf("re-run of %s: attempt %s interrupted %s on %s, want 2, 1 on %s", x.ID, second.attempt, second.interrupted, second.worker, b.name)
	}
	if !xs[0].last.Before(xs[1].start) {
		t.Errorf("runs of %s overlapped: first lived until %s, second started %s", x.ID, xs[0].last, xs[1].start)
	}
	if f0, f1 := atoi(xs[0].fence), atoi(xs[1].fence); f0 < 1 || f1 <= f0 {
		t.Errorf("fencing token did not increase across owners: %s then %s", xs[0].fence, xs[1].fence)
	}

	e.emit(prod, e.tickRecord(y))
	started(y.ID, 1)
	e.kill9(b) // mid-run
	c := e.start(handlerEnv, append(flags, "--on-interrupted", "skip")...)
	var out ledger.Outcome
	waitFor(t, 60*time.Second, "the outcome of the interrupted tick", func() (bool, string) {
		for _, r := range readAll(t, e.brokers, e.names.Results) {
			os, _ := ledger.Outcomes(r.Value)
			for _, o := range os {
				if o.ID == y.ID {
					out = o
				}
			}
		}
		return out.Status != "", "no outcome yet"
	})
	if out.Status != ledger.StatusInterrupted || out.Worker != c.name || !out.Interrupted {
		t.Errorf("outcome of %s = %+v, want interrupted by %s", y.ID, out, c.name)
	}
	time.Sleep(2 * time.Second)
	if n := len(e.executions()[y.ID]); n != 1 {
		t.Errorf("%s ran %d times, want 1 (killed mid-run, then skipped)", y.ID, n)
	}
	e.stop(c)
}

// A worker stopped (SIGTERM) while a failed tick waits for its retry: it stops at once, not after the backoff,
// and the partition's next owner goes on with the next attempt at once, not as an interrupted tick: even under
// --on-interrupted skip it runs, unmarked, and succeeds.
func TestE2EStopDuringBackoffHandsOverTheRetry(t *testing.T) {
	e := setup(t)
	prod := e.producer()
	x := tick.New("flaky-handover", time.Now().Truncate(time.Second), 0, 1) // fails attempts 1 and 2
	a := e.start(nil, "--exec", handlerBin, "--backoff", "1m", "--max-backoff", "1m")
	e.emit(prod, e.tickRecord(x))
	waitFor(t, 40*time.Second, "the first attempt to fail", func() (bool, string) {
		xs := e.executions()[x.ID]
		return len(xs) == 1 && xs[0].done, fmt.Sprintf("%d attempts", len(xs))
	})
	stopped := time.Now()
	e.stop(a)
	if d := time.Since(stopped); d > 20*time.Second {
		t.Errorf("the worker took %s to stop: it waited out the backoff", d.Round(time.Millisecond))
	}
	b := e.start(nil, "--exec", handlerBin, "--backoff", "100ms", "--on-interrupted", "skip")
	ex := e.waitAllOK([]string{x.ID}, 60*time.Second)[x.ID]
	if len(ex) != 3 {
		t.Fatalf("%d attempts of %s, want 3", len(ex), x.ID)
	}
	for i, r := range ex[1:] {
		if r.attempt != strconv.Itoa(i+2) || r.interrupted != "0" || r.worker != b.name {
			t.Errorf("attempt %d of %s: attempt %s interrupted %s on %s, want %d, 0 on %s", i+2, x.ID, r.attempt, r.interrupted, r.worker, i+2, b.name)
		}
	}
	var out ledger.Outcome
	for _, r := range readAll(t, e.brokers, e.names.Results) {
		os, _ := ledger.Outcomes(r.Value)
		for _, o := range os {
			if o.ID == x.ID {
				out = o
			}
		}
	}
	if out.Status != ledger.StatusOK || out.Attempts != 3 || out.Interrupted || out.Worker != b.name {
		t.Errorf("outcome of %s = %+v, want ok after 3 attempts by %s, not interrupted", x.ID, out, b.name)
	}
	e.stop(b)
}

func partitionOf(t *testing.T, id string, parts int) int32 {
	t.Helper()
	name, rest, ok := strings.Cut(id, "@")
	if !ok {
		t.Fatalf("tick id %q", id)
	}
	shard := 0
	if _, s, ok := strings.Cut(rest, "#"); ok {
		fmt.Sscan(s, &shard)
	}
	return tick.Partition(name, shard, parts)
}

func atoi(s string) int {
	n := -1
	fmt.Sscan(s, &n)
	return n
}

// A worker frozen with SIGSTOP mid-run: its handler's supervisor kills the handler when the lease runs out
// (while the worker is still stopped), the partition's next owner runs the tick again only after that, and the
// woken worker starts nothing.
func TestE2EFrozenWorker(t *testing.T) {
	e := setup(t)
	handlerEnv := []string{"HANDLER_SLEEP=10s", "HANDLER_HEARTBEAT=1"}
	flags := []string{"--exec", handlerBin, "--kill-grace", "1s", "--lease", "3s"}
	prod := e.producer()
	x := tick.New("frozen", time.Now().Truncate(time.Second), 0, 1)

	a := e.start(handlerEnv, flags...)
	e.emit(prod, e.tickRecord(x))
	waitFor(t, 40*time.Second, "the first run", func() (bool, string) {
		return len(e.executions()[x.ID]) == 1, "not started"
	})
	b := e.start(handlerEnv, flags...)
	stoppedAt := time.Now()
	if err := a.ps.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the re-run on the next owner", func() (bool, string) {
		return len(e.executions()[x.ID]) >= 2, "no re-run yet"
	})
	contAt := time.Now()
	if err := a.ps.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	ex := e.waitAllOK([]string{x.ID}, 60*time.Second)
	xs := ex[x.ID]
	first, second := xs[0], xs[1]
	if first.worker != a.name || second.worker != b.name {
		t.Fatalf("runs by %s then %s, want %s then %s", first.worker, second.worker, a.name, b.name)
	}
	if first.done {
		t.Errorf("the frozen worker's run finished; want it killed when its lease ran out")
	}
	if lived := first.last.Sub(stoppedAt); lived > 3*time.Second+1500*time.Millisecond {
		t.Errorf("the frozen worker's handler lived %s after SIGSTOP, want at most the 3s lease (+1.5s)", lived)
	}
	if !first.last.Before(contAt) {
		t.Errorf("the frozen worker's handler lived until %s, after SIGCONT at %s", first.last, contAt)
	}
	if !first.last.Before(second.start) {
		t.Errorf("runs overlapped: the first lived until %s, the second started %s", first.last, second.start)
	}
	if second.interrupted != "1" || second.attempt != "2" || atoi(second.fence) <= atoi(first.fence) {
		t.Errorf("re-run: attempt %s interrupted %s fence %s (first fence %s), want 2, 1 and a higher fence", second.attempt, second.interrupted, second.fence, first.fence)
	}
	time.Sleep(2 * time.Second) // the woken worker has had time to act on its stale view
	if n := len(e.executions()[x.ID]); n != 2 {
		t.Errorf("%s ran %d times, want 2 (the woken worker must start nothing)", x.ID, n)
	}
	e.stop(a)
	e.stop(b)
	t.Logf("frozen worker's handler killed %s after SIGSTOP; re-run started %s after SIGSTOP", first.last.Sub(stoppedAt), second.start.Sub(stoppedAt))
}
