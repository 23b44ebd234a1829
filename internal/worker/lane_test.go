package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestLaneRunsPartitionInOrder: the ticks of one partition run in offset order and one at a time; the two
// partitions' lanes run side by side.
func TestLaneRunsPartitionInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 20
	var want [testParts][]string
	for p := range int32(testParts) {
		ticks, _ := b.produceTicks(t, p, fmt.Sprintf("order%d", p), n)
		for _, tk := range ticks {
			want[p] = append(want[p], tk.ID)
		}
	}
	partOf := map[string]int32{}
	for p := range want {
		for _, id := range want[p] {
			partOf[id] = int32(p)
		}
	}

	var (
		mu       sync.Mutex
		got      [testParts][]string
		inflight [testParts]atomic.Int32
		overlaps atomic.Int32
	)
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(func(_ context.Context, tk tick.Tick, _ Attempt) error {
		p := partOf[tk.ID]
		if inflight[p].Add(1) != 1 {
			overlaps.Add(1)
		}
		defer inflight[p].Add(-1)
		mu.Lock()
		got[p] = append(got[p], tk.ID)
		mu.Unlock()
		// A little work, so that a second call of the same lane, if there were one, would overlap this one.
		time.Sleep(2 * time.Millisecond)
		return nil
	}), Deps{})

	kafkatest.Eventually(t, 20*time.Second, "every tick to run", func() bool { return rec.count() >= testParts*n })
	if c := overlaps.Load(); c != 0 {
		t.Errorf("%d calls overlapped another call of the same partition", c)
	}
	mu.Lock()
	defer mu.Unlock()
	for p := range testParts {
		if len(got[p]) != n {
			t.Fatalf("partition %d: %d calls, want %d", p, len(got[p]), n)
		}
		for i := range got[p] {
			if got[p][i] != want[p][i] {
				t.Fatalf("partition %d: call %d ran %s, want %s (offset order)\ngot  %v\nwant %v", p, i, got[p][i], want[p][i], got[p], want[p])
			}
		}
	}
}

// finishedTicksCase writes five ticks to partition 0 and outcome entries for two of them, lets prepare set up
// the group's commit, and checks that a worker runs exactly the other three and commits past all five.
func finishedTicksCase(t *testing.T, prepare func(b *testBundle)) {
	t.Helper()
	b := setup(t)
	ticks, offsets := b.produceTicks(t, 0, "fin", 5)
	finished := map[string]bool{ticks[1].ID: true, ticks[3].ID: true}
	for i, tk := range ticks {
		if finished[tk.ID] {
			slot := tk.Slot
			b.writeLedger(t, 0, ledger.Entry{Kind: ledger.KindOutcome, ID: tk.ID, Schedule: tk.Schedule, Slot: &slot,
				Partition: 0, Offset: offsets[i], Fence: 1, Worker: "old-worker", Attempts: 1, Status: ledger.StatusOK, At: time.Now().UTC()})
		}
	}
	prepare(b)
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{})

	kafkatest.Eventually(t, 10*time.Second, "the commit to pass all five ticks", func() bool { return b.committed(t, 0).At == offsets[4]+1 })
	calls := rec.snapshot()
	var want []string
	for _, tk := range ticks {
		if !finished[tk.ID] {
			want = append(want, tk.ID)
		}
	}
	if got := ids(calls); got != strings.Join(want, " ") {
		t.Fatalf("handler ran %q, want %q (the ticks without an outcome, once each)", got, strings.Join(want, " "))
	}
	// The skipped ticks got no second outcome.
	for id := range finished {
		if n := len(b.entries(t, 0, ledger.KindOutcome, id)); n != 1 {
			t.Errorf("tick %s has %d outcome entries, want the 1 written before the worker started", id, n)
		}
	}
}

// TestLaneSkipsFinishedTicksWithoutLedgerPosition: a group committed by an older build (an offset without the
// ledger metadata) makes takeover read the whole ledger partition; the ticks it has outcomes for are skipped.
func TestLaneSkipsFinishedTicksWithoutLedgerPosition(t *testing.T) {
	t.Parallel()
	finishedTicksCase(t, func(b *testBundle) { b.commit(t, 0, 0, "") })
}

// TestLaneSkipsFinishedTicksOfNewGroup: the same for a group with no commit at all (its offsets expired or were
// deleted while its ticks and outcomes are retained), started at the earliest offset: the start pin must not
// skip the ledger written so far.
func TestLaneSkipsFinishedTicksOfNewGroup(t *testing.T) {
	t.Parallel()
	finishedTicksCase(t, func(*testBundle) {})
}

// formerOwner makes "old-worker" the owner of work partition p with fencing token 1 and the given lease, as
// if it had claimed the partition and committed its start: a claim in the ledger and a commit of work offset 0
// whose metadata points the next owner at that claim.
func (b *testBundle) formerOwner(t *testing.T, p int32, lease time.Duration) {
	t.Helper()
	at := b.writeLedger(t, p, ledger.Entry{Kind: ledger.KindClaim, Partition: p, Fence: 1, Worker: "old-worker",
		At: time.Now().UTC(), LeaseMS: lease.Milliseconds()})
	b.commit(t, p, 0, ledger.EncodeMeta(at, 1))
}

// startedEntry is the started (or, with kind released, the released) entry of attempt n of tk at work offset
// o by old-worker under fencing token 1.
func startedEntry(kind string, tk tick.Tick, p int32, o int64, n int) ledger.Entry {
	slot := tk.Slot
	return ledger.Entry{Kind: kind, ID: tk.ID, Schedule: tk.Schedule, Slot: &slot, Partition: p, Offset: o,
		Fence: 1, Worker: "old-worker", Attempt: n, At: time.Now().UTC()}
}

// claimOf returns the first (takeover) claim of worker id in ledger partition p.
func (b *testBundle) claimOf(t *testing.T, p int32, id string) ledger.Entry {
	t.Helper()
	for _, r := range b.entries(t, p, ledger.KindClaim, "") {
		if r.Entry.Worker == id {
			return r.Entry
		}
	}
	t.Fatalf("no claim of %s in ledger partition %d", id, p)
	return ledger.Entry{}
}

// outcomesOf returns the outcome entries of tick id in ledger partition p written by worker by.
func (b *testBundle) outcomesOf(t *testing.T, p int32, id, by string) []ledger.Entry {
	t.Helper()
	var out []ledger.Entry
	for _, r := range b.entries(t, p, ledger.KindOutcome, id) {
		if r.Entry.Worker == by {
			out = append(out, r.Entry)
		}
	}
	return out
}

// TestLaneRerunsInterruptedTickAfterLease: a tick that a former owner started (attempt 2) and never finished
// runs again as attempt 3, marked interrupted, and not before the former owner's last proof (its start) plus
// the lease its claim announced plus MaxClockSkew: the former owner's run is surely over by then. The other
// ticks run normally.
func TestLaneRerunsInterruptedTickAfterLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const oldLease = 600 * time.Millisecond // longer than the new worker's: the longest announced lease counts
	b.formerOwner(t, 0, oldLease)
	ticks, offsets := b.produceTicks(t, 0, "intr", 3)
	startedAt := time.Now()
	b.writeLedger(t, 0, startedEntry(ledger.KindStarted, ticks[0], 0, offsets[0], 2))

	cfg := b.config("w1")
	cfg.MaxClockSkew = 200 * time.Millisecond
	rec := newRecorder()
	b.start(t, cfg, rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the three ticks to run", func() bool { return rec.count() >= 3 })

	calls := rec.snapshot()
	if got, want := ids(calls), ticks[0].ID+" "+ticks[1].ID+" "+ticks[2].ID; got != want {
		t.Fatalf("handler ran %q, want %q", got, want)
	}
	if a := calls[0].Attempt; a.N != 3 || !a.Interrupted || a.Worker != "w1" {
		t.Errorf("interrupted tick ran with %+v, want N 3 (after the former owner's 2), Interrupted, Worker w1", a)
	}
	for _, c := range calls[1:] {
		if c.Attempt.N != 1 || c.Attempt.Interrupted {
			t.Errorf("tick %s ran with %+v, want N 1, not interrupted", c.ID, c.Attempt)
		}
	}
	if waited, minWait := calls[0].Start.Sub(startedAt), oldLease+cfg.MaxClockSkew; waited < minWait {
		t.Errorf("interrupted tick ran %s after the former owner's start; want at least its lease %s + skew %s",
			waited, oldLease, cfg.MaxClockSkew)
	}
	kafkatest.Eventually(t, 10*time.Second, "the commit to pass the three ticks", func() bool { return b.committed(t, 0).At == offsets[2]+1 })
	if o := b.outcomesOf(t, 0, ticks[0].ID, "w1"); len(o) != 1 || o[0].Status != StatusOK || !o[0].Interrupted || o[0].Attempts != 3 {
		t.Errorf("outcomes of the interrupted tick: %+v, want one ok, interrupted, 3 attempts", o)
	}
}

// TestLaneSkipsInterruptedTick: with OnInterrupted skip, the interrupted tick is not run; its outcome is
// "interrupted", written only once the former owner's run is surely over.
func TestLaneSkipsInterruptedTick(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.formerOwner(t, 0, 300*time.Millisecond)
	ticks, offsets := b.produceTicks(t, 0, "skip", 2)
	startedAt := time.Now()
	b.writeLedger(t, 0, startedEntry(ledger.KindStarted, ticks[0], 0, offsets[0], 1))

	cfg := b.config("w1")
	cfg.OnInterrupted = OnInterruptedSkip
	cfg.MaxClockSkew = 200 * time.Millisecond
	rec := newRecorder()
	b.start(t, cfg, rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the commit to pass both ticks", func() bool { return b.committed(t, 0).At == offsets[1]+1 })

	if got := ids(rec.snapshot()); got != ticks[1].ID {
		t.Fatalf("handler ran %q, want only %q", got, ticks[1].ID)
	}
	o := b.outcomesOf(t, 0, ticks[0].ID, "w1")
	if len(o) != 1 || o[0].Status != StatusInterrupted || !o[0].Interrupted || o[0].Attempts != 1 {
		t.Fatalf("outcomes of the interrupted tick: %+v, want one with status interrupted, Interrupted, 1 attempt", o)
	}
	if o[0].FinishedAt == nil {
		t.Fatal("outcome without finished_at")
	}
	if waited, min := o[0].FinishedAt.Sub(startedAt), 300*time.Millisecond+cfg.MaxClockSkew; waited < min {
		t.Errorf("interrupted outcome written %s after the former owner's start; want at least %s", waited, min)
	}
}

// TestLaneRerunsReleasedTickAtOnce: a released tick (the former owner cut its run off and saw it end) runs
// again at once, interrupted, with the next attempt number: no lease wait.
func TestLaneRerunsReleasedTickAtOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	cfg.Lease, cfg.MaxClockSkew = 3*time.Second, time.Second // a lease wait would be 4s
	b.formerOwner(t, 0, cfg.Lease)
	ticks, offsets := b.produceTicks(t, 0, "rel", 1)
	b.writeLedger(t, 0, startedEntry(ledger.KindStarted, ticks[0], 0, offsets[0], 1))
	b.writeLedger(t, 0, startedEntry(ledger.KindReleased, ticks[0], 0, offsets[0], 1))

	rec := newRecorder()
	b.start(t, cfg, rec.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the released tick to run", func() bool { return rec.count() >= 1 })
	c := rec.snapshot()[0]
	if c.Attempt.N != 2 || !c.Attempt.Interrupted {
		t.Errorf("released tick ran with %+v, want N 2, Interrupted", c.Attempt)
	}
	claim := b.claimOf(t, 0, "w1")
	if waited := c.Start.Sub(claim.At); waited >= cfg.Lease+cfg.MaxClockSkew {
		t.Errorf("released tick ran %s after the new claim: it waited for the lease", waited)
	}
	kafkatest.Eventually(t, 10*time.Second, "the commit to pass the tick", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
}

// laneFence returns the fencing token of w's lane of partition p (0 without a lane or before its claim).
func laneFence(w *Worker, p int32) int64 {
	w.mu.Lock()
	l := w.lanes[p]
	w.mu.Unlock()
	if l == nil {
		return 0
	}
	return l.ledger.Fence()
}

// commitFence returns the fencing token in the commit metadata of work partition p, failing the test when the
// metadata does not parse.
func (b *testBundle) commitFence(t *testing.T, p int32) int64 {
	t.Helper()
	o := b.committed(t, p)
	_, fence, ok := ledger.ParseMeta(o.Metadata)
	if !ok {
		t.Fatalf("commit of partition %d at %d: metadata %q does not parse", p, o.At, o.Metadata)
	}
	return fence
}

// TestLaneFenceIncreasesAcrossOwners: two workers, one after the other, own partition 0; the second one's
// Attempt.Fence is higher, and each commit's metadata carries the committing lane's token.
func TestLaneFenceIncreasesAcrossOwners(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var fences []int64
	for i, id := range []string{"w1", "w2", "w3"} {
		rec := newRecorder()
		tw := b.start(t, b.config(id), rec.handler(nil), Deps{})
		_, offsets := b.produceTicks(t, 0, "fence"+id, 1)
		kafkatest.Eventually(t, 10*time.Second, id+" to run its tick", func() bool { return rec.count() >= 1 })
		kafkatest.Eventually(t, 10*time.Second, id+"'s commit of its tick", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
		a := rec.snapshot()[0].Attempt
		if lf := laneFence(tw.w, 0); a.Fence != lf {
			t.Errorf("%s: Attempt.Fence %d, lane's token %d", id, a.Fence, lf)
		}
		if cf := b.commitFence(t, 0); cf != a.Fence {
			t.Errorf("%s: commit metadata fence %d, want the lane's %d", id, cf, a.Fence)
		}
		if i > 0 && a.Fence <= fences[i-1] {
			t.Errorf("%s: Attempt.Fence %d, not above the former owner's %d", id, a.Fence, fences[i-1])
		}
		fences = append(fences, a.Fence)
		tw.stop(t)
		// The graceful stop's last commit still carries this lane's token.
		if cf := b.commitFence(t, 0); cf != a.Fence {
			t.Errorf("%s stopped: commit metadata fence %d, want %d", id, cf, a.Fence)
		}
	}
	t.Logf("fences %v", fences)
}

// TestLaneFenceOfNewGroupAboveLedger: a group without a commit (its offsets expired, or it was deleted) whose
// ledger holds a claim with token 5 must hand out a higher token: a downstream store that has seen 5 refuses
// anything lower.
func TestLaneFenceOfNewGroupAboveLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.writeLedger(t, 0, ledger.Entry{Kind: ledger.KindClaim, Partition: 0, Fence: 5, Worker: "old-worker",
		At: time.Now().UTC(), LeaseMS: 300})
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{})
	b.produceTicks(t, 0, "newgroup", 1)
	kafkatest.Eventually(t, 10*time.Second, "the tick to run", func() bool { return rec.count() >= 1 })
	if f := rec.snapshot()[0].Attempt.Fence; f <= 5 {
		t.Errorf("Attempt.Fence %d, want above the ledger's last token 5", f)
	}
}

// TestLaneStopDuringBackoffHandsOverTheRetry: a worker that stops (the partition moves) while a failed tick
// waits for its retry gives the tick up at once, with a retry entry in the ledger and no outcome; the next owner
// goes on at once with the next attempt, not as an interrupted tick: even under --on-interrupted skip it runs.
func TestLaneStopDuringBackoffHandsOverTheRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	cfg.Backoff, cfg.MaxBackoff = time.Minute, time.Minute // the stop comes during the backoff
	rec := newRecorder()
	tw := b.start(t, cfg, rec.handler(func(context.Context, tick.Tick, Attempt) error {
		return errors.New("boom")
	}), Deps{})
	ticks, offsets := b.produceTicks(t, 0, "backoff", 1)
	kafkatest.Eventually(t, 10*time.Second, "the retry entry", func() bool {
		return len(retries(b.entries(t, 0, ledger.KindReleased, ticks[0].ID))) == 1
	})
	stopped := time.Now()
	tw.stop(t)
	if d := time.Since(stopped); d > 10*time.Second {
		t.Errorf("the worker took %s to stop: it waited out the backoff", d)
	}
	if n := len(b.entries(t, 0, ledger.KindOutcome, ticks[0].ID)); n != 0 {
		t.Errorf("the tick has %d outcomes, want none", n)
	}
	if c := b.committed(t, 0).At; c > offsets[0] {
		t.Errorf("committed %d: past the tick at %d", c, offsets[0])
	}

	cfg2 := b.config("w2")
	cfg2.OnInterrupted = OnInterruptedSkip
	cfg2.Lease, cfg2.MaxClockSkew = 3*time.Second, time.Second // a lease wait would be 4s
	rec2 := newRecorder()
	b.start(t, cfg2, rec2.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the next owner's attempt", func() bool { return rec2.count() >= 1 })
	c := rec2.snapshot()[0]
	if c.ID != ticks[0].ID || c.Attempt.N != 2 || c.Attempt.Interrupted {
		t.Errorf("next owner ran %s with %+v, want %s as attempt 2, not interrupted", c.ID, c.Attempt, ticks[0].ID)
	}
	if waited := c.Start.Sub(b.claimOf(t, 0, "w2").At); waited >= cfg2.Lease+cfg2.MaxClockSkew {
		t.Errorf("the tick ran %s after the new claim: it waited for the lease", waited)
	}
	kafkatest.Eventually(t, 10*time.Second, "the tick's commit", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
	if o := b.outcomesOf(t, 0, ticks[0].ID, "w2"); len(o) != 1 || o[0].Status != StatusOK || o[0].Attempts != 2 || o[0].Interrupted {
		t.Errorf("outcomes %+v, want one ok after 2 attempts, not interrupted", o)
	}
}

// TestLaneShutdownCancelsAndReleases: a handler still running when the grace period ends has its context
// cancelled; the worker then records a release in the ledger and does not commit past the tick, and the next
// owner runs it again at once (no lease wait) as an interrupted second attempt.
func TestLaneShutdownCancelsAndReleases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	cfg.Grace = 200 * time.Millisecond
	rec := newRecorder()
	tw := b.start(t, cfg, rec.handler(func(ctx context.Context, _ tick.Tick, _ Attempt) error {
		<-ctx.Done()
		return ctx.Err()
	}), Deps{})
	ticks, offsets := b.produceTicks(t, 0, "grace", 1)
	select {
	case <-rec.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not start within 10s")
	}
	tw.stop(t)

	calls := rec.snapshot()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	if !errors.Is(calls[0].Cause, errGraceExpired) {
		t.Errorf("handler's context ended with cause %v, want %v", calls[0].Cause, errGraceExpired)
	}
	rel := b.entries(t, 0, ledger.KindReleased, ticks[0].ID)
	if len(rel) != 1 || rel[0].Entry.Worker != "w1" || rel[0].Entry.Attempt != 1 {
		t.Fatalf("released entries of the cancelled tick: %+v, want one by w1 for attempt 1", rel)
	}
	if n := len(b.entries(t, 0, ledger.KindOutcome, ticks[0].ID)); n != 0 {
		t.Errorf("the cancelled tick has %d outcomes, want none", n)
	}
	if c := b.committed(t, 0).At; c > offsets[0] {
		t.Errorf("committed %d: past the cancelled tick at %d", c, offsets[0])
	}

	cfg2 := b.config("w2")
	cfg2.Lease, cfg2.MaxClockSkew = 3*time.Second, time.Second // a lease wait would be 4s
	rec2 := newRecorder()
	b.start(t, cfg2, rec2.handler(nil), Deps{})
	kafkatest.Eventually(t, 10*time.Second, "the next owner to rerun the tick", func() bool { return rec2.count() >= 1 })
	c := rec2.snapshot()[0]
	if c.ID != ticks[0].ID || c.Attempt.N != 2 || !c.Attempt.Interrupted {
		t.Errorf("next owner ran %s with %+v, want %s as attempt 2, interrupted", c.ID, c.Attempt, ticks[0].ID)
	}
	if waited := c.Start.Sub(b.claimOf(t, 0, "w2").At); waited >= cfg2.Lease+cfg2.MaxClockSkew {
		t.Errorf("the released tick ran %s after the new claim: it waited for the lease", waited)
	}
}

// TestLaneRunOutlivesRevocation: when a second worker joins, the partition moved to it is revoked from the
// first worker mid-run. The run goes on (its lease renewed in the ledger) and finishes with its outcome; the new
// owner never runs that tick, while it runs another schedule's tick of the same partition meanwhile.
func TestLaneRunOutlivesRevocation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	release := make(chan struct{})
	rec1 := newRecorder()
	b.start(t, cfg, rec1.handler(func(ctx context.Context, _ tick.Tick, _ Attempt) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}), Deps{})
	var ticks [testParts]tick.Tick
	for p := range int32(testParts) {
		tk, _ := b.produceTicks(t, p, fmt.Sprintf("revoke%d", p), 1)
		ticks[p] = tk[0]
	}
	for range testParts {
		select {
		case <-rec1.started:
		case <-time.After(10 * time.Second):
			t.Fatal("w1's handlers did not both start within 10s")
		}
	}

	rec2 := newRecorder()
	b.start(t, b.config("w2"), rec2.handler(nil), Deps{})
	var p int32 = -1
	kafkatest.Eventually(t, 20*time.Second, "w2 to claim a partition", func() bool {
		for q := range int32(testParts) {
			for _, r := range b.entries(t, q, ledger.KindClaim, "") {
				if r.Entry.Worker == "w2" {
					p = q
					return true
				}
			}
		}
		return false
	})
	other, _ := b.produceTicks(t, p, "other", 1)
	kafkatest.Eventually(t, 20*time.Second, "w2 to run the other schedule's tick beside w1's run", func() bool { return rec2.count() >= 1 })
	// w1's run outlives several of its leases: its own renewals in the ledger say so.
	kafkatest.Eventually(t, 20*time.Second, "three renewals of w1's run", func() bool {
		return len(b.entries(t, p, ledger.KindRenewed, ticks[p].ID)) >= 3
	})
	if n := rec1.count(); n != 0 {
		t.Fatalf("%d of w1's runs ended before they were let go: %+v", n, rec1.snapshot())
	}
	close(release)
	kafkatest.Eventually(t, 10*time.Second, "w1's runs to finish", func() bool { return rec1.count() >= testParts })
	kafkatest.Eventually(t, 10*time.Second, "the outcome of w1's run on the moved partition", func() bool {
		return len(b.outcomesOf(t, p, ticks[p].ID, "w1")) == 1
	})
	for _, c := range rec1.snapshot() {
		if c.Cause != nil {
			t.Errorf("w1's run of %s was cut: %v", c.ID, c.Cause)
		}
	}
	if got := ids(rec2.snapshot()); got != other[0].ID {
		t.Errorf("w2 ran %q, want only %q (w1's run of %s must not run again)", got, other[0].ID, ticks[p].ID)
	}
	if n := len(b.entries(t, p, ledger.KindRenewed, ticks[p].ID)); n < 3 {
		t.Errorf("%d renewals of w1's run, want several over its leases", n)
	}
	kafkatest.Eventually(t, 10*time.Second, "w2 to commit past both ticks", func() bool {
		return b.committed(t, p).At > b.endOffset(t, b.names.Work, p)-1
	})
}

// TestLaneCommitsEveryFinishedOffset: however commits coalesce, the committed offset of each partition ends at
// its end offset once every tick ran.
func TestLaneCommitsEveryFinishedOffset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	reg := prometheus.NewRegistry()
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{Registerer: reg})
	const n = 200
	for round := range 4 { // in rounds, so that some arrive while commits are in flight
		for p := range int32(testParts) {
			b.produceTicks(t, p, fmt.Sprintf("commit%d-%d", p, round), n/4)
		}
	}
	for p := range int32(testParts) {
		end := b.endOffset(t, b.names.Work, p)
		kafkatest.Eventually(t, 20*time.Second, "the commit to reach the end", func() bool { return b.committed(t, p).At == end })
	}
	if got := rec.count(); got != testParts*n {
		t.Errorf("%d handler calls, want %d", got, testParts*n)
	}
	t.Logf("%d ticks, %v commits", testParts*n, metricValue(t, reg, "tickgroup_worker_commits_total"))
}

// TestLaneIgnoresBadLedgerEntries: records of the ledger partition that are not readable entries (not JSON, an
// unknown major version) are ignored and counted; the lane takes over and runs its ticks.
func TestLaneIgnoresBadLedgerEntries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.writeRaw(t, 0, []byte("junk"), []byte("{not json"))
	b.writeRaw(t, 0, ledger.ClaimKey(0), []byte(`{"v":99,"kind":"claim","partition":0,"fence":9,"worker":"future"}`))
	b.commit(t, 0, 0, "") // no ledger position: the whole partition is read
	reg := prometheus.NewRegistry()
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{Registerer: reg})
	_, offsets := b.produceTicks(t, 0, "bad", 2)
	kafkatest.Eventually(t, 10*time.Second, "the commit to pass both ticks", func() bool { return b.committed(t, 0).At == offsets[1]+1 })
	if got := rec.count(); got != 2 {
		t.Errorf("%d handler calls, want 2", got)
	}
	if got := metricValue(t, reg, "tickgroup_worker_ledger_bad_entries_total"); got != 2 {
		t.Errorf("tickgroup_worker_ledger_bad_entries_total = %v, want 2", got)
	}
}

// failNextLedgerWrite makes the broker refuse, with a non-retriable error, the next produce request to ledger
// partition p (a worker's first is its takeover claim). It reports through the returned channel when it has.
func (b *testBundle) failNextLedgerWrite(t *testing.T, p int32) <-chan time.Time {
	t.Helper()
	refused, _ := b.refuseLedgerWrites(t, p, false)
	return refused
}

// refuseLedgerWrites makes the broker refuse, with an error the client does not retry (refuseProduce), produce requests to ledger partition
// p: the next one, or with keep every one until stop is called. refused receives the time of the first
// refusal.
func (b *testBundle) refuseLedgerWrites(t *testing.T, p int32, keep bool) (refused <-chan time.Time, stop func()) {
	t.Helper()
	return b.refuseProduce(t, b.names.Results, p, keep)
}

// refuseProduce makes the broker refuse, with an error the client does not retry by itself (UNKNOWN_SERVER_ERROR:
// the record fails at once, as after the delivery timeout of an outage), produce requests to partition p of topic:
// the next one, or with keep every one until stop is called. refused receives the time of the first refusal.
func (b *testBundle) refuseProduce(t *testing.T, topic string, p int32, keep bool) (refused <-chan time.Time, stop func()) {
	t.Helper()
	return b.refuseProduceWith(t, topic, p, keep, kerr.UnknownServerError)
}

// refuseProduceWith is refuseProduce with the error code of code.
func (b *testBundle) refuseProduceWith(t *testing.T, topic string, p int32, keep bool, code *kerr.Error) (refused <-chan time.Time, stop func()) {
	t.Helper()
	done := make(chan time.Time, 1)
	var once sync.Once
	var stopped atomic.Bool
	// Produce requests name topics by ID from version 13 on.
	tds, err := b.adm.ListTopics(t.Context(), topic)
	if err != nil || tds[topic].Err != nil {
		t.Fatalf("describing %s: %v %v", topic, err, tds[topic].Err)
	}
	id := tds[topic].ID
	b.cluster.ControlKey(int16(kmsg.Produce), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		if stopped.Load() {
			b.cluster.DropControl()
			return nil, nil, false
		}
		req := kr.(*kmsg.ProduceRequest)
		hit := false
		for _, tp := range req.Topics {
			for _, pp := range tp.Partitions {
				hit = hit || (tp.Topic == topic || tp.TopicID == id) && pp.Partition == p
			}
		}
		if !hit {
			return nil, nil, false
		}
		if keep {
			b.cluster.KeepControl()
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, pp := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = pp.Partition
				rp.ErrorCode = code.Code
				rp.BaseOffset = -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		once.Do(func() { done <- time.Now() })
		return resp, nil, true
	})
	return done, func() { stopped.Store(true) }
}

// TestLaneTakeoverRetryKeepsLedger: when the first claim of a takeover fails (here: the broker refuses the
// write), the lane claims again, and what it read of the ledger before the failure still counts: a tick with
// an outcome there is not run again.
func TestLaneTakeoverRetryKeepsLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ticks, offsets := b.produceTicks(t, 0, "retry", 2)
	slot := ticks[0].Slot
	b.writeLedger(t, 0, ledger.Entry{Kind: ledger.KindOutcome, ID: ticks[0].ID, Schedule: ticks[0].Schedule, Slot: &slot,
		Partition: 0, Offset: offsets[0], Fence: 1, Worker: "old-worker", Attempts: 1, Status: ledger.StatusOK, At: time.Now().UTC()})
	b.commit(t, 0, 0, "") // no ledger position: the whole partition is read
	refused := b.failNextLedgerWrite(t, 0)

	cfg := b.config("w1")
	cfg.Backoff, cfg.MaxBackoff = time.Second, time.Second // the retry comes well after the ledger was read
	rec := newRecorder()
	b.start(t, cfg, rec.handler(nil), Deps{})
	select {
	case <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("the first claim was not written within 10s")
	}
	kafkatest.Eventually(t, 10*time.Second, "the commit to pass both ticks", func() bool { return b.committed(t, 0).At == offsets[1]+1 })
	if got := ids(rec.snapshot()); got != ticks[1].ID {
		t.Fatalf("handler ran %q, want only %q: the finished tick ran again", got, ticks[1].ID)
	}
}

// refuseCommits makes the broker refuse every OffsetCommit with REBALANCE_IN_PROGRESS (as it does for as long as
// a classic-protocol rebalance lasts) until the returned function is called.
func (b *testBundle) refuseCommits(t *testing.T) (stop func()) {
	t.Helper()
	var done atomic.Bool
	b.cluster.ControlKey(int16(kmsg.OffsetCommit), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		if done.Load() {
			b.cluster.DropControl()
			return nil, nil, false
		}
		b.cluster.KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, tp := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, pp := range tp.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = pp.Partition, kerr.RebalanceInProgress.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	return func() { done.Store(true) }
}

// TestLaneNextOwnerAfterRefusedCommits: the first owner of a new group's partition runs ticks while every commit
// of it is refused (its start pin included), then stops. The next owner finds no commit; it must still learn
// from the ledger that those ticks have outcomes, and not run them again.
func TestLaneNextOwnerAfterRefusedCommits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	allow := b.refuseCommits(t)
	rec1 := newRecorder()
	w1 := b.start(t, b.config("w1"), rec1.handler(nil), Deps{})
	ticks, _ := b.produceTicks(t, 0, "refused", 3)
	kafkatest.Eventually(t, 10*time.Second, "w1 to run the three ticks", func() bool { return rec1.count() >= 3 })
	kafkatest.Eventually(t, 10*time.Second, "w1's outcomes", func() bool { return len(b.entries(t, 0, ledger.KindOutcome, "")) >= 3 })
	w1.stop(t)
	if c := b.committed(t, 0); c.At >= 0 {
		t.Fatalf("partition 0 has a commit at %d although every commit was refused", c.At)
	}
	allow()

	rec2 := newRecorder()
	b.start(t, b.config("w2"), rec2.handler(nil), Deps{})
	more, offsets := b.produceTicks(t, 0, "refused-more", 1)
	kafkatest.Eventually(t, 10*time.Second, "w2 to run the new tick", func() bool { return rec2.count() >= 1 })
	kafkatest.Eventually(t, 10*time.Second, "w2's commit past the new tick", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
	if f1, f2 := rec1.snapshot()[0].Attempt.Fence, rec2.snapshot()[0].Attempt.Fence; f2 <= f1 {
		t.Errorf("w2's Attempt.Fence %d is not above w1's %d", f2, f1)
	}
	if got := ids(rec2.snapshot()); got != more[0].ID {
		t.Errorf("w2 ran %q, want only the new tick %q: the ticks w1 finished (%s %s %s) ran again", got, more[0].ID,
			ticks[0].ID, ticks[1].ID, ticks[2].ID)
	}
}

// TestLaneInterruptedWaitEndsWithFormerOwnersEntry: while the new owner waits out the lease of a tick the former
// owner started, that owner's outcome (the tick finished after all: not run again) or release (its run is
// over: run again at once) ends the wait.
func TestLaneInterruptedWaitEndsWithFormerOwnersEntry(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{ledger.KindOutcome, ledger.KindReleased} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			cfg := b.config("w1")
			cfg.Lease, cfg.MaxClockSkew = 3*time.Second, time.Second // the wait would be 4s
			b.formerOwner(t, 0, cfg.Lease)
			ticks, offsets := b.produceTicks(t, 0, "late"+kind, 1)
			b.writeLedger(t, 0, startedEntry(ledger.KindStarted, ticks[0], 0, offsets[0], 1))
			rec := newRecorder()
			b.start(t, cfg, rec.handler(nil), Deps{})
			kafkatest.Eventually(t, 10*time.Second, "w1's claim", func() bool {
				for _, r := range b.entries(t, 0, ledger.KindClaim, "") {
					if r.Entry.Worker == "w1" {
						return true
					}
				}
				return false
			})
			e := startedEntry(kind, ticks[0], 0, offsets[0], 1)
			if kind == ledger.KindOutcome {
				e.Attempt, e.Attempts, e.Status = 0, 1, ledger.StatusOK
			}
			b.writeLedger(t, 0, e)
			claim := b.claimOf(t, 0, "w1")
			kafkatest.Eventually(t, 10*time.Second, "the commit to pass the tick", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
			if waited := time.Since(claim.At); waited >= cfg.Lease+cfg.MaxClockSkew {
				t.Errorf("the tick was decided %s after the new claim: the former owner's %s did not end the wait", waited, kind)
			}
			calls := rec.snapshot()
			switch kind {
			case ledger.KindOutcome:
				if len(calls) != 0 {
					t.Errorf("handler ran %q; the former owner's outcome says the tick is finished", ids(calls))
				}
			case ledger.KindReleased:
				if len(calls) != 1 || calls[0].Attempt.N != 2 || !calls[0].Attempt.Interrupted {
					t.Errorf("calls %+v, want one: attempt 2, interrupted", calls)
				}
			}
		})
	}
}

// TestLaneClaimsAboveHighestTokenInLedger: claims in the ledger after the committed one (an owner that claimed
// and never committed) push the new token above all of them.
func TestLaneClaimsAboveHighestTokenInLedger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.formerOwner(t, 0, 300*time.Millisecond) // token 1, committed
	b.writeLedger(t, 0, ledger.Entry{Kind: ledger.KindClaim, Partition: 0, Fence: 4, Worker: "never-committed",
		At: time.Now().UTC(), LeaseMS: 300})
	rec := newRecorder()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{})
	b.produceTicks(t, 0, "above", 1)
	kafkatest.Eventually(t, 10*time.Second, "the tick to run", func() bool { return rec.count() >= 1 })
	if f := rec.snapshot()[0].Attempt.Fence; f != 5 {
		t.Errorf("Attempt.Fence %d, want 5: one above the highest claim in the ledger", f)
	}
}

// TestLaneClaimsAgainAfterForeignClaim: a claim of another worker follows the lane's in the ledger while the
// group still assigns the partition to this worker (a forged record: a real new owner gets the partition only
// after this worker lost it). The lane does not stop: it counts the claim, claims the partition again above it,
// and the next tick runs once, under the new token.
func TestLaneClaimsAgainAfterForeignClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := newRecorder()
	reg := prometheus.NewRegistry()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{Registerer: reg})
	b.produceTicks(t, 0, "before", 1)
	kafkatest.Eventually(t, 10*time.Second, "the first tick to run", func() bool { return rec.count() >= 1 })
	f := rec.snapshot()[0].Attempt.Fence
	b.writeLedger(t, 0, ledger.Entry{Kind: ledger.KindClaim, Partition: 0, Fence: f + 1, Worker: "usurper",
		At: time.Now().UTC(), LeaseMS: 300})

	ticks, _ := b.produceTicks(t, 0, "after", 3)
	kafkatest.Eventually(t, 20*time.Second, "the ticks after the foreign claim to run", func() bool { return rec.count() >= 4 })
	calls := rec.snapshot()
	if got, want := ids(calls[1:]), ticks[0].ID+" "+ticks[1].ID+" "+ticks[2].ID; got != want {
		t.Fatalf("handler ran %q after the foreign claim, want %q", got, want)
	}
	for _, c := range calls[1:] {
		if c.Attempt.Fence <= f+1 {
			t.Errorf("tick %s ran under token %d, want above the foreign claim's %d", c.ID, c.Attempt.Fence, f+1)
		}
		if n := len(b.outcomesOf(t, 0, c.ID, "w1")); n != 1 {
			t.Errorf("tick %s has %d outcomes, want 1", c.ID, n)
		}
	}
	if n := metricValue(t, reg, "tickgroup_worker_ledger_refused_total"); n < 1 {
		t.Errorf("tickgroup_worker_ledger_refused_total = %v, want the foreign claim counted", n)
	}
}

// TestLaneForeignClaimBeforeReadBack: a claim of another worker lands right after the lane's first claim, before
// the lane has read its own back (the broker holds the reader's first fetch of the ledger partition until the
// foreign claim is appended). The lane's claim never stood; the group still assigns the partition to this
// worker, so the lane claims again above the foreign one and runs every tick once, under its new token.
func TestLaneForeignClaimBeforeReadBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ticks, _ := b.produceTicks(t, 0, "held", 3)
	tds, err := b.adm.ListTopics(t.Context(), b.names.Results)
	if err != nil || tds[b.names.Results].Err != nil {
		t.Fatalf("describing %s: %v %v", b.names.Results, err, tds[b.names.Results].Err)
	}
	resultsID := tds[b.names.Results].ID
	var forged atomic.Bool
	var forgeErr atomic.Pointer[error]
	b.cluster.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		req := kr.(*kmsg.FetchRequest)
		hit := false
		for _, tp := range req.Topics {
			for _, pp := range tp.Partitions {
				hit = hit || (tp.Topic == b.names.Results || tp.TopicID == resultsID) && pp.Partition == 0 && pp.FetchOffset == 0
			}
		}
		if forged.Load() {
			b.cluster.DropControl()
			return nil, nil, false
		}
		if !hit {
			return nil, nil, false // an unrelated fetch: not handled, so the function stays for the reader's
		}
		// The reader starts once its claim is acknowledged: the claim is at offset 0. Append the foreign claim
		// (on the test client's own connection) before this fetch is served.
		b.cluster.SleepControl(func() {
			foreign := ledger.Entry{Kind: ledger.KindClaim, Partition: 0, Fence: 2, Worker: "usurper", At: time.Now().UTC(), LeaseMS: 300}
			r := &kgo.Record{Topic: b.names.Results, Partition: 0, Key: ledger.ClaimKey(0), Value: ledger.Encode(foreign)}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := b.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				forgeErr.Store(&err)
			}
			forged.Store(true)
		})
		return nil, nil, false
	})
	rec := newRecorder()
	reg := prometheus.NewRegistry()
	b.start(t, b.config("w1"), rec.handler(nil), Deps{Registerer: reg})
	kafkatest.Eventually(t, 20*time.Second, "the ticks to run", func() bool { return rec.count() >= len(ticks) })
	if !forged.Load() || forgeErr.Load() != nil {
		t.Fatalf("the foreign claim was not written before the reader's first fetch (error: %v)", forgeErr.Load())
	}
	calls := rec.snapshot()
	if got, want := ids(calls), ticks[0].ID+" "+ticks[1].ID+" "+ticks[2].ID; got != want {
		t.Fatalf("handler ran %q, want %q", got, want)
	}
	for _, c := range calls {
		if c.Attempt.Fence <= 2 {
			t.Errorf("tick %s ran under token %d, want above the foreign claim's 2", c.ID, c.Attempt.Fence)
		}
		if n := len(b.outcomesOf(t, 0, c.ID, "w1")); n != 1 {
			t.Errorf("tick %s has %d outcomes, want 1", c.ID, n)
		}
	}
	all := b.entries(t, 0, ledger.KindClaim, "")
	if len(all) < 3 || all[0].Entry.Worker != "w1" || all[1].Entry.Worker != "usurper" {
		t.Fatalf("the ledger's first claims are %+v, want w1's and then the foreign one", all[:min(len(all), 2)])
	}
	var claims []int64
	for _, r := range all {
		if r.Entry.Worker == "w1" {
			claims = append(claims, r.Entry.Fence)
		}
	}
	if len(claims) < 2 || claims[0] != 1 || claims[len(claims)-1] <= 2 {
		t.Errorf("w1's claims carry tokens %v, want 1 (which never stood) and one above the foreign claim", claims)
	}
	if n := metricValue(t, reg, "tickgroup_worker_ledger_refused_total"); n < 1 {
		t.Errorf("tickgroup_worker_ledger_refused_total = %v, want the foreign claim counted", n)
	}
}

// TestLaneLeaseRenewedWhileHandlerRuns: a handler that runs for several leases is not cut off: the lane renews
// its lease (Lease/5) by claims read back from the ledger.
func TestLaneLeaseRenewedWhileHandlerRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	rec := newRecorder()
	var extended atomic.Bool
	b.start(t, cfg, rec.handler(func(ctx context.Context, _ tick.Tick, a Attempt) error {
		if a.Lease == nil || a.Lease().IsZero() {
			return errors.New("no lease in the attempt")
		}
		first := a.Lease()
		timer := time.NewTimer(4 * cfg.Lease)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-timer.C:
		}
		extended.Store(a.Lease().After(first.Add(2 * cfg.Lease)))
		return nil
	}), Deps{})
	long, offsets := b.produceTicks(t, 0, "long", 1)
	kafkatest.Eventually(t, 10*time.Second, "the long tick's commit", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
	calls := rec.snapshot()
	if len(calls) != 1 || calls[0].Cause != nil {
		t.Fatalf("calls %+v, want one, never cancelled", calls)
	}
	if !extended.Load() {
		t.Error("the lease deadline did not move on while the handler ran")
	}
	if n := len(b.entries(t, 0, ledger.KindRenewed, long[0].ID)); n < 3 {
		t.Errorf("%d renewals of the run in the ledger, want several over 4 leases", n)
	}
}

// TestLaneLeaseExpiresWhenOwnershipCannotBeProven: when the lane cannot write its renewals (the ledger refuses
// them), the running handler is cancelled with errLeaseExpired at the lease's end, not later; once the ledger
// takes writes again the tick is retried, as an interrupted attempt (the cut run may have had effects), and
// succeeds.
func TestLaneLeaseExpiresWhenOwnershipCannotBeProven(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	rec, ticks, offsets := cutByLease(t, b, cfg)
	kafkatest.Eventually(t, 10*time.Second, "the retry's commit", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
	calls := rec.snapshot()
	if len(calls) != 2 || calls[1].Attempt.N != 2 || !calls[1].Attempt.Interrupted {
		t.Fatalf("calls %+v, want two, the second attempt 2, interrupted", calls)
	}
	if o := b.outcomesOf(t, 0, ticks[0].ID, "w1"); len(o) != 1 || o[0].Status != StatusOK || o[0].Attempts != 2 || !o[0].Interrupted {
		t.Errorf("outcomes %+v, want one ok after 2 attempts, interrupted", o)
	}
	if r := retries(b.entries(t, 0, ledger.KindReleased, ticks[0].ID)); len(r) != 0 {
		t.Errorf("retry entries %+v after a run cut by its lease, want none (the tick is interrupted, not retried)", r)
	}
}

// TestLaneLeaseCutNotRunAgainUnderSkip: under --on-interrupted skip, a run cut off by its lease on a live worker
// is not run again: the tick's outcome is interrupted and its offset is committed.
func TestLaneLeaseCutNotRunAgainUnderSkip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	cfg.OnInterrupted = OnInterruptedSkip
	rec, ticks, offsets := cutByLease(t, b, cfg)
	kafkatest.Eventually(t, 10*time.Second, "the tick's commit", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
	if n := len(rec.snapshot()); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
	if o := b.outcomesOf(t, 0, ticks[0].ID, "w1"); len(o) != 1 || o[0].Status != StatusInterrupted || o[0].Attempts != 1 {
		t.Errorf("outcomes %+v, want one interrupted after 1 attempt", o)
	}
}

// cutByLease starts a worker with cfg whose handler waits for its context on its first call (and succeeds on
// the others), produces one tick, and refuses the ledger's writes while the first call runs, until the run is
// cut off by its lease; then it lets writes through again. It checks that the cut came at the lease's end.
func cutByLease(t *testing.T, b *testBundle, cfg Config) (*recorder, []tick.Tick, []int64) {
	t.Helper()
	rec := newRecorder()
	first := make(chan struct{})
	var calls atomic.Int32
	b.start(t, cfg, rec.handler(func(ctx context.Context, _ tick.Tick, _ Attempt) error {
		if calls.Add(1) > 1 {
			return nil
		}
		close(first)
		<-ctx.Done()
		return ctx.Err()
	}), Deps{})
	ticks, offsets := b.produceTicks(t, 0, "expire", 1)
	select {
	case <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not start within 10s")
	}
	refused, allow := b.refuseLedgerWrites(t, 0, true)
	var refusedAt time.Time
	select {
	case refusedAt = <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("no renewal within 10s")
	}
	kafkatest.Eventually(t, 10*time.Second, "the first attempt to be cut off", func() bool { return rec.count() >= 1 })
	allow()
	c := rec.snapshot()[0]
	if !errors.Is(c.Cause, errLeaseExpired) {
		t.Errorf("first attempt ended with cause %v, want %v", c.Cause, errLeaseExpired)
	}
	// Every renewal that succeeded was sent before the first refused one, so the lease ended by then + Lease.
	if over := c.End.Sub(refusedAt); over > cfg.Lease+cfg.Lease/2 {
		t.Errorf("first attempt ran on %s after the first refused renewal; its lease is %s", over, cfg.Lease)
	}
	return rec, ticks, offsets
}

// TestLaneConcurrencyBoundsHandlers: with Concurrency 1, the lanes of two partitions take turns: never two
// handlers at once.
func TestLaneConcurrencyBoundsHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.config("w1")
	cfg.Concurrency = 1
	var inflight, peak atomic.Int32
	rec := newRecorder()
	b.start(t, cfg, rec.handler(func(context.Context, tick.Tick, Attempt) error {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // a little work, so that a second handler, if allowed, would overlap
		return nil
	}), Deps{})
	const n = 10
	for p := range int32(testParts) {
		b.produceTicks(t, p, fmt.Sprintf("conc%d", p), n)
	}
	kafkatest.Eventually(t, 10*time.Second, "every tick to run", func() bool { return rec.count() >= testParts*n })
	if got := peak.Load(); got != 1 {
		t.Errorf("%d handlers ran at once, want at most Concurrency 1", got)
	}
}

// The group's callbacks can run before kgo.NewClient returns, before Run has stored the client. pinStart then
// waits for it, and pins the start: reading the client too early, it left a new group's start unpinned (and a
// lane's ledger start dereferenced a nil client).
func TestPinStartWaitsForTheClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.produceTicks(t, 0, "scan", 3)
	cfg := b.config("w1")
	cfg.Start = StartLatest
	w, err := New(cfg, HandlerFunc(func(context.Context, tick.Tick, Attempt) error { return nil }), Deps{})
	if err != nil {
		t.Fatal(err)
	}
	w.startAt = time.Now()
	w.start = cfg.Start.Offset(w.startAt)
	type result struct {
		offsets map[string]map[int32]kgo.Offset
		err     error
	}
	done := make(chan result, 1)
	go func() {
		o, err := w.pinStart(t.Context(), map[string]map[int32]kgo.Offset{b.names.Work: {0: w.start}})
		done <- result{o, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("pinStart returned before the client was set: %v, %v", r.offsets, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	w.setClient(b.cl) // not a group member: the pin's commit fails, and the offset handed to kgo is still pinned
	r := <-done
	if got, want := r.offsets[b.names.Work][0], kgo.NewOffset().At(3); r.err != nil || got != want {
		t.Errorf("pinStart = %v, %v; want partition 0 pinned at %v", got, r.err, want)
	}
}

// A Worker runs again after its Run returned, from fresh state, and a second Run while one runs is refused: the
// second Run takes up where the group's commits left it, and runs the ticks written since, each once.
func TestWorkerRunsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var mu sync.Mutex
	runs := map[string]int{}
	h := HandlerFunc(func(_ context.Context, tk tick.Tick, _ Attempt) error {
		mu.Lock()
		runs[tk.ID]++
		mu.Unlock()
		return nil
	})
	ran := func(ids []tick.Tick) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, tk := range ids {
			if runs[tk.ID] == 0 {
				return false
			}
		}
		return true
	}
	first, _ := b.produceTicks(t, 0, "again", 5)
	tw := b.start(t, b.config("w1"), h, Deps{})
	kafkatest.Eventually(t, 20*time.Second, "the first ticks to run", func() bool { return ran(first) })
	if err := tw.w.Run(t.Context()); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Fatalf("a second Run at the same time returned %v, want a refusal", err)
	}
	tw.stop(t)
	if tw.err != nil {
		t.Fatalf("first Run: %v", tw.err)
	}

	second, _ := b.produceTicks(t, 0, "again-later", 5)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- tw.w.Run(ctx) }()
	kafkatest.Eventually(t, 20*time.Second, "the ticks written between the two Runs to run", func() bool { return ran(second) })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("second Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n != 1 {
			t.Errorf("tick %s ran %d times, want once", id, n)
		}
	}
	if len(runs) != len(first)+len(second) {
		t.Errorf("%d ticks ran, want %d", len(runs), len(first)+len(second))
	}
}

// TestLaneOutcomeWriteRetried: an outcome record the broker refuses is written again until it is taken; the
// tick's offset is committed only after it (a commit without the outcome would leave a tick that ran missing for
// good).
func TestLaneOutcomeWriteRetried(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tw, finish, ticks, offsets := heldTick(t, b, "outcome")
	refused, allow := b.refuseLedgerWrites(t, 0, true)
	close(finish)
	select {
	case <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("the outcome was not written within 10s")
	}
	kafkatest.Eventually(t, 10*time.Second, "the refused outcome to be counted", func() bool {
		return counterValue(tw.w.m.outcomeErrs) >= 2 // refused, and refused again: retried
	})
	if c := b.committed(t, 0); c.At > offsets[0] {
		t.Fatalf("offset %d committed while the tick's outcome was refused", c.At)
	}
	allow()
	kafkatest.Eventually(t, 10*time.Second, "the tick's commit", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
	if o := b.outcomesOf(t, 0, ticks[0].ID, "w1"); len(o) != 1 || o[0].Status != StatusOK {
		t.Errorf("outcomes %+v, want one ok", o)
	}
}

// heldTick starts worker w1 with a lease long enough that no renewal is written during a test, produces one tick
// of schedule name on partition 0, and returns once its handler runs: the handler succeeds once finish is
// closed, so the next ledger write is the tick's outcome.
func heldTick(t *testing.T, b *testBundle, name string) (tw *testWorker, finish chan struct{}, ticks []tick.Tick, offsets []int64) {
	t.Helper()
	cfg := b.config("w1")
	cfg.Lease = 10 * time.Second
	rec := newRecorder()
	finish = make(chan struct{})
	tw = b.start(t, cfg, rec.handler(func(context.Context, tick.Tick, Attempt) error {
		<-finish
		return nil
	}), Deps{})
	ticks, offsets = b.produceTicks(t, 0, name, 1)
	kafkatest.Eventually(t, 10*time.Second, "the handler to start", func() bool { return len(rec.started) > 0 })
	return tw, finish, ticks, offsets
}

// counterValue reads c.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// retries keeps the releases marked retry of rs.
func retries(rs []ledgerRecord) []ledgerRecord {
	var out []ledgerRecord
	for _, r := range rs {
		if r.Entry.Retry {
			out = append(out, r)
		}
	}
	return out
}

// TestLaneOutcomeRefusedForGoodIsGivenUp: an outcome record the broker refuses for what it is (INVALID_RECORD)
// is not written again: the tick is committed without it, so that the partition goes on.
func TestLaneOutcomeRefusedForGoodIsGivenUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tw, finish, _, offsets := heldTick(t, b, "refused")
	_, allow := b.refuseProduceWith(t, b.names.Results, 0, true, kerr.InvalidRecord)
	defer allow()
	close(finish)
	kafkatest.Eventually(t, 10*time.Second, "the tick's commit", func() bool { return b.committed(t, 0).At == offsets[0]+1 })
	if n := counterValue(tw.w.m.outcomeErrs); n != 1 {
		t.Errorf("%v failed outcome writes counted, want 1 (not retried)", n)
	}
}
