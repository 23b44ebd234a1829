package clock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/child"
	"github.com/tickgroup/tickgroup/internal/clock"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

func TestRead(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name                  string
		sent, acked, broker   time.Duration // after t0
		wantOffset, wantUncer time.Duration
	}{
		// The broker appended at 5.0005 ms on average (its 5 ms stamp is truncated), the local midpoint is 5 ms.
		{"in sync", 0, 10 * time.Millisecond, 5 * time.Millisecond, -500 * time.Microsecond, 5500 * time.Microsecond},
		{"local ahead", 2 * time.Second, 2*time.Second + 2*time.Millisecond, 1 * time.Millisecond, 2*time.Second - 500*time.Microsecond, 1500 * time.Microsecond},
		{"local behind", 0, 2 * time.Millisecond, 3*time.Second + time.Millisecond, -3*time.Second - 500*time.Microsecond, 1500 * time.Microsecond},
	}
	for _, tt := range tests {
		r := clock.Read(clock.Sample{Sent: t0.Add(tt.sent), Acked: t0.Add(tt.acked), Broker: t0.Add(tt.broker)})
		if r.Offset != tt.wantOffset || r.Uncertainty != tt.wantUncer {
			t.Errorf("%s: offset %v ± %v, want %v ± %v", tt.name, r.Offset, r.Uncertainty, tt.wantOffset, tt.wantUncer)
		}
	}
}

func TestBeyondAndWithin(t *testing.T) {
	t.Parallel()
	const max = time.Second
	tests := []struct {
		offset, uncertainty  time.Duration
		wantBeyond, wantWith bool
	}{
		{0, time.Millisecond, false, true},
		{1500 * time.Millisecond, 100 * time.Millisecond, true, false},
		{-1500 * time.Millisecond, 100 * time.Millisecond, true, false},
		// A slow round trip leaves it open: neither surely beyond nor surely within.
		{1500 * time.Millisecond, 800 * time.Millisecond, false, false},
		{900 * time.Millisecond, 200 * time.Millisecond, false, false},
		{900 * time.Millisecond, 100 * time.Millisecond, false, true},
	}
	for _, tt := range tests {
		r := clock.Reading{Offset: tt.offset, Uncertainty: tt.uncertainty}
		if got := r.Beyond(max); got != tt.wantBeyond {
			t.Errorf("%v ± %v: Beyond = %v, want %v", tt.offset, tt.uncertainty, got, tt.wantBeyond)
		}
		if got := r.Within(max); got != tt.wantWith {
			t.Errorf("%v ± %v: Within = %v, want %v", tt.offset, tt.uncertainty, got, tt.wantWith)
		}
	}
}

// fakeSource stamps with the real clock, as a broker in sync would, and answers after rtt. The Monitor's clock is
// the faked one (fakeClock), so the offset is whatever the test sets.
type fakeSource struct {
	rtt atomic.Int64 // nanoseconds
	mu  sync.Mutex
	err error
}

func (f *fakeSource) Sample(ctx context.Context, now func() time.Time) (clock.Sample, error) {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return clock.Sample{}, err
	}
	sent := now()
	rtt := time.Duration(f.rtt.Load())
	broker := time.Now().Add(rtt / 2).Truncate(time.Millisecond)
	// The faked local clock moves with the real one: acked is sent + rtt without sleeping.
	return clock.Sample{Sent: sent, Acked: sent.Add(rtt), Broker: broker}, nil
}

func (f *fakeSource) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// fakeClock is the real clock moved by a skew the test sets.
type fakeClock struct{ skew atomic.Int64 }

func (c *fakeClock) Now() time.Time         { return time.Now().Add(time.Duration(c.skew.Load())) }
func (c *fakeClock) set(skew time.Duration) { c.skew.Store(int64(skew)) }

type bundle struct {
	src   *fakeSource
	clk   *fakeClock
	m     *clock.Monitor
	reg   *prometheus.Registry
	ready *admin.Readiness
	logs  *child.Log
}

// setup returns a Monitor on a fake source and a faked clock, measuring every 5 ms, not yet running.
func setup(t *testing.T) *bundle {
	t.Helper()
	return setupEvery(t, 5*time.Millisecond)
}

// setupEvery is setup measuring every interval.
func setupEvery(t *testing.T, interval time.Duration) *bundle {
	t.Helper()
	b := &bundle{src: &fakeSource{}, clk: &fakeClock{}, reg: prometheus.NewRegistry(), ready: new(admin.Readiness), logs: new(child.Log)}
	b.src.rtt.Store(int64(2 * time.Millisecond))
	m, err := clock.New(clock.Config{
		Interval:    interval,
		MaxSkew:     time.Second,
		Consequence: "not leading",
		Readiness:   b.ready,
		Now:         b.clk.Now,
	}, b.src, slog.New(slog.NewTextHandler(b.logs, nil)), b.reg)
	if err != nil {
		t.Fatalf("clock.New: %v", err)
	}
	b.m = m
	return b
}

// run runs the Monitor until the end of the test.
func (b *bundle) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}

func (b *bundle) isReady() bool {
	ok, _ := b.ready.Ready()
	return ok
}

const waitFor = 5 * time.Second

func TestMonitorFollowsTheClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if why := b.m.Refusal(); !strings.Contains(why, "not measured yet") || b.isReady() {
		t.Fatalf("before the first round: refusal %q, ready %v; want a refusal and not ready", why, b.isReady())
	}
	changed := b.m.Changed()
	b.run(t)
	kafkatest.Eventually(t, waitFor, "the first round", func() bool { return b.m.Refusal() == "" })
	assertClosed(t, changed, "Changed after the first round")
	if !b.isReady() {
		t.Error("not ready after a good first round")
	}
	r, ok := b.m.Offset()
	if !ok || r.Offset < -50*time.Millisecond || r.Offset > 50*time.Millisecond {
		t.Errorf("offset in sync: %v (ok %v), want about 0", r.Offset, ok)
	}

	// The host's clock jumps 3 s ahead: skewed, refused, not ready, one warning.
	changed = b.m.Changed()
	b.clk.set(3 * time.Second)
	kafkatest.Eventually(t, waitFor, "skewed", b.m.Skewed)
	assertClosed(t, changed, "Changed on entering skewed")
	if why := b.m.Refusal(); !strings.Contains(why, "is +") || !strings.Contains(why, "beyond the maximum skew 1s") {
		t.Errorf("refusal %q, want the offset and the bound", why)
	}
	if b.isReady() {
		t.Error("ready while skewed")
	}
	if got := value(t, b.reg, "tickgroup_clock_skewed"); got != 1 {
		t.Errorf("tickgroup_clock_skewed %v, want 1", got)
	}
	if got := value(t, b.reg, "tickgroup_clock_offset_seconds"); got < 2.9 || got > 3.1 {
		t.Errorf("tickgroup_clock_offset_seconds %v, want about 3", got)
	}
	waitRounds(t, b, 3)

	// A slow network round trip with the clock still off decides nothing: still skewed.
	b.src.rtt.Store(int64(5 * time.Second))
	b.clk.set(1500 * time.Millisecond)
	waitRounds(t, b, 3)
	if !b.m.Skewed() {
		t.Error("a 5 s round trip let a clock 1.5 s off back in")
	}

	// Time sync repairs the clock: within again, one info line.
	b.src.rtt.Store(int64(2 * time.Millisecond))
	changed = b.m.Changed()
	b.clk.set(-20 * time.Millisecond)
	kafkatest.Eventually(t, waitFor, "back within", func() bool { return b.m.Refusal() == "" })
	assertClosed(t, changed, "Changed on leaving skewed")
	if !b.isReady() {
		t.Error("not ready after the clock came back")
	}
	waitRounds(t, b, 3)
	logs := b.logs.String()
	if n := strings.Count(logs, "level=WARN"); n != 1 || !strings.Contains(logs, "not leading") {
		t.Errorf("%d warnings, want 1 with the consequence:\n%s", n, logs)
	}
	if n := strings.Count(logs, "back within"); n != 1 {
		t.Errorf("%d lines on coming back, want 1:\n%s", n, logs)
	}
}

func TestSlowFirstRoundDoesNotRefuse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.src.rtt.Store(int64(3 * time.Second))
	b.clk.set(1500 * time.Millisecond)
	b.run(t)
	kafkatest.Eventually(t, waitFor, "the first round", func() bool { return b.m.Refusal() == "" })
	if b.m.Skewed() {
		t.Error("skewed on a reading that cannot decide")
	}
}

func TestUnmeasurableRefusesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clk.set(time.Hour)
	b.src.fail(fmt.Errorf("%w: topic ns.clock missing", clock.ErrUnmeasurable))
	b.run(t)
	kafkatest.Eventually(t, waitFor, "the first round", func() bool { return b.m.Refusal() == "" })
	waitFailures(t, b, 3)
	if _, ok := b.m.Offset(); ok {
		t.Error("an offset while unmeasurable")
	}
	if n := countSeries(t, b.reg, "tickgroup_clock_offset_seconds"); n != 0 {
		t.Errorf("%d offset series while unmeasurable, want none", n)
	}
	if logs := b.logs.String(); strings.Count(logs, "cannot measure") != 1 || !strings.Contains(logs, "ns.clock missing") {
		t.Errorf("want one warning with the reason:\n%s", logs)
	}
	// The topic appears (ticker init): measured, and a clock an hour off is skewed.
	b.src.fail(nil)
	kafkatest.Eventually(t, waitFor, "skewed", b.m.Skewed)
}

// A round that measured nothing (the clock topic unknown to the broker a moment after ticker init) is tried
// again after a second, not after the whole interval: the offset is known within seconds of the start.
func TestUnmeasuredRoundRetriedSoon(t *testing.T) {
	t.Parallel()
	b := setupEvery(t, time.Hour)
	b.src.fail(fmt.Errorf("%w: topic ns.clock missing", clock.ErrUnmeasurable))
	b.run(t)
	waitFailures(t, b, 1)
	b.src.fail(nil)
	kafkatest.Eventually(t, 10*time.Second, "an offset, well before the hour's round", func() bool {
		_, ok := b.m.Offset()
		return ok
	})
}

func TestFailedRoundsKeepTheState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.clk.set(2 * time.Second)
	b.run(t)
	kafkatest.Eventually(t, waitFor, "skewed", b.m.Skewed)
	b.src.fail(errors.New("broker away"))
	waitFailures(t, b, 3)
	if !b.m.Skewed() {
		t.Error("failed rounds ended the skewed state")
	}
	if logs := b.logs.String(); strings.Count(logs, "measuring the clock offset failed") != 1 {
		t.Errorf("want one warning for a run of failures:\n%s", logs)
	}
}

func TestFailedFirstRoundDoesNotRefuse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.src.fail(errors.New("broker away"))
	b.run(t)
	kafkatest.Eventually(t, waitFor, "the first round", func() bool { return b.m.Refusal() == "" })
}

func TestACLErrorStopsRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.src.fail(kafka.NeedACL(errTopicDenied, "Write", "topic", "ns.clock"))
	err := b.m.Run(context.Background())
	if !kafka.IsACLError(err) || !strings.Contains(err.Error(), "ns.clock") {
		t.Fatalf("Run: %v, want the ACL error", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if _, err := clock.New(clock.Config{}, nil, logger, nil); err == nil {
		t.Error("no source: no error")
	}
	if _, err := clock.New(clock.Config{MaxSkew: -time.Second}, &fakeSource{}, logger, nil); err == nil {
		t.Error("negative skew: no error")
	}
}

func assertClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	default:
		t.Errorf("%s: not closed", what)
	}
}

// waitRounds waits until n more rounds were measured (by the gauge of the last measurement).
func waitRounds(t *testing.T, b *bundle, n int) {
	t.Helper()
	for range n {
		last := value(t, b.reg, "tickgroup_clock_last_measured_timestamp_seconds")
		kafkatest.Eventually(t, waitFor, "a round", func() bool {
			return value(t, b.reg, "tickgroup_clock_last_measured_timestamp_seconds") != last
		})
	}
}

func waitFailures(t *testing.T, b *bundle, n float64) {
	t.Helper()
	start := value(t, b.reg, "tickgroup_clock_measurement_failures_total")
	kafkatest.Eventually(t, waitFor, "failed rounds", func() bool {
		return value(t, b.reg, "tickgroup_clock_measurement_failures_total") >= start+n
	})
}

var errTopicDenied = kerr.TopicAuthorizationFailed

// value is the value of the one series of the metric name, 0 when it is absent.
func value(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		m := mf.GetMetric()[0]
		switch {
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func countSeries(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}
