package ledger

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testCluster is a kfake cluster with the topic "ledger" (one partition), closed with the test.
func testCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ledger"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// testLog is worker's Log on a kfake cluster's topic "ledger" (one partition), with a lease of lease.
func testLog(t *testing.T, c *kfake.Cluster, worker string, lease time.Duration) *Log {
	t.Helper()
	conn := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	prod, err := kgo.NewClient(append(conn, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := kgo.NewClient(append(conn, kgo.FetchMaxWait(50*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	lg := NewLog(LogConfig{Topic: "ledger", Worker: worker, Lease: lease, MaxClockSkew: 10 * time.Millisecond, Now: time.Now,
		Producer: prod, Reader: reader, ReaderOpts: conn, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: Metrics{
			Unreadable:   prometheus.NewCounter(prometheus.CounterOpts{Name: "unreadable"}),
			Refused:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "refused"}, []string{"reason"}),
			BatchEntries: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "batch"}),
			Takeover:     prometheus.NewHistogram(prometheus.HistogramOpts{Name: "takeover"}),
		}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		lg.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		reader.Close()
		prod.Close()
	})
	return lg
}

// TestOwnerProtocol walks the protocol between two workers on one partition: a takes it over and starts a
// tick; b takes over after it (a is fenced: it can start nothing more, but its run goes on and renews); b
// waits for a's run until its lease has surely ended, then starts the tick itself, after which a's renewal is
// refused (ErrSeized).
func TestOwnerProtocol(t *testing.T) {
	c := testCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const lease = 2 * time.Second
	end := func(context.Context) (int64, error) { return 10, nil }

	fenced := make(chan struct{}, 1)
	a := testLog(t, c, "a", lease).NewOwner(0, func() { fenced <- struct{}{} })
	if err := a.Takeover(ctx, Position{Base: MaxFence}, end); err != nil {
		t.Fatalf("a's takeover: %v", err)
	}
	if a.Fence() != 1 {
		t.Fatalf("a's token %d, want 1", a.Fence())
	}
	// An entry about a work offset the log does not have yet is refused, even from the owner.
	far := Entry{Kind: KindOutcome, ID: "scan@far", Partition: 0, Offset: 1 << 40, Worker: "a", Fence: 1, Status: StatusOK, Attempts: 1}
	off, err := a.lg.Write(ctx, 0, []byte(far.ID), far)
	if err != nil || !a.waitRead(ctx, off, 10*time.Second) {
		t.Fatalf("writing an entry about a far offset: %v", err)
	}
	if s, _ := a.State(far.Offset, far.ID); s != nil {
		t.Fatalf("the fold took an entry about work offset %d, beyond the work partition's end: %+v", far.Offset, s)
	}
	slot := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	e := Entry{Kind: KindStarted, ID: "scan@1", Schedule: "scan", Slot: &slot, Partition: 0, Offset: 3, Worker: "a",
		Attempt: 1, Fence: a.Fence(), At: time.Now().UTC(), LeaseMS: lease.Milliseconds()}
	if until, err := a.Start(ctx, e); err != nil || time.Until(until) <= 0 {
		t.Fatalf("a's start: lease until %v, %v", until, err)
	}

	b := testLog(t, c, "b", lease).NewOwner(0, nil)
	if err := b.Takeover(ctx, Position{Base: MaxFence}, end); err != nil {
		t.Fatalf("b's takeover: %v", err)
	}
	if b.Fence() != 2 {
		t.Fatalf("b's token %d, want 2", b.Fence())
	}
	select {
	case <-fenced:
	case <-ctx.Done():
		t.Fatal("a was not told of b's claim")
	}
	e2 := e
	e2.ID, e2.Offset = "scan@2", 4
	if _, err := a.Start(ctx, e2); !errors.Is(err, ErrFenced) {
		t.Fatalf("a's start after b's claim: %v, want ErrFenced", err)
	}
	// a's run outlives the partition: its renewal stands.
	renewed := time.Now()
	if _, err := a.Renew(ctx, e); err != nil {
		t.Fatalf("a's renewal after b's claim: %v", err)
	}
	s, _ := b.State(3, e.ID)
	if s == nil || !s.Started || s.StartedBy != "a" || s.Finished() {
		t.Fatalf("b's view of the tick: %+v, want started by a and not finished", s)
	}
	// b waits until a's renewal plus the lease (and the skew): bounds taken from instants around the renewal,
	// not from how fast this machine gets here. b reads the ledger on its own: until it has read the renewal, it
	// knows only a's start.
	lo := renewed.Add(lease - time.Millisecond)
	deadline := time.After(10 * time.Second)
	changed := b.Changed()
	over := b.RunningUntil(3, e.ID)
	for waiting := true; waiting && over.Before(lo); changed, over = b.Changed(), b.RunningUntil(3, e.ID) {
		select {
		case <-changed: // b's fold took more entries
		case <-deadline:
			waiting = false
		}
	}
	if hi := time.Now().Add(lease + time.Second); over.Before(lo) || over.After(hi) {
		t.Fatalf("b would wait for a's run until %v, want between the renewal + lease (%v) and now + lease + 1s (%v)", over, lo, hi)
	}
	if time.Until(b.RunningUntil(4, e2.ID)) > 0 {
		t.Fatal("b waits for a tick nobody started")
	}

	// b starts the tick once a's lease has surely ended, the instant the Owner itself gave; a's next renewal
	// finds the tick seized.
	time.Sleep(time.Until(over))
	eb := e
	eb.Worker, eb.Fence, eb.Attempt, eb.Interrupted, eb.At = "b", b.Fence(), 2, true, time.Now().UTC()
	if _, err := b.Start(ctx, eb); err != nil {
		t.Fatalf("b's start of the interrupted tick: %v", err)
	}
	if _, err := a.Renew(ctx, e); !errors.Is(err, ErrSeized) {
		t.Fatalf("a's renewal after b started the tick: %v, want ErrSeized", err)
	}

	// The commit metadata names b's token and a ledger offset from which the tick's entries are read again.
	from, fence, ok := ParseMeta(b.CommitMeta(3))
	if !ok || fence != 2 || from < 0 {
		t.Fatalf("b's commit metadata: from %d fence %d ok %v", from, fence, ok)
	}
}

// TestOwnerTakeoverGivesWayToANewerClaim: a claim of another worker that lands after a's own (a froze during
// its takeover, and the partition moved on) makes a's takeover fail with ErrFenced; a's claim does not stand,
// and b's does.
func TestOwnerTakeoverGivesWayToANewerClaim(t *testing.T) {
	c := testCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := testLog(t, c, "a", time.Second).NewOwner(0, nil)
	b := testLog(t, c, "b", time.Second).NewOwner(0, nil)
	// b claims between a's claim and a's reading it back (a lists the work partition's end in between).
	endAfterB := func(ctx context.Context) (int64, error) {
		if err := b.Takeover(ctx, Position{Base: MaxFence}, func(context.Context) (int64, error) { return 10, nil }); err != nil {
			return 0, err
		}
		return 10, nil
	}
	if err := a.Takeover(ctx, Position{Base: MaxFence}, endAfterB); !errors.Is(err, ErrFenced) {
		t.Fatalf("a's takeover with b's claim after it: %v, want ErrFenced", err)
	}
	if a.Standing() || !b.Standing() || b.Fence() != 2 {
		t.Fatalf("a standing %v, b standing %v with token %d; want only b, with token 2", a.Standing(), b.Standing(), b.Fence())
	}
}

// TestFencedOwnerCommitsNothing: an owner that wakes to find another worker's claim after its own, and that
// other's start of a record it never fetched, gives no commit metadata: a position taken from its fold (which
// refused that start as beyond its end) would let the next owner read from past the claim and the start, and
// count the run as nobody's. kgo can still send such a commit, under the generation of the worker's rejoin.
func TestFencedOwnerCommitsNothing(t *testing.T) {
	c := testCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := testLog(t, c, "a", time.Second).NewOwner(0, nil)
	if err := a.Takeover(ctx, Position{Base: MaxFence}, func(context.Context) (int64, error) { return 10, nil }); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := ParseMeta(a.CommitMeta(3)); !ok {
		t.Fatal("a standing owner gives no commit metadata")
	}
	b := testLog(t, c, "b", time.Second).NewOwner(0, nil)
	if err := b.Takeover(ctx, Position{Base: MaxFence}, func(context.Context) (int64, error) { return 20, nil }); err != nil {
		t.Fatal(err)
	}
	e := Entry{Kind: KindStarted, ID: "scan@1", Schedule: "scan", Partition: 0, Offset: 15, Worker: "b",
		Attempt: 1, Fence: b.Fence(), At: time.Now().UTC(), LeaseMS: time.Second.Milliseconds(), Limit: "api"}
	if _, err := b.Start(ctx, e); err != nil {
		t.Fatalf("b's start: %v", err)
	}
	readTo := func(o *Owner) int64 {
		o.mu.Lock()
		defer o.mu.Unlock()
		return o.readTo
	}
	for changed := a.Changed(); readTo(a) < readTo(b); changed = a.Changed() {
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("a never read b's start")
		}
	}
	if !a.Fenced() {
		t.Fatal("a is not fenced by b's claim")
	}
	if m := a.CommitMeta(3); m != "" {
		from, fence, _ := ParseMeta(m)
		t.Fatalf("the fenced owner's commit metadata: from %d fence %d, want none", from, fence)
	}
}

// TestOwnerAddedAgainWhileThePollWaits: a partition's Owner is closed and a new one added while the shared
// reader's poll waits for records (as after a broker restart: every partition lost and assigned again). What that
// poll returns for the partition may be the new Owner's records, from where it reads: the new Owner must still
// read every entry before its claim (here: a finished tick, which must not look unstarted).
func TestOwnerAddedAgainWhileThePollWaits(t *testing.T) {
	c := testCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	end := func(context.Context) (int64, error) { return 10, nil }
	lg := testLog(t, c, "a", time.Second)
	a := lg.NewOwner(0, nil)
	if err := a.Takeover(ctx, Position{Base: MaxFence}, end); err != nil {
		t.Fatal(err)
	}
	slot := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	done := Entry{Kind: KindOutcome, ID: "scan@1", Schedule: "scan", Slot: &slot, Partition: 0, Offset: 3, Worker: "a",
		Fence: a.Fence(), Status: StatusOK, Attempts: 1, At: time.Now().UTC()}
	off, err := lg.Write(ctx, 0, []byte(done.ID), done)
	if err != nil || !a.waitRead(ctx, off, 10*time.Second) {
		t.Fatalf("writing the outcome: %v", err)
	}
	for range 20 { // the reader's poll now waits for records that do not come (FetchMaxWait 50 ms)
		a.Close()
		b := lg.NewOwner(0, nil)
		if err := b.Takeover(ctx, Position{Base: MaxFence}, end); err != nil {
			t.Fatalf("the new owner's takeover: %v", err)
		}
		if s, _ := b.State(3, done.ID); s == nil || !s.Finished() {
			t.Fatalf("the new owner's view of the finished tick: %+v, want finished", s)
		}
		a = b
	}
}
