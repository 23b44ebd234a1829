package dispatch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func TestStallTimeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ lead, want time.Duration }{
		{0, MinStallTimeout},
		{4 * time.Second, MinStallTimeout},
		{DefaultLead, 5 * time.Second},
		{time.Minute, 30 * time.Second},
		{MaxLead, MaxLead / 2},
	} {
		if got := StallTimeout(tt.lead); got != tt.want {
			t.Errorf("StallTimeout(%v) = %v, want %v", tt.lead, got, tt.want)
		}
	}
}

// TestWatchdog, on the fake clock of a synctest bubble: an idle term is never stalled however long it waits, a
// span that ends within the timeout is no stall, and a span left open is one, noticed within a quarter of the
// timeout after it.
func TestWatchdog(t *testing.T) {
	// The sleeps below run inside synctest bubbles: they advance the bubble's fake clock, not the machine's.
	t.Parallel()
	const timeout = 4 * time.Second
	watch := func(w *watchdog) (stalls <-chan time.Duration, stop func()) {
		ch := make(chan time.Duration, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); w.run(ctx, func(d time.Duration) { ch <- d }) }()
		return ch, func() { cancel(); <-done }
	}
	t.Run("idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWatchdog(timeout, nil)
			stalls, stop := watch(w)
			defer stop()
			time.Sleep(100 * timeout)
			synctest.Wait()
			if len(stalls) != 0 {
				t.Errorf("an idle term stalled after %v", <-stalls)
			}
		})
	})
	t.Run("spans within the timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWatchdog(timeout, nil)
			stalls, stop := watch(w)
			defer stop()
			for range 20 {
				w.begin()
				time.Sleep(timeout - time.Millisecond)
				w.end()
				time.Sleep(timeout / 3)
			}
			synctest.Wait()
			if len(stalls) != 0 {
				t.Errorf("spans shorter than the timeout stalled after %v", <-stalls)
			}
		})
	})
	t.Run("a span left open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			w := newWatchdog(timeout, nil)
			stalls, stop := watch(w)
			defer stop()
			time.Sleep(timeout / 3) // an idle stretch first: only the span counts
			w.begin()
			began := time.Now()
			d := <-stalls
			if waited := time.Since(began); waited <= timeout || waited > timeout+timeout/4 {
				t.Errorf("stall noticed %v after the span began, want within (%v, %v]", waited, timeout, timeout+timeout/4)
			}
			if d <= timeout {
				t.Errorf("stall reported after %v, want more than %v", d, timeout)
			}
		})
	})
	t.Run("a span open while the cluster is away", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var failed atomic.Pointer[time.Time]
			fail := func() { now := time.Now(); failed.Store(&now) }
			w := newWatchdog(timeout, func() time.Time {
				if f := failed.Load(); f != nil {
					return *f
				}
				return time.Time{}
			})
			stalls, stop := watch(w)
			defer stop()
			w.begin()
			began := time.Now()
			// The membership fails to reach the cluster every 500 ms for three timeouts (an outage): no stall.
			for time.Since(began) < 3*timeout {
				fail()
				time.Sleep(500 * time.Millisecond)
			}
			back := time.Now()
			synctest.Wait()
			if len(stalls) != 0 {
				t.Fatalf("a span stalled after %v while the membership could not reach the cluster", <-stalls)
			}
			// Back: the span still open is a stall a timeout after the last failure.
			d := <-stalls
			if waited := time.Since(back); waited <= timeout-500*time.Millisecond || waited > timeout+timeout/4 {
				t.Errorf("stall noticed %v after the cluster was back, want about the timeout %v", waited, timeout)
			}
			if d <= 3*timeout {
				t.Errorf("stall reported after %v, want the whole span, more than %v", d, 3*timeout)
			}
		})
	})
}

// stallBundle is a kfake cluster with a namespace's topics and group timings fit for an election.
type stallBundle struct {
	names kafka.Names
	opts  []kgo.Opt
	cl    *kgo.Client
}

func setupStall(t *testing.T) *stallBundle {
	t.Helper()
	names, opts, cl := kfakeNamespace(t, "st", kfake.GroupMinSessionTimeout(100*time.Millisecond))
	return &stallBundle{names: names, opts: opts, cl: cl}
}

// replica is one ticker replica's leader side: its View, Dispatcher, log and metrics.
type stallReplica struct {
	d    *Dispatcher
	logs *child.Log
	reg  *prometheus.Registry
}

// dispatcher returns a Dispatcher of its own (and View) on b, with a 1 s lead and stall timeout; hold, when set,
// holds its commits.
func (b *stallBundle) dispatcher(t *testing.T, hold func(context.Context) error) *stallReplica {
	t.Helper()
	r := &stallReplica{logs: &child.Log{}, reg: prometheus.NewRegistry()}
	logger := slog.New(slog.NewTextHandler(r.logs, nil))
	view := store.NewView(b.opts, b.names.Schedules, "", logger, nil)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = view.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	d, err := New(Config{Names: b.names, Lead: time.Second, StallTimeout: time.Second}, b.opts, view, logger, r.reg)
	if err != nil {
		t.Fatal(err)
	}
	d.testHold = hold
	r.d = d
	return r
}

// holdWhile is a hold that holds every commit while on is true, until the commit's context ends.
func holdWhile(on *atomic.Bool) func(context.Context) error {
	return func(ctx context.Context) error {
		if !on.Load() {
			return nil
		}
		<-ctx.Done()
		return errors.New("held by the test")
	}
}

// tickList returns the committed ticks on the work topic.
func (b *stallBundle) tickList(t *testing.T) []tick.Tick {
	t.Helper()
	return (&termBundle{names: b.names, opts: b.opts}).ticks(t)
}

// ticks counts the committed ticks on the work topic by ID.
func (b *stallBundle) ticks(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, tk := range b.tickList(t) {
		out[tk.ID]++
	}
	return out
}

// TestTermGivesUpWhenCommitsHang: a term whose commits stop being confirmed while it runs (its context, the
// group membership, stays alive) ends on its own within the stall timeout (plus the watchdog's quarter), says
// why at error level and counts it; the ticks it held are not committed.
func TestTermGivesUpWhenCommitsHang(t *testing.T) {
	t.Parallel()
	b := setupStall(t)
	var hold atomic.Bool
	r := b.dispatcher(t, holdWhile(&hold))
	if _, err := store.Put(t.Context(), b.cl, b.names.Schedules, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- r.d.Lead(ctx, leader.Term{Number: 1}) }()
	kafkatest.Eventually(t, 20*time.Second, "ticks of beat", func() bool { return len(b.ticks(t)) >= 3 })

	hold.Store(true)
	held := time.Now()
	var err error
	select {
	case err = <-errs:
	case <-time.After(20 * time.Second):
		t.Fatal("the term did not end within 20s of its commits hanging")
	}
	took := time.Since(held)
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("Lead returned %v, want ErrStalled", err)
	}
	// The stall timeout, a quarter of it for the watchdog's check, the held abort's second and some slack.
	if limit := time.Second + time.Second/4 + closeAbortTimeout + time.Second; took > limit {
		t.Errorf("the term ended %v after its commits began to hang, want at most %v", took, limit)
	}
	t.Logf("the term gave up %v after its commits began to hang: %v", took.Round(time.Millisecond), err)
	if !strings.Contains(r.logs.String(), "level=ERROR") || !strings.Contains(r.logs.String(), "giving up leadership") {
		t.Errorf("no error line says why the term gave up:\n%s", r.logs.String())
	}
	if n := counter(t, r.reg, "tickgroup_leader_stalled_total"); n != 1 {
		t.Errorf("tickgroup_leader_stalled_total = %v, want 1", n)
	}
}

// TestIdleTermIsNotStalled: a term with nothing to emit commits nothing for many stall timeouts and keeps its
// leadership: the watchdog times transactions, not the gaps between them.
func TestIdleTermIsNotStalled(t *testing.T) {
	t.Parallel()
	b := setupStall(t)
	r := b.dispatcher(t, nil)
	r.d.cfg.StallTimeout = 50 * time.Millisecond
	// Due once an hour: after its first slot (a commit), the term waits idle.
	if _, err := store.Put(t.Context(), b.cl, b.names.Schedules, schedule.Spec{Name: "hourly", Every: schedule.Duration(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- r.d.Lead(ctx, leader.Term{Number: 1}) }()
	kafkatest.Eventually(t, 20*time.Second, "the term to be ready", func() bool { return strings.Contains(r.logs.String(), "leader term ready") })
	// 40 stall timeouts of idleness, counted on the term's own loop: an hourly schedule wakes it for nothing, so
	// the wait is the span itself and not a sleep against a race.
	select {
	case err := <-errs:
		t.Fatalf("an idle term ended: %v", err)
	case <-time.After(40 * r.d.cfg.StallTimeout):
	}
	cancel()
	if err := <-errs; err != nil {
		t.Errorf("Lead: %v", err)
	}
	if n := counter(t, r.reg, "tickgroup_leader_stalled_total"); n != 0 {
		t.Errorf("tickgroup_leader_stalled_total = %v, want 0", n)
	}
}

// TestStalledLeaderHandsOver: two replicas (an Elector and a Dispatcher each) on one kfake cluster; the leader's
// commits hang while its group membership lives. It gives leadership up within the stall timeout, the other
// replica takes it and emits, and every slot of the schedule is committed once.
func TestStalledLeaderHandsOver(t *testing.T) {
	t.Parallel()
	b := setupStall(t)
	if _, err := store.Put(t.Context(), b.cl, b.names.Schedules, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)}); err != nil {
		t.Fatal(err)
	}
	var holdA atomic.Bool
	a := b.dispatcher(t, holdWhile(&holdA))
	c := b.dispatcher(t, nil)
	elect := func(name string, r *stallReplica) *leader.Elector {
		e, err := leader.New(leader.Config{Topic: b.names.Ticker, Group: b.names.TickerGroup, SessionTimeout: time.Second,
			HeartbeatInterval: 50 * time.Millisecond, RebalanceTimeout: 2 * time.Second, RejoinBackoff: 200 * time.Millisecond,
			InstanceName: name}, b.opts, r.d.Lead, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: Run: %v", name, err)
			}
		})
		return e
	}
	ea := elect("a", a)
	kafkatest.Eventually(t, 20*time.Second, "a to lead", ea.Leading)
	kafkatest.Eventually(t, 20*time.Second, "ticks from a", func() bool { return len(b.ticks(t)) >= 3 })
	ec := elect("c", c)
	kafkatest.Eventually(t, 20*time.Second, "c to join", func() bool {
		select {
		case <-ec.Joined():
			return true
		default:
			return false
		}
	})
	before := len(b.ticks(t))
	holdA.Store(true)
	held := time.Now()
	kafkatest.Eventually(t, 20*time.Second, "c to lead", ec.Leading)
	kafkatest.Eventually(t, 20*time.Second, "ticks from c", func() bool {
		return counter(t, c.reg, "tickgroup_ticks_emitted_total") > 0 && len(b.ticks(t)) >= before+5
	})
	t.Logf("c emitted %v after a's commits began to hang (stall timeout %v)", time.Since(held).Round(time.Millisecond), a.d.cfg.StallTimeout)
	if n := counter(t, a.reg, "tickgroup_leader_stalled_total"); n < 1 {
		t.Errorf("a: tickgroup_leader_stalled_total = %v, want at least 1", n)
	}
	if ea.Leading() {
		t.Error("a still leads")
	}
	b.eachSlotOnce(t, "beat", time.Second)
}

// counter returns the value of the unlabelled counter metric in reg, or 0 when there is none.
func counter(t *testing.T, reg *prometheus.Registry, metric string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == metric && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
