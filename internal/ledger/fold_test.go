package ledger

import (
	"testing"
	"time"
)

func claimE(worker string, fence int64, leaseMS int64) Entry {
	return Entry{Kind: KindClaim, Partition: 0, Fence: fence, Worker: worker, LeaseMS: leaseMS}
}

func tickE(kind, worker, id string, fence, offset int64) Entry {
	e := Entry{Kind: kind, Partition: 0, ID: id, Offset: offset, Fence: fence, Worker: worker, Attempt: 1}
	if kind == KindOutcome {
		e.Status, e.Attempts = StatusOK, 1
	}
	return e
}

// TestFoldRefuses: each entry that the log cannot prove is refused with its reason, and changes nothing.
func TestFoldRefuses(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		e    Entry
		want Refusal
	}{
		{"token beyond MaxFence", claimE("x", MaxFence+1, 1000), RefusedFence},
		{"token far above the highest", claimE("x", 5+MaxFenceStep+1, 1000), RefusedFence},
		{"token zero", claimE("x", 0, 1000), RefusedFence},
		{"lease beyond MaxLease", claimE("x", 6, MaxLease.Milliseconds()+1), RefusedLease},
		{"negative lease", claimE("x", 6, -1), RefusedLease},
		{"stale claim", claimE("x", 4, 1000), RefusedStale},
		{"start by another worker", tickE(KindStarted, "x", "a@1", 5, 10), RefusedNotOwner},
		{"start under an old token", tickE(KindStarted, "w", "a@1", 4, 10), RefusedNotOwner},
		{"outcome by another worker", tickE(KindOutcome, "x", "a@1", 5, 10), RefusedNotOwner},
		{"retry of a tick not started, by another worker", retryE("x", "a@1", 5, 10, 1), RefusedNotOwner},
		{"outcome beyond the limit", tickE(KindOutcome, "w", "a@1", 5, 100), RefusedOffset},
		{"other partition", Entry{Kind: KindOutcome, Partition: 1, ID: "a@1", Status: StatusOK, Fence: 5, Worker: "w"}, RefusedPartition},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := NewFold(0)
			f.Limit = 100
			if r := f.Apply(claimE("w", 5, 1000), 0, t0); r != "" {
				t.Fatalf("the owner's claim: %q", r)
			}
			if r := f.Apply(c.e, 1, t0.Add(time.Second)); r != c.want {
				t.Fatalf("Apply = %q, want %q", r, c.want)
			}
			if f.Owner != "w" || f.Fence != 5 || len(f.Ticks) != 0 {
				t.Errorf("after the refusal: owner %s, fence %d, %d ticks; want w, 5, none", f.Owner, f.Fence, len(f.Ticks))
			}
			if p, _ := f.LastProof(5); !p.Equal(t0) {
				t.Errorf("last proof of token 5 = %v, want the claim's %v", p, t0)
			}
		})
	}
}

// TestFoldRunnerReportsAfterNewClaim: a former owner may still report the end (release or outcome) of a run it
// started after a new claim; anybody else may not, and the first outcome stands.
func TestFoldRunnerReportsAfterNewClaim(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := NewFold(0)
	for i, e := range []Entry{claimE("old", 1, 5000), tickE(KindStarted, "old", "a@1", 1, 7), claimE("new", 2, 5000)} {
		if r := f.Apply(e, int64(i), t0.Add(time.Duration(i)*time.Second)); r != "" {
			t.Fatalf("entry %d: %q", i, r)
		}
	}
	if r := f.Apply(tickE(KindOutcome, "other", "a@1", 1, 7), 3, t0); r != RefusedNotOwner {
		t.Fatalf("outcome by a third worker: %q, want %q", r, RefusedNotOwner)
	}
	if r := f.Apply(tickE(KindOutcome, "old", "a@1", 1, 7), 4, t0); r != "" {
		t.Fatalf("outcome by the runner: %q", r)
	}
	if r := f.Apply(tickE(KindOutcome, "new", "a@1", 2, 7), 5, t0); r != RefusedDone {
		t.Fatalf("second outcome: %q, want %q", r, RefusedDone)
	}
	s := f.Tick(7, "a@1")
	if s == nil || !s.Finished() || s.Outcome.Worker != "old" {
		t.Fatalf("tick state %+v, want finished by old", s)
	}
	if p, _ := f.LastProof(1); !p.Equal(t0.Add(time.Second)) {
		t.Errorf("last proof of token 1 = %v, want its start at %v", p, t0.Add(time.Second))
	}
}

// retryE is a release marked retry: attempt n of tick id at work offset offset failed, and another follows.
func retryE(worker, id string, fence, offset int64, n int) Entry {
	e := tickE(KindReleased, worker, id, fence, offset)
	e.Retry, e.Attempt = true, n
	return e
}

// TestFoldRetry: a retry from the runner of the tick's latest attempt says nothing runs the tick and nothing
// was cut off (not interrupted), even after a new claim; the next owner's start seizes nothing. A retry from
// anybody else, or for an attempt that is not the latest, changes nothing.
func TestFoldRetry(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := NewFold(0)
	second := tickE(KindStarted, "old", "a@1", 1, 7)
	second.Attempt = 2
	for i, e := range []Entry{claimE("old", 1, 5000), tickE(KindStarted, "old", "a@1", 1, 7), second, claimE("new", 2, 5000)} {
		if r := f.Apply(e, int64(i), t0); r != "" {
			t.Fatalf("entry %d: %q", i, r)
		}
	}
	for _, c := range []struct {
		name string
		e    Entry
	}{
		{"another worker", retryE("new", "a@1", 2, 7, 2)},
		{"the runner under another token", retryE("old", "a@1", 2, 7, 2)},
		{"an earlier attempt", retryE("old", "a@1", 1, 7, 1)},
	} {
		if r := f.Apply(c.e, 4, t0); r != RefusedNotOwner {
			t.Errorf("retry by %s: %q, want %q", c.name, r, RefusedNotOwner)
		}
	}
	if s := f.Tick(7, "a@1"); !s.Running() || !s.Interrupted() {
		t.Fatalf("after refused retries: %+v, want still running", s)
	}
	if r := f.Apply(retryE("old", "a@1", 1, 7, 2), 5, t0); r != "" {
		t.Fatalf("retry by the runner: %q", r)
	}
	s := f.Tick(7, "a@1")
	if s.Running() || s.Released || s.Interrupted() || s.Finished() || s.Attempts != 2 {
		t.Errorf("after the runner's retry: %+v, want not running, not interrupted, 2 attempts", s)
	}
	if r := f.Apply(tickE(KindStarted, "new", "a@1", 2, 7), 6, t0); r != "" || !f.Tick(7, "a@1").SeizedAt.IsZero() {
		t.Errorf("the new owner's start: %q, seized %v; want taken, nothing seized", r, f.Tick(7, "a@1").SeizedAt)
	}
}

// TestFoldRetryKeepsTheInterruptedMark: a retry of an attempt that followed an interruption (marked) leaves the
// tick interrupted for the next owner, as a release does.
func TestFoldRetryKeepsTheInterruptedMark(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := NewFold(0)
	rerun := tickE(KindStarted, "w", "a@1", 1, 7)
	rerun.Attempt, rerun.Interrupted = 2, true
	retry := retryE("w", "a@1", 1, 7, 2)
	retry.Interrupted = true
	for i, e := range []Entry{claimE("w", 1, 5000), rerun, retry} {
		if r := f.Apply(e, int64(i), t0); r != "" {
			t.Fatalf("entry %d: %q", i, r)
		}
	}
	if s := f.Tick(7, "a@1"); s.Running() || !s.Interrupted() {
		t.Errorf("after the retry of a marked re-run: %+v, want not running, interrupted", s)
	}
}

// TestFoldForgedRetryDoesNotStopARun: a retry in the runner's name while its run goes on (a forger's copy of its
// writer, token and attempt) cuts nothing: the run's next renewal still stands and undoes it, so the tick counts
// as running again.
func TestFoldForgedRetryDoesNotStopARun(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := NewFold(0)
	for i, e := range []Entry{claimE("w", 1, 5000), tickE(KindStarted, "w", "a@1", 1, 7), retryE("w", "a@1", 1, 7, 1)} {
		if r := f.Apply(e, int64(i), t0); r != "" {
			t.Fatalf("entry %d: %q", i, r)
		}
	}
	if r := f.Apply(tickE(KindRenewed, "w", "a@1", 1, 7), 3, t0.Add(time.Second)); r != "" {
		t.Fatalf("the run's renewal after a forged retry: %q, want taken", r)
	}
	if s := f.Tick(7, "a@1"); !s.Running() || !s.ProofAt.Equal(t0.Add(time.Second)) {
		t.Errorf("after the renewal: %+v, want running, proven at the renewal", s)
	}
}

// TestFoldDisownDropsMarks: what a disowned (forged) claim's writer said of a tick, a start or release marking
// it interrupted, no longer counts: the tick is not interrupted. Marks of other writers stay.
func TestFoldDisownDropsMarks(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	forgedStart := tickE(KindStarted, "x", "a@1", 3, 7)
	forgedStart.Interrupted = true
	for _, c := range []struct {
		name    string
		entries []Entry
		want    bool
	}{
		{"a forged start marked interrupted", []Entry{claimE("b", 2, 5000), claimE("x", 3, 5000), forgedStart}, false},
		{"a forged release", []Entry{claimE("b", 2, 5000), claimE("x", 3, 5000), tickE(KindStarted, "x", "a@1", 3, 7), tickE(KindReleased, "x", "a@1", 3, 7)}, false},
		{"a genuine release, then a forged start", []Entry{claimE("b", 2, 5000), tickE(KindStarted, "b", "a@1", 2, 7), tickE(KindReleased, "b", "a@1", 2, 7), claimE("x", 3, 5000), tickE(KindStarted, "x", "a@1", 3, 7)}, true},
	} {
		f := NewFold(0)
		for i, e := range c.entries {
			if r := f.Apply(e, int64(i), t0); r != "" {
				t.Fatalf("%s: entry %d: %q", c.name, i, r)
			}
		}
		f.Disown("x", 3)
		if s := f.Tick(7, "a@1"); s.Running() || s.Interrupted() != c.want {
			t.Errorf("%s, disowned: running %v, interrupted %v; want not running, interrupted %v", c.name, s.Running(), s.Interrupted(), c.want)
		}
	}
}

// TestFoldRetryWithoutItsStart: a retry whose start is gone from the log (compacted: they share the tick's key)
// is taken from the partition's owner of the time, as a release is: the attempts count on, the tick is not
// running, and it is interrupted only when the retry says its attempt followed an interruption.
func TestFoldRetryWithoutItsStart(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, marked := range []bool{false, true} {
		f := NewFold(0)
		retry := retryE("w", "a@1", 1, 7, 2)
		retry.Interrupted = marked
		for i, e := range []Entry{claimE("w", 1, 5000), retry} {
			if r := f.Apply(e, int64(i), t0); r != "" {
				t.Fatalf("entry %d: %q", i, r)
			}
		}
		if s := f.Tick(7, "a@1"); s.Running() || s.Attempts != 2 || s.Interrupted() != marked {
			t.Errorf("retry (interrupted %v) without its start: %+v; want not running, 2 attempts, interrupted %v", marked, s, marked)
		}
		if r := f.Apply(retryE("v", "b@1", 1, 8, 1), 2, t0); r != RefusedNotOwner {
			t.Errorf("a retry without its start by another than the owner: %q, want %q", r, RefusedNotOwner)
		}
	}
}

// TestFoldKeepsTicksApartByID: an entry naming another tick for an offset does not change the real tick's
// state, and the IDs kept per offset are bounded.
func TestFoldKeepsTicksApartByID(t *testing.T) {
	f := NewFold(0)
	f.Apply(claimE("w", 1, 1000), 0, time.Time{})
	if r := f.Apply(tickE(KindOutcome, "w", "forged@1", 1, 3), 1, time.Time{}); r != "" {
		t.Fatal(r)
	}
	if f.Tick(3, "real@1") != nil || !f.OtherIDs(3, "real@1") {
		t.Fatal("the forged outcome is taken as the real tick's")
	}
	f.Apply(tickE(KindStarted, "w", "real@1", 1, 3), 2, time.Time{})
	if s := f.Tick(3, "real@1"); s == nil || !s.Started || s.Finished() {
		t.Fatalf("real tick %+v, want started and not finished", s)
	}
	f.Apply(tickE(KindOutcome, "w", "f2@1", 1, 3), 3, time.Time{})
	if r := f.Apply(tickE(KindOutcome, "w", "f3@1", 1, 3), 4, time.Time{}); r != RefusedIDs {
		t.Fatalf("a fourth ID for one offset: %q, want %q", r, RefusedIDs)
	}
}

// TestFoldBaseFence: before its first claim, the fold takes entries up to the committing owner's token only.
func TestFoldBaseFence(t *testing.T) {
	f := NewFold(0)
	f.BaseFence = 4
	if r := f.Apply(tickE(KindOutcome, "w", "a@1", 4, 1), 0, time.Time{}); r != "" {
		t.Fatalf("outcome under the base token: %q", r)
	}
	if r := f.Apply(tickE(KindOutcome, "x", "b@1", 9, 2), 1, time.Time{}); r != RefusedNotOwner {
		t.Fatalf("outcome above the base token: %q, want %q", r, RefusedNotOwner)
	}
	if r := f.Apply(claimE("x", 4+MaxFenceStep+1, 1000), 2, time.Time{}); r != RefusedFence {
		t.Fatalf("claim far above the base token: %q, want %q", r, RefusedFence)
	}
}

// TestFoldRunnersLease: a start and its renewals carry the runner's own lease, which is what a run's end is
// reckoned with (not the reader's, nor the claim's); a renewal moves the run's last proof on; a lease beyond
// MaxLease is refused.
func TestFoldRunnersLease(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f := NewFold(0)
	f.Apply(claimE("w", 1, 5000), 0, t0)
	start := tickE(KindStarted, "w", "a@1", 1, 3)
	start.LeaseMS = 60_000
	if r := f.Apply(start, 1, t0.Add(time.Second)); r != "" {
		t.Fatal(r)
	}
	renew := start
	renew.Kind = KindRenewed
	if r := f.Apply(renew, 2, t0.Add(13*time.Second)); r != "" {
		t.Fatal(r)
	}
	s := f.Tick(3, "a@1")
	if s.StartedLease != time.Minute || !s.ProofAt.Equal(t0.Add(13*time.Second)) {
		t.Fatalf("lease %s, last proof %s; want 1m and the renewal's %s", s.StartedLease, s.ProofAt, t0.Add(13*time.Second))
	}
	long := renew
	long.LeaseMS = MaxLease.Milliseconds() + 1
	if r := f.Apply(long, 3, t0.Add(14*time.Second)); r != RefusedLease {
		t.Fatalf("renewal with a lease beyond MaxLease: %q, want %q", r, RefusedLease)
	}
	other := renew
	other.Worker = "x"
	if r := f.Apply(other, 4, t0.Add(15*time.Second)); r != RefusedNotOwner {
		t.Fatalf("renewal by another worker: %q, want %q", r, RefusedNotOwner)
	}
}

// TestFoldUnstarted: a release marked unstarted by the runner of the latest attempt takes that attempt back (not
// running, not interrupted, its next start the same attempt), even when written after the runner's next claim;
// from anyone else, or for an attempt that is not running, it is ignored and changes nothing.
func TestFoldUnstarted(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	unstarted := func(worker string, fence int64, attempt int) Entry {
		e := tickE(KindReleased, worker, "a@1", fence, 7)
		e.Unstarted, e.Attempt = true, attempt
		return e
	}
	f := NewFold(0)
	for i, e := range []Entry{claimE("w", 1, 5000), tickE(KindStarted, "w", "a@1", 1, 7), claimE("w", 2, 5000)} {
		if r := f.Apply(e, int64(i), t0); r != "" {
			t.Fatalf("entry %d: %q", i, r)
		}
	}
	for _, c := range []struct {
		name string
		e    Entry
	}{
		{"another worker", unstarted("x", 1, 1)},
		{"the runner under another token", unstarted("w", 2, 1)},
		{"another attempt", unstarted("w", 1, 2)},
	} {
		if r := f.Apply(c.e, 3, t0); r != "" {
			t.Errorf("unstarted release by %s: %q, want ignored", c.name, r)
		}
		if s := f.Tick(7, "a@1"); !s.Running() || s.Attempts != 1 {
			t.Fatalf("after an unstarted release by %s: %+v, want still running attempt 1", c.name, s)
		}
	}
	if r := f.Apply(unstarted("w", 1, 1), 4, t0); r != "" {
		t.Fatalf("the runner's unstarted release: %q", r)
	}
	s := f.Tick(7, "a@1")
	if s.Running() || s.Released || s.Interrupted() || s.Finished() || s.Attempts != 0 {
		t.Fatalf("after the runner's unstarted release: %+v, want not running, not interrupted, 0 attempts", s)
	}
	if r := f.Apply(tickE(KindStarted, "w", "a@1", 2, 7), 5, t0); r != "" || !f.Tick(7, "a@1").SeizedAt.IsZero() {
		t.Fatalf("the same attempt started again: %q, seized %v; want taken, nothing seized", r, f.Tick(7, "a@1").SeizedAt)
	}
	out := tickE(KindOutcome, "w", "a@1", 2, 7)
	if r := f.Apply(out, 6, t0); r != "" {
		t.Fatalf("outcome: %q", r)
	}
	if r := f.Apply(unstarted("w", 2, 1), 7, t0); r != "" || !f.Tick(7, "a@1").Finished() {
		t.Errorf("an unstarted release after the outcome: %q; want ignored, the tick finished", r)
	}

	// A release marked unstarted keeps the marks of earlier cuts: the tick stays interrupted.
	g := NewFold(0)
	rerun := tickE(KindStarted, "w", "b@1", 1, 8)
	rerun.ID, rerun.Attempt, rerun.Interrupted = "b@1", 2, true
	back := unstarted("w", 1, 2)
	back.ID, back.Offset = "b@1", 8
	for i, e := range []Entry{claimE("w", 1, 5000), rerun, back} {
		if r := g.Apply(e, int64(i), t0); r != "" {
			t.Fatalf("entry %d: %q", i, r)
		}
	}
	if s := g.Tick(8, "b@1"); s.Running() || !s.Interrupted() || s.Attempts != 1 {
		t.Errorf("after taking back a marked re-run: %+v, want not running, interrupted, 1 attempt", s)
	}
}
