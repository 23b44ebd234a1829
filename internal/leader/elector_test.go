package leader_test

// Tests of the Elector against kfake, the in-process fake broker of franz-go: they check the logic of the
// transitions (assign, revoke, lose, fail and rejoin, one leader among two) in well under a second or two each.
// They say nothing about fencing or transactions, which only a real broker can show (package dispatch and the
// e2e tests).

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
)

const (
	testTopic = "ns.ticker"
	testGroup = "ns.ticker"
	// waitFor bounds every wait of these tests. A failover on kfake takes about one session timeout (1s).
	waitFor = 8 * time.Second
)

// testBundle is what every test gets from setup: a fresh kfake cluster with the single-partition ticker topic.
type testBundle struct {
	cluster *kfake.Cluster
	opts    []kgo.Opt   // connection options for Electors and admin clients
	cl      *kgo.Client // a plain client (not a group member) for requests of the tests
	adm     *kadm.Client
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.SeedTopics(1, testTopic),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("admin client: %v", err)
	}
	t.Cleanup(cl.Close)
	return &testBundle{cluster: c, opts: opts, cl: cl, adm: kadm.NewClient(cl)}
}

// received is a condition for eventually: a value arrived on ch (and is stored in *v).
func received[T any](ch <-chan T, v *T) func() bool {
	return func() bool {
		select {
		case *v = <-ch:
			return true
		default:
			return false
		}
	}
}

// closed is a condition for eventually: ch is closed (or has a value).
func closed[T any](ch <-chan T) func() bool {
	return func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}

// stays asserts that ch does not deliver for d. It is the one fixed wait of these tests, used only to show
// that something does NOT happen while a term is held; a pass costs d, a regression fails it.
func stays[T any](t *testing.T, ch <-chan T, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s", what)
	case <-time.After(d):
	}
}

// termRun is one call of the LeadFunc, as the test sees it.
type termRun struct {
	term  leader.Term
	ctx   context.Context
	ended chan struct{} // closed when the LeadFunc returned
}

// script is a LeadFunc whose terms the test observes and steers.
type script struct {
	name    string
	started chan *termRun
	// hold has the terms (by number) that are "stuck" after their context ended, until the channel is closed.
	hold map[int64]chan struct{}
	// fail, when set, is the error the term with that number returns at once.
	fail map[int64]error
	// running counts the terms of all scripts sharing it that run now; max is the most seen at once.
	running, max *atomic.Int32
}

func newScript(name string) *script {
	return &script{name: name, started: make(chan *termRun, 16), running: new(atomic.Int32), max: new(atomic.Int32)}
}

func (s *script) lead(ctx context.Context, term leader.Term) error {
	n := s.running.Add(1)
	defer s.running.Add(-1)
	for m := s.max.Load(); n > m && !s.max.CompareAndSwap(m, n); m = s.max.Load() {
	}
	r := &termRun{term: term, ctx: ctx, ended: make(chan struct{})}
	defer close(r.ended)
	s.started <- r
	if err := s.fail[term.Number]; err != nil {
		return err
	}
	<-ctx.Done()
	if h := s.hold[term.Number]; h != nil {
		<-h
	}
	return nil
}

// next waits for the script's next term.
func (s *script) next(t *testing.T) *termRun {
	t.Helper()
	var r *termRun
	kafkatest.Eventually(t, waitFor, s.name+" to start a term", received(s.started, &r))
	return r
}

// replica is a running Elector: Run in a goroutine, stopped and awaited at the end of the test.
type replica struct {
	e     *leader.Elector
	ready *admin.Readiness
	stop  context.CancelFunc
	done  chan error // Run's result
}

func (b *testBundle) start(t *testing.T, s *script) *replica {
	t.Helper()
	ready := new(admin.Readiness)
	e, err := leader.New(leader.Config{
		Topic:             testTopic,
		Group:             testGroup,
		SessionTimeout:    time.Second,
		HeartbeatInterval: 50 * time.Millisecond,
		RebalanceTimeout:  2 * time.Second,
		RejoinBackoff:     20 * time.Millisecond,
		InstanceName:      s.name,
		Readiness:         ready,
	}, b.opts, s.lead, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatalf("leader.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{e: e, ready: ready, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- e.Run(ctx) }()
	t.Cleanup(func() {
		for _, h := range s.hold {
			select {
			case <-h:
			default:
				close(h) // a failed test must not leave a term stuck
			}
		}
		cancel()
		select {
		case <-r.done:
		case <-time.After(waitFor):
			t.Errorf("%s: Run did not return", s.name)
		}
	})
	return r
}

// stopped waits for Run to return and checks that it returned nil.
func (r *replica) stopped(t *testing.T) {
	t.Helper()
	var err error
	kafkatest.Eventually(t, waitFor, "Run to return", received(r.done, &err))
	if err != nil {
		t.Fatalf("Run returned %v, want nil", err)
	}
	r.done <- nil // for the clean-up
}

func (r *replica) isReady() bool {
	ok, _ := r.ready.Ready()
	return ok
}

// owner is the member the coordinator's group has partition 0 assigned to, and the number of members.
func (b *testBundle) owner(t *testing.T) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	groups, err := b.adm.DescribeGroups(ctx, testGroup)
	if err != nil {
		t.Fatalf("describing the group: %v", err)
	}
	g := groups[testGroup]
	var owner string
	for _, m := range g.Members {
		if c, ok := m.Assigned.AsConsumer(); ok {
			for _, tp := range c.Topics {
				if tp.Topic == testTopic && len(tp.Partitions) > 0 {
					owner = m.MemberID
				}
			}
		}
	}
	return owner, len(g.Members)
}

// commitAs commits an offset in the group as the term's member and generation. The coordinator accepts it only
// from a current member under the current generation, which is the group's own check of a term's epoch.
func (b *testBundle) commitAs(t *testing.T, term leader.Term) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = testGroup, term.MemberID, term.Generation
	topics, err := b.adm.ListTopics(ctx, testTopic)
	if err != nil {
		t.Fatalf("listing the ticker topic: %v", err)
	}
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic, rt.TopicID = testTopic, topics[testTopic].ID // by name up to v9, by ID from v10
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, b.cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

func TestAssignStartsTermOne(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newScript("a")
	a := b.start(t, s)

	r := s.next(t)
	if r.term.Number != 1 {
		t.Errorf("term number = %d, want 1", r.term.Number)
	}
	if r.term.MemberID == "" || r.term.Generation < 1 {
		t.Errorf("term 1 under member %q generation %d", r.term.MemberID, r.term.Generation)
	}
	if owner, n := b.owner(t); owner != r.term.MemberID || n != 1 {
		t.Errorf("the coordinator has partition 0 with member %q of %d, the term runs as %q", owner, n, r.term.MemberID)
	}
	if err := b.commitAs(t, r.term); err != nil {
		t.Errorf("the coordinator refuses the term's member and generation: %v", err)
	}
	stale := r.term
	stale.Generation--
	if err := b.commitAs(t, stale); !errors.Is(err, kerr.IllegalGeneration) {
		t.Errorf("a commit under the previous generation: %v, want ILLEGAL_GENERATION", err)
	}
	if !a.e.Leading() {
		t.Error("Leading() = false during a term")
	}
	if !closed(a.e.Joined())() {
		t.Error("Joined() not closed after the first assignment")
	}
	if !a.isReady() {
		t.Error("not ready after the first assignment")
	}
}

func TestRevokeCancelsAndAwaitsTermBeforeHandover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sa, sb := newScript("a"), newScript("b")
	sb.running, sb.max = sa.running, sa.max
	sa.hold = map[int64]chan struct{}{1: make(chan struct{})}
	a := b.start(t, sa)
	ra := sa.next(t)
	bb := b.start(t, sb)
	kafkatest.Eventually(t, waitFor, "b to join the group", closed(bb.e.Joined()))

	a.stop() // a graceful stop: Close revokes partition 0 first
	kafkatest.Eventually(t, waitFor, "a's term context to end", closed(ra.ctx.Done()))
	if cause := context.Cause(ra.ctx); !errors.Is(cause, leader.ErrPartitionRevoked) {
		t.Fatalf("a's term cause = %v, want ErrPartitionRevoked", cause)
	}
	kafkatest.Eventually(t, waitFor, "a to turn not ready as its shutdown began", func() bool { return !a.isReady() })
	// The revocation callback waits for the held term, so a keeps partition 0: b cannot lead, a cannot leave.
	// (Well within the 1s session timeout, which is what bounds that wait on a real broker too.)
	stays(t, sb.started, 300*time.Millisecond, "b started a term while a's revoked term still ran")
	if closed(a.done)() {
		t.Fatal("a's Run returned while its revoked term still ran")
	}

	close(sa.hold[1])
	kafkatest.Eventually(t, waitFor, "a's term to return", closed(ra.ended))
	a.stopped(t)
	rb := sb.next(t)
	if rb.term.Number != 1 {
		t.Errorf("b's term number = %d, want 1", rb.term.Number)
	}
	if rb.term.Generation <= ra.term.Generation {
		t.Errorf("b leads under generation %d, not after a's %d", rb.term.Generation, ra.term.Generation)
	}
	if m := sa.max.Load(); m != 1 {
		t.Errorf("%d terms ran at once, want 1", m)
	}
}

// loseNextHeartbeat makes the coordinator answer the next heartbeat with UNKNOWN_MEMBER_ID, as after an
// expired session: the client calls OnPartitionsLost and joins again as a new member.
func (b *testBundle) loseNextHeartbeat() {
	b.cluster.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
}

func TestLostTermIsNotAwaitedByCallbackButByRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newScript("a")
	s.hold = map[int64]chan struct{}{1: make(chan struct{})} // term 1 is stuck; term 2 returns when told
	a := b.start(t, s)
	r1 := s.next(t)

	b.loseNextHeartbeat()
	kafkatest.Eventually(t, waitFor, "the lost term's context to end", closed(r1.ctx.Done()))
	if cause := context.Cause(r1.ctx); !errors.Is(cause, leader.ErrPartitionLost) {
		t.Fatalf("term cause = %v, want ErrPartitionLost", cause)
	}
	// The lost callback did not wait for the stuck term: the client rejoined and a new term began.
	r2 := s.next(t)
	if r2.term.Number != 2 || r2.term.Generation <= r1.term.Generation {
		t.Errorf("after the loss: term %d at generation %d, want term 2 at a generation after %d", r2.term.Number, r2.term.Generation, r1.term.Generation)
	}
	if closed(r1.ended)() {
		t.Fatal("the lost term returned while held")
	}

	a.stop()
	kafkatest.Eventually(t, waitFor, "term 2 to return", closed(r2.ended))
	stays(t, a.done, 300*time.Millisecond, "Run returned while the lost term still ran")
	close(s.hold[1])
	a.stopped(t)
	if !closed(r1.ended)() || !closed(r2.ended)() {
		t.Error("Run returned before every term returned")
	}
}

func TestFailedTermLeavesAndRejoins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newScript("a")
	s.fail = map[int64]error{1: errors.New("fenced")}
	a := b.start(t, s)

	r1 := s.next(t)
	r2 := s.next(t)
	if r2.term.Number != 2 {
		t.Errorf("term after the failure = %d, want 2", r2.term.Number)
	}
	// Left and rejoined: a new member ID under a later generation, not the same membership re-confirmed.
	if r2.term.MemberID == r1.term.MemberID || r2.term.Generation <= r1.term.Generation {
		t.Errorf("term 2 as %q gen %d, term 1 as %q gen %d: want a new membership", r2.term.MemberID, r2.term.Generation, r1.term.MemberID, r1.term.Generation)
	}
	if context.Cause(r2.ctx) != nil {
		t.Errorf("term 2 ended: %v", context.Cause(r2.ctx))
	}
	if !a.e.Leading() {
		t.Error("Leading() = false during term 2")
	}
	a.stop()
	a.stopped(t)
}

func TestTwoElectorsOneLeaderAndFailover(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sa, sb := newScript("a"), newScript("b")
	sb.running, sb.max = sa.running, sa.max
	a, bb := b.start(t, sa), b.start(t, sb)
	kafkatest.Eventually(t, waitFor, "both to join", func() bool { return closed(a.e.Joined())() && closed(bb.e.Joined())() })

	var first *termRun
	leaderRep, follower, fs := a, bb, sb
	kafkatest.Eventually(t, waitFor, "one of them to lead", func() bool {
		if received(sb.started, &first)() {
			leaderRep, follower, fs = bb, a, sa
			return true
		}
		return received(sa.started, &first)()
	})
	if !leaderRep.e.Leading() || follower.e.Leading() {
		t.Fatalf("leading: a=%v b=%v, want exactly one", a.e.Leading(), bb.e.Leading())
	}
	// The group settles with both members (the second join rebalances): the leader keeps partition 0.
	kafkatest.Eventually(t, waitFor, "the group to have both members", func() bool {
		owner, n := b.owner(t)
		return n == 2 && owner == first.term.MemberID
	})
	if follower.e.Leading() {
		t.Fatal("the follower leads too")
	}

	leaderRep.stop()
	leaderRep.stopped(t)
	next := fs.next(t)
	if next.term.Number != 1 || next.term.Generation <= first.term.Generation {
		t.Errorf("new leader's term %d at generation %d, after generation %d", next.term.Number, next.term.Generation, first.term.Generation)
	}
	if !follower.e.Leading() {
		t.Error("the follower did not take over")
	}
	if m := sa.max.Load(); m != 1 {
		t.Errorf("%d terms ran at once, want 1", m)
	}
	follower.stop()
	follower.stopped(t)
}

// gate is a leader.Gate the test opens and closes.
type gate struct {
	mu      sync.Mutex
	why     string
	changed chan struct{}
}

func newGate(why string) *gate { return &gate{why: why, changed: make(chan struct{})} }

func (g *gate) Refusal() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.why
}

func (g *gate) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

func (g *gate) set(why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.why = why
	close(g.changed)
	g.changed = make(chan struct{})
}

// TestGateKeepsReplicaOutOfTheGroup: a closed gate keeps the Elector out of the group (so it cannot hold
// partition 0); opened, it joins and leads; closed during the term, the term is stopped and awaited and the
// Elector leaves the group; opened again, it leads in a new term, at once (no backoff).
func TestGateKeepsReplicaOutOfTheGroup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := newScript("a")
	g := newGate("clock off")
	ready := new(admin.Readiness)
	e, err := leader.New(leader.Config{
		Topic: testTopic, Group: testGroup, SessionTimeout: time.Second, HeartbeatInterval: 50 * time.Millisecond,
		RebalanceTimeout: 2 * time.Second, RejoinBackoff: time.Hour, Readiness: ready, Gate: g,
	}, b.opts, s.lead, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	stays(t, s.started, 300*time.Millisecond, "a term started behind a closed gate")
	if _, n := b.owner(t); n != 0 {
		t.Fatalf("%d members behind a closed gate, want 0", n)
	}

	g.set("")
	first := s.next(t)
	g.set("clock off")
	kafkatest.Eventually(t, waitFor, "the term to end", closed(first.ended))
	if cause := context.Cause(first.ctx); !errors.Is(cause, leader.ErrPartitionRevoked) {
		t.Errorf("term ended with %v, want a revocation (a graceful handover)", cause)
	}
	kafkatest.Eventually(t, waitFor, "the replica to leave the group", func() bool { _, n := b.owner(t); return n == 0 })
	if e.Leading() {
		t.Error("leading behind a closed gate")
	}

	g.set("")
	if second := s.next(t); second.term.Number != 2 {
		t.Errorf("term %d after the gate reopened, want 2", second.term.Number)
	}
}
