package clock_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/clock"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
)

// ticker is one ticker replica as `ticker run` wires it: an Elector gated by a clock Monitor, on kfake, with a
// faked local clock.
type ticker struct {
	name    string
	clk     *fakeClock
	m       *clock.Monitor
	e       *leader.Elector
	ready   *admin.Readiness
	leading atomic.Bool
	terms   atomic.Int32
}

func startTicker(t *testing.T, opts []kgo.Opt, name string, skew time.Duration) *ticker {
	t.Helper()
	tk := &ticker{name: name, clk: &fakeClock{}, ready: new(admin.Readiness)}
	tk.clk.set(skew)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	src := &fakeSource{}
	src.rtt.Store(int64(2 * time.Millisecond))
	m, err := clock.New(clock.Config{Interval: 10 * time.Millisecond, Readiness: tk.ready, Now: tk.clk.Now}, src, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := leader.New(leader.Config{
		Topic:             "ns.ticker",
		Group:             "ns.ticker",
		SessionTimeout:    time.Second,
		HeartbeatInterval: 50 * time.Millisecond,
		RebalanceTimeout:  2 * time.Second,
		InstanceName:      name,
		Readiness:         tk.ready,
		Gate:              m,
	}, opts, func(ctx context.Context, _ leader.Term) error {
		tk.terms.Add(1)
		tk.leading.Store(true)
		<-ctx.Done()
		tk.leading.Store(false)
		return nil
	}, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk.m, tk.e = m, e
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = m.Run(ctx); done <- struct{}{} }()
	go func() { _ = e.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
	})
	return tk
}

func (tk *ticker) isReady() bool {
	ok, _ := tk.ready.Ready()
	return ok
}

// members is the number of members of the ticker group.
func members(t *testing.T, adm *kadm.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	gs, err := adm.DescribeGroups(ctx, "ns.ticker")
	if err != nil {
		t.Fatalf("describing the group: %v", err)
	}
	return len(gs["ns.ticker"].Members)
}

// TestSkewedTickerDoesNotLead: of two replicas, the one whose clock is 3 s ahead stays out of the group and the
// healthy one leads; when the healthy one's clock goes off too, nobody leads; when the first one's clock comes
// back, it joins and leads.
func TestSkewedTickerDoesNotLead(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "ns.ticker"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)

	off := startTicker(t, opts, "off", 3*time.Second)
	good := startTicker(t, opts, "good", 0)
	kafkatest.Eventually(t, waitFor, "the healthy replica to lead", good.leading.Load)
	kafkatest.Eventually(t, waitFor, "one member in the group", func() bool { return members(t, adm) == 1 })
	if off.leading.Load() || off.terms.Load() != 0 {
		t.Fatal("the skewed replica led")
	}
	if off.isReady() || !good.isReady() {
		t.Errorf("ready: skewed %v, healthy %v; want false, true", off.isReady(), good.isReady())
	}

	// The leader's clock goes 2 s behind: it steps down and leaves; the other is still off, so nobody leads.
	good.clk.set(-2 * time.Second)
	kafkatest.Eventually(t, waitFor, "the leader to step down", func() bool { return !good.leading.Load() && !good.e.Leading() })
	kafkatest.Eventually(t, waitFor, "an empty group", func() bool { return members(t, adm) == 0 })

	// The first replica's clock is repaired: it joins and leads.
	off.clk.set(5 * time.Millisecond)
	kafkatest.Eventually(t, waitFor, "the repaired replica to lead", off.leading.Load)
	if good.leading.Load() {
		t.Fatal("the skewed replica leads")
	}
	// And the other, repaired too, joins as a follower without taking partition 0 away.
	good.clk.set(0)
	kafkatest.Eventually(t, waitFor, "both in the group", func() bool { return members(t, adm) == 2 })
	if !off.leading.Load() || good.leading.Load() || off.terms.Load() != 1 {
		t.Errorf("leading: repaired first %v (terms %d), second %v; want the first, in one term", off.leading.Load(), off.terms.Load(), good.leading.Load())
	}
}
