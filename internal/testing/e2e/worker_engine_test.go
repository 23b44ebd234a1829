package e2e

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
	"github.com/tickgroup/tickgroup/internal/worker"
)

// emittedTick is one tick a test emitted: its ID and its instant.
type emittedTick struct {
	id   string
	slot time.Time
}

// emitter emits, every second, the ticks plan returns for the next slot, lead ahead of it (with not_before set
// to the slot when lead > 0, as the leader does), until stop is called.
type emitter struct {
	mu   sync.Mutex
	all  []emittedTick
	stop func()
}

func (e *env) emitEvery(lead time.Duration, plan func(slot time.Time) []*kgo.Record) *emitter {
	prod := e.producer()
	ctx, cancel := context.WithCancel(context.Background())
	em := &emitter{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		slot := time.Now().Truncate(time.Second).Add(lead)
		for {
			slot = slot.Add(time.Second)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(slot.Add(-lead))):
			}
			recs := plan(slot)
			if err := e.tryEmit(prod, recs...); err != nil {
				e.t.Errorf("emitting slot %s: %v", slot.Format(time.TimeOnly), err)
				return
			}
			em.mu.Lock()
			for _, r := range recs {
				em.all = append(em.all, emittedTick{id: string(r.Key), slot: slot})
			}
			em.mu.Unlock()
		}
	}()
	em.stop = func() {
		cancel()
		<-done
	}
	return em
}

func (em *emitter) ticks(prefix string) []emittedTick {
	em.mu.Lock()
	defer em.mu.Unlock()
	var out []emittedTick
	for _, x := range em.all {
		if strings.HasPrefix(x.id, prefix) {
			out = append(out, x)
		}
	}
	return out
}

// first returns the ID of the first emitted tick whose ID starts with prefix ("" when none yet).
func (em *emitter) first(prefix string) string {
	if xs := em.ticks(prefix); len(xs) > 0 {
		return xs[0].id
	}
	return ""
}

func ids(xs []emittedTick) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.id
	}
	return out
}

// heldTick is the record of tick tk on work partition p, held by workers until its slot.
func (e *env) heldTick(tk tick.Tick, p int32) *kgo.Record {
	slot := tk.Slot
	tk.NotBefore = &slot
	r := e.tickRecord(tk)
	r.Partition = p
	return r
}

// startDelays returns, per tick, how late its first execution started after its slot.
func startDelays(xs []emittedTick, ex map[string][]*execution) []time.Duration {
	var out []time.Duration
	for _, x := range xs {
		if runs := ex[x.id]; len(runs) > 0 {
			out = append(out, runs[0].start.Sub(x.slot))
		}
	}
	slices.Sort(out)
	return out
}

func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, int(math.Ceil(q*float64(len(ds))))-1)]
}

// TestE2ESlowJobDelaysOnlyItsSchedule: on one work partition, "slow" (an 8 s job every 10 s) and "fast" (every
// second, an instant job); "control" (every second) alone on another partition. Counted from the handler's own
// log: fast starts as promptly as control (p99 within 0.3 s of it), every tick runs once, and slow's runs never
// overlap and run in order.
func TestE2ESlowJobDelaysOnlyItsSchedule(t *testing.T) {
	e := setup(t)
	if e.parts < 2 {
		t.Skip("needs two work partitions")
	}
	w := e.start([]string{"HANDLER_SLEEP_SLOW=8s"}, "--exec", handlerBin, "--timeout", "30s")
	e.waitGroupStable(1)
	em := e.emitEvery(2*time.Second, func(slot time.Time) []*kgo.Record {
		recs := []*kgo.Record{e.heldTick(tick.New("fast", slot, 0, 1), 0), e.heldTick(tick.New("control", slot, 0, 1), 1)}
		if slot.Unix()%10 == 0 {
			recs = append(recs, e.heldTick(tick.New("slow", slot, 0, 1), 0))
		}
		return recs
	})
	time.Sleep(25 * time.Second)
	em.stop()
	all := append(append(em.ticks("fast@"), em.ticks("control@")...), em.ticks("slow@")...)
	ex := e.waitAllOK(ids(all), 60*time.Second)

	fast, control := startDelays(em.ticks("fast@"), ex), startDelays(em.ticks("control@"), ex)
	t.Logf("start delay, fast beside slow: p50 %s p99 %s max %s; control: p50 %s p99 %s max %s (%d and %d ticks)",
		pct(fast, .5), pct(fast, .99), pct(fast, 1), pct(control, .5), pct(control, .99), pct(control, 1), len(fast), len(control))
	if pct(fast, .99) > pct(control, .99)+300*time.Millisecond {
		t.Errorf("fast's p99 start delay %s is more than 0.3 s above control's %s: the slow job held it back", pct(fast, .99), pct(control, .99))
	}
	for _, x := range all {
		if n := len(ex[x.id]); n != 1 {
			t.Errorf("tick %s ran %d times, want once", x.id, n)
		}
	}
	slow := em.ticks("slow@")
	if len(slow) < 2 {
		t.Fatalf("%d slow ticks emitted, want at least 2", len(slow))
	}
	for i := 1; i < len(slow); i++ {
		prev, cur := ex[slow[i-1].id][0], ex[slow[i].id][0]
		if cur.start.Before(prev.last) {
			t.Errorf("slow tick %s started at %s, before %s ended at %s", slow[i].id, cur.start.Format("15:04:05.000"), slow[i-1].id, prev.last.Format("15:04:05.000"))
		}
	}
	e.stop(w)
}

// ledgerOwner returns the latest claim in ledger partition p.
func (e *env) ledgerOwner(p int32) ledger.Entry {
	e.t.Helper()
	var last ledger.Entry
	for _, r := range readAll(e.t, e.brokers, e.names.Results) {
		if r.Partition != p || !ledger.IsClaimKey(r.Key) {
			continue
		}
		if c, err := ledger.Decode(r.Value); err == nil && c.Fence >= last.Fence {
			last = c
		}
	}
	if last.Worker == "" {
		e.t.Fatalf("no claim in ledger partition %d", p)
	}
	return last
}

// forge writes entries to ledger partition p as any principal with Write on the results topic could.
func (e *env) forge(p int32, entries ...ledger.Entry) {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var first error
	var mu sync.Mutex
	for _, x := range entries {
		key := []byte(x.ID)
		if x.Kind == ledger.KindClaim {
			key = ledger.ClaimKey(p)
		}
		cl.Produce(ctx, &kgo.Record{Topic: e.names.Results, Partition: p, Key: key, Value: ledger.Encode(x)}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		e.t.Fatal(err)
	}
	if first != nil {
		e.t.Fatal(first)
	}
}

// rssKiB returns the resident set of process pid.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestE2ELedgerForgeries: records written to <ns>.results by a principal with Write on it lose, block and hide
// no tick. One worker runs a schedule every second while the test forges, on the schedule's ledger partition:
// outcomes (with the real tick IDs) for the next 40 work offsets; a claim with token 2^63-1; a claim of another
// worker one token above the owner's; a stale claim announcing a lease of 10^12 ms with a start under it and a
// start copying the owner's identity; 500,000 well-formed entries for far-away offsets. The worker is then
// killed with -9 and a new one takes over. Counted from the handler's own log: every tick ran, none again
// unless marked interrupted (the kill can cut one between its handler's end and its outcome); no start waited on
// a forged lease; the worker's memory did not grow with the forged entries; every refusal is
// counted.
func TestE2ELedgerForgeries(t *testing.T) {
	e := setup(t)
	p := tick.Partition("beat", 0, e.parts)
	w1 := e.start(nil, "--exec", handlerBin)
	e.waitGroupStable(1)
	// Every tick queues (the default policy would skip a tick that fell due while the one before it waited
	// for its start's read-back behind the flood below: coalescing is not losing, but this test counts each).
	beat := func(slot time.Time) tick.Tick {
		tk := tick.New("beat", slot, 0, 1)
		tk.Overlap = tick.OverlapQueue
		return tk
	}
	em := e.emitEvery(0, func(slot time.Time) []*kgo.Record { return []*kgo.Record{e.tickRecord(beat(slot))} })
	defer em.stop()
	waitFor(t, 30*time.Second, "the first ticks to run", func() (bool, string) {
		n := len(e.executions())
		return n >= 3, fmt.Sprintf("%d ran", n)
	})
	owner := e.ledgerOwner(p)

	// Outcomes for the next 40 ticks (each slot is one record and one transaction marker), as the owner.
	ends, err := kafkatest.Admin(t).ListEndOffsets(context.Background(), e.names.Work)
	if err != nil {
		t.Fatal(err)
	}
	lo, _ := ends.Lookup(e.names.Work, p)
	end := lo.Offset
	next := time.Now().Truncate(time.Second).Add(2 * time.Second)
	var forged []ledger.Entry
	for k := range 40 {
		tk := beat(next.Add(time.Duration(k) * time.Second))
		slot := tk.Slot
		forged = append(forged, ledger.Entry{Kind: ledger.KindOutcome, ID: tk.ID, Schedule: "beat", Slot: &slot, Partition: p,
			Offset: end + int64(2*k), Fence: owner.Fence, Worker: owner.Worker, Status: ledger.StatusOK, Attempts: 1, At: time.Now().UTC()})
	}
	// Claims: the highest token; another worker just above the owner; a stale one with an endless lease.
	forged = append(forged,
		ledger.Entry{Kind: ledger.KindClaim, Partition: p, Fence: math.MaxInt64, Worker: "mallory", LeaseMS: 5000, At: time.Now().UTC()},
		ledger.Entry{Kind: ledger.KindClaim, Partition: p, Fence: owner.Fence + 1, Worker: "mallory", LeaseMS: 5000, At: time.Now().UTC()},
		ledger.Entry{Kind: ledger.KindClaim, Partition: p, Fence: 1, Worker: "ghost", LeaseMS: 1_000_000_000_000, At: time.Now().UTC()})
	// Starts: under the stale claim, and copying the owner, for the tick about to be emitted.
	held := beat(next)
	forged = append(forged,
		ledger.Entry{Kind: ledger.KindStarted, ID: held.ID, Partition: p, Offset: end, Fence: 1, Worker: "ghost", Attempt: 1, At: time.Now().UTC()},
		ledger.Entry{Kind: ledger.KindStarted, ID: held.ID, Partition: p, Offset: end, Fence: owner.Fence, Worker: owner.Worker, Attempt: 1, At: time.Now().UTC()})
	e.forge(p, forged...)

	rssBefore := rssKiB(t, w1.ps.Pid())
	const far = 500_000
	flood := make([]ledger.Entry, far)
	for i := range flood {
		flood[i] = ledger.Entry{Kind: ledger.KindOutcome, ID: fmt.Sprintf("beat@far-%d", i), Partition: p, Offset: 1<<40 + int64(i),
			Fence: owner.Fence, Worker: owner.Worker, Status: ledger.StatusOK, Attempts: 1}
	}
	floodAt := time.Now()
	e.forge(p, flood...)
	var m admin.Samples
	waitFor(t, 60*time.Second, "the worker to read the flood", func() (bool, string) {
		m, err = w1.scrape()
		if err != nil {
			return false, err.Error()
		}
		n := m.ByLabel("tickgroup_worker_ledger_refused_total", "reason")["offset_out_of_range"]
		return n >= far, fmt.Sprintf("%v refused as out of range (all: %v)", n, m.ByLabel("tickgroup_worker_ledger_refused_total", "reason"))
	})
	// Writing and reading the flood took this long here; its partition waits that long, and as long again when
	// the next owner reads it in its takeover.
	floodRead := time.Since(floodAt)
	rssAfter := rssKiB(t, w1.ps.Pid())
	t.Logf("the flood written and read in %s; worker RSS before it %d KiB, after %d KiB", floodRead.Round(time.Millisecond), rssBefore, rssAfter)
	if rssAfter-rssBefore > 100<<10 {
		t.Errorf("the worker grew by %d KiB reading %d forged entries, want under 100 MiB", rssAfter-rssBefore, far)
	}
	m, err = w1.scrape()
	if err != nil {
		t.Fatal(err)
	}
	refused := m.ByLabel("tickgroup_worker_ledger_refused_total", "reason")
	t.Logf("refused: %v", refused)
	for _, r := range []string{"fence_out_of_range", "lease_out_of_range", "foreign_claim"} {
		if refused[r] < 1 {
			t.Errorf("refused{reason=%q} = %v, want the forgery counted", r, refused[r])
		}
	}

	time.Sleep(5 * time.Second)
	e.kill9(w1)
	killedAt := time.Now()
	w2 := e.start(nil, "--exec", handlerBin)
	time.Sleep(15 * time.Second)
	em.stop()
	all := em.ticks("beat@")
	ex := e.waitAllOK(ids(all), 60*time.Second)
	// A tick runs again only after a run was cut off and marked so: the kill -9 can land between a handler's
	// end and its outcome (the re-run then carries TICK_INTERRUPTED=1); any other second run is a fault.
	twice := 0
	for _, x := range all {
		runs := ex[x.id]
		for i, run := range runs[min(len(runs), 1):] {
			twice++
			if run.interrupted != "1" {
				t.Errorf("tick %s ran again (run %d of %s) without being marked interrupted", x.id, i+2, attempts(runs))
			}
		}
	}
	delays := startDelays(all, ex)
	t.Logf("%d ticks, %d runs again (each marked interrupted); start delay p50 %s, max %s (worker killed at %s)", len(all), twice,
		pct(delays, .5), pct(delays, 1), killedAt.Format("15:04:05.000"))
	// The bound: the session timeout (6 s) and a lease with its skew (6 s) with room to spare, plus the flood's
	// two readings at the speed this machine read it. A takeover that waited on the forged lease (10^12 ms) would
	// not start the tick at all.
	if worst, limit := pct(delays, 1), 20*time.Second+2*floodRead; worst > limit {
		t.Errorf("a tick started %s after its slot, over %s: a takeover waited on a forged lease", worst, limit)
	}
	e.stop(w2)
}

// TestE2EScaleOutKeepsRuns: one worker runs a 20 s job; 4 s in, two more workers join (the job's partition may
// move), and once the group is stable one of them stops gracefully. Counted from the handler's own log: the job
// ran once, to the end (no run cut, no re-run), and a 1 s schedule on every partition ran every tick once, never
// more than 1 s late.
func TestE2EScaleOutKeepsRuns(t *testing.T) {
	e := setup(t)
	env := []string{"HANDLER_SLEEP_SLOW=20s", "HANDLER_HEARTBEAT=1"}
	flags := []string{"--exec", handlerBin, "--timeout", "1m"}
	w1 := e.start(env, flags...)
	e.waitGroupStable(1)
	slowSent := false // touched by the emitter's goroutine only
	em := e.emitEvery(2*time.Second, func(slot time.Time) []*kgo.Record {
		var recs []*kgo.Record
		for p := range int32(e.parts) {
			recs = append(recs, e.heldTick(tick.New(fmt.Sprintf("beat-%d", p), slot, 0, 1), p))
		}
		if !slowSent {
			slowSent = true
			recs = append(recs, e.heldTick(tick.New("slowjob", slot, 0, 1), tick.Partition("slowjob", 0, e.parts)))
		}
		return recs
	})
	defer em.stop()
	waitFor(t, 20*time.Second, "the slow job to start", func() (bool, string) {
		return len(e.executions()[em.first("slowjob@")]) > 0, "not yet"
	})
	time.Sleep(4 * time.Second)
	w2, w3 := e.start(env, flags...), e.start(env, flags...)
	e.waitGroupStable(3)
	time.Sleep(3 * time.Second)
	e.stop(w2)
	e.waitGroupStable(2)
	time.Sleep(3 * time.Second)
	em.stop()

	slow := em.first("slowjob@")
	beats := em.ticks("beat-")
	ex := e.waitAllOK(append(ids(beats), slow), 60*time.Second)
	if runs := ex[slow]; len(runs) != 1 || !runs[0].done || runs[0].result != "ok" {
		t.Errorf("the slow job ran %d times (%s), want once, to the end", len(runs), attempts(runs))
	}
	late := 0
	for _, x := range beats {
		runs := ex[x.id]
		if len(runs) != 1 {
			t.Errorf("tick %s ran %d times, want once", x.id, len(runs))
			continue
		}
		if d := runs[0].start.Sub(x.slot); d > time.Second {
			late++
			t.Errorf("tick %s started %s after its slot, want at most 1 s", x.id, d.Round(time.Millisecond))
		}
	}
	delays := startDelays(beats, ex)
	t.Logf("%d beat ticks over the scale-out and scale-in: start delay p50 %s, p99 %s, max %s; %d over 1 s",
		len(beats), pct(delays, .5), pct(delays, .99), pct(delays, 1), late)
	e.stop(w3)
	e.stop(w1)
}

// TestE2EHostKillCostsTheSessionTimeout: three hosts, each running `ticker run` and `worker run` with default
// flags (6 s sessions, 5 s leases), a schedule every second and a 0.5 s job. Three times, the host whose worker
// runs the schedule is killed (ticker and worker, kill -9) and restarted 3 s later. Counted from the handler's
// own log: every slot emitted once and run; a slot finishes twice only when the kill came right after its
// run; and no slot starts more than the session timeout + 3 s after its instant: the new owner waits for the
// dead worker's last sign of life plus its lease, not for its own claim plus a lease.
func TestE2EHostKillCostsTheSessionTimeout(t *testing.T) {
	e := setup(t)
	e.f.cli("schedule", "put", "beat", "--every", "1s")
	env := []string{"HANDLER_SLEEP=500ms"}
	ticks := e.f.collect()
	type host struct{ ticker, worker *proc }
	var hosts []host
	startHost := func(i int) host {
		return host{ticker: e.f.start(fmt.Sprintf("ticker%d-%d", i, len(hosts)), "ticker", "run"), worker: e.start(env, "--exec", handlerBin)}
	}
	for i := range 3 {
		hosts = append(hosts, startHost(i))
	}
	waitFor(t, 60*time.Second, "the first slots to run", func() (bool, string) {
		n := len(e.executions())
		return n >= 5, fmt.Sprintf("%d ran", n)
	})
	var killedAt []time.Time
	for range 3 {
		time.Sleep(12 * time.Second)
		// The worker that ran the latest slot owns the schedule's partition.
		var latest *execution
		for _, xs := range e.executions() {
			for _, x := range xs {
				if latest == nil || x.start.After(latest.start) {
					latest = x
				}
			}
		}
		victim := -1
		for i, h := range hosts {
			if h.worker.name == latest.worker {
				victim = i
			}
		}
		if victim < 0 {
			t.Fatalf("no running host has worker %s", latest.worker)
		}
		h := hosts[victim]
		e.kill9(h.worker)
		h.ticker.kill()
		killedAt = append(killedAt, time.Now())
		time.Sleep(3 * time.Second)
		hosts[victim] = startHost(victim)
	}
	time.Sleep(12 * time.Second)
	for _, h := range hosts {
		h.ticker.signal(syscall.SIGTERM)
	}
	for _, h := range hosts {
		_ = h.ticker.wait(t, 30*time.Second)
	}
	time.Sleep(time.Second) // the last transaction's markers reach the collector
	emitted := ticks.of("beat")
	slots := checkSequence(t, emitted, time.Second)
	var all []emittedTick
	for _, s := range emitted {
		all = append(all, emittedTick{id: s.tick.ID, slot: s.tick.StartAt()})
	}
	ex := e.waitAllOK(ids(all), 90*time.Second)
	reruns := 0
	for _, x := range all {
		runs := ex[x.id]
		reruns += len(runs) - 1
		oks := 0
		for _, r := range runs {
			if r.done && r.result == "ok" {
				oks++
				if oks == 2 && !killedRightAfter(killedAt, runs[0].last) {
					t.Errorf("tick %s finished twice, and no kill came right after its first run", x.id)
				}
			}
		}
	}
	delays := startDelays(all, ex)
	t.Logf("%d slots; start delay p50 %s, p99 %s, max %s; %d re-runs of runs cut by a kill", slots,
		pct(delays, .5), pct(delays, .99), pct(delays, 1), reruns)
	if worst, bound := pct(delays, 1), 6*time.Second+3*time.Second; worst > bound {
		t.Errorf("a slot started %s after its instant, want at most the session timeout + 3 s (%s)", worst.Round(time.Millisecond), bound)
	}
	for _, h := range hosts {
		e.stop(h.worker)
	}
}

// killedRightAfter reports whether one of the kills came within half a second after at.
func killedRightAfter(kills []time.Time, at time.Time) bool {
	for _, k := range kills {
		if d := k.Sub(at); d >= -50*time.Millisecond && d <= 500*time.Millisecond {
			return true
		}
	}
	return false
}

// TestE2EForgedCancelCancelsNothing: a cancel record written to every work partition by a principal that is not
// the leader (not in a transaction), with before_version 2^63-1, cancels none of a live schedule's slots: every
// slot emitted runs, and the record is dead-lettered as a forged cancel.
func TestE2EForgedCancelCancelsNothing(t *testing.T) {
	countOnly(t)
	e := setup(t)
	e.f.cli("schedule", "put", "live", "--every", "1s")
	ticks := e.f.collect()
	tk := e.f.ticker("a")
	w := e.start(nil, "--exec", handlerBin)
	waitFor(t, 60*time.Second, "the first slots to run", func() (bool, string) {
		n := len(e.executions())
		return n >= 3, fmt.Sprintf("%d ran", n)
	})
	forged := cancel.Records(tick.Cancel{Schedule: "live", Before: math.MaxInt64, After: time.Now().UTC(), Reason: tick.ReasonPaused}, e.names.Work, e.parts)
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancelCtx := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelCtx()
	if err := cl.ProduceSync(ctx, forged...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	forgedAt := time.Now()
	time.Sleep(12 * time.Second) // past the leader's --lead: ticks emitted before and after the forgery
	tk.signal(syscall.SIGTERM)
	_ = tk.wait(t, 30*time.Second)
	time.Sleep(time.Second)
	var all []emittedTick
	after := 0
	for _, s := range ticks.of("live") {
		all = append(all, emittedTick{id: s.tick.ID, slot: s.tick.StartAt()})
		if s.tick.StartAt().After(forgedAt) {
			after++
		}
	}
	if after < 5 {
		t.Fatalf("%d slots due after the forged cancel, want at least 5", after)
	}
	ex := e.waitAllOK(ids(all), 60*time.Second)
	for _, x := range all {
		if n := len(ex[x.id]); n != 1 {
			t.Errorf("slot %s ran %d times, want once", x.id, n)
		}
	}
	dead := 0
	for _, r := range readAll(t, e.brokers, e.names.DLQ) {
		if header(r, worker.HeaderReason) == "forged_cancel" {
			dead++
		}
	}
	if dead != e.parts {
		t.Errorf("%d forged cancels dead-lettered, want one per work partition (%d)", dead, e.parts)
	}
	t.Logf("%d slots (%d due after the forged cancel) ran once each; %d forged cancels dead-lettered", len(all), after, dead)
	e.stop(w)
}
