package clock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Config configures a Monitor.
type Config struct {
	// Interval is the time between two rounds. Defaults to 10s.
	Interval time.Duration
	// Samples is the number of marks per round; the one with the shortest round trip counts. Defaults to 3.
	Samples int
	// Timeout bounds one sample. A round ends at its first failed sample, so a failing first round, which a
	// ticker waits for before it joins the election, takes at most this long. Defaults to 5s.
	Timeout time.Duration
	// MaxSkew is the largest offset from the broker's clock that counts as within. Defaults to 1s.
	MaxSkew time.Duration
	// Consequence ends the warning logged on entering skewed: what this process does about it, for example
	// "this ticker does not lead until its clock is back within". Optional.
	Consequence string
	// Readiness, when set, gets the condition ReadinessCondition: false while Refusal is not empty (the first
	// round, and skewed). A ticker passes it; a worker, which runs on while skewed, does not.
	Readiness *admin.Readiness
	// Now is the local clock being measured. Defaults to time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	DefaultInterval = 10 * time.Second
	DefaultSamples  = 3
	DefaultTimeout  = 5 * time.Second
	DefaultMaxSkew  = time.Second
)

// ReadinessCondition is the name of the readiness condition a Monitor sets (Config.Readiness).
const ReadinessCondition = "clock"

// Sample is one mark: the local times before the request and at its response, and the broker's append time.
type Sample struct {
	Sent, Acked, Broker time.Time
}

// RoundTrip is Acked - Sent.
func (s Sample) RoundTrip() time.Duration { return s.Acked.Sub(s.Sent) }

// Reading is the result of a round: the true offset lies within Offset ± Uncertainty.
type Reading struct {
	// Offset is the local clock minus the broker's: positive when this host is ahead.
	Offset time.Duration
	// Uncertainty is half the round trip plus half the broker's millisecond.
	Uncertainty time.Duration
	// At is the local time of the sample.
	At time.Time
}

// Read turns a sample into a reading (see the package doc for the bounds).
func Read(s Sample) Reading {
	rtt := s.RoundTrip()
	mid := s.Sent.Add(rtt / 2)
	half := time.Millisecond / 2 // the broker truncates its time to milliseconds
	return Reading{Offset: mid.Sub(s.Broker.Add(half)), Uncertainty: rtt/2 + half, At: mid}
}

// Beyond reports whether the offset is surely beyond max: |Offset| - Uncertainty > max.
func (r Reading) Beyond(max time.Duration) bool { return abs(r.Offset)-r.Uncertainty > max }

// Within reports whether the offset is surely within max: |Offset| + Uncertainty <= max.
func (r Reading) Within(max time.Duration) bool { return abs(r.Offset)+r.Uncertainty <= max }

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// A Source writes one mark and times it with now.
type Source interface {
	Sample(ctx context.Context, now func() time.Time) (Sample, error)
}

// Reporter is a Source that also carries the Monitor's last reading in its marks (Kafka does).
type Reporter interface {
	Report(Reading)
}

// ErrUnmeasurable wraps the errors of a Source that say the clock cannot be measured at all (the topic is
// missing or does not stamp LogAppendTime), as opposed to a failure that the next round may not have.
var ErrUnmeasurable = errors.New("the broker's clock cannot be read")

type state int

const (
	pending state = iota
	within
	skewed
	unmeasured
)

// Monitor measures the local clock's offset from the broker's every Interval.
type Monitor struct {
	cfg     Config
	src     Source
	logger  *slog.Logger
	metrics *metrics

	mu      sync.Mutex
	state   state
	reading Reading
	read    bool          // reading holds a measurement
	changed chan struct{} // closed and replaced when Refusal changes
	failing bool          // the last round failed (logged once)
	why     string        // why the clock is unmeasurable, since the warning that began this stretch
}

// New returns a Monitor that samples src.
func New(cfg Config, src Source, logger *slog.Logger, reg prometheus.Registerer) (*Monitor, error) {
	if src == nil {
		return nil, errors.New("clock: a source is required")
	}
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.Samples = cmp.Or(cfg.Samples, DefaultSamples)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	cfg.MaxSkew = cmp.Or(cfg.MaxSkew, DefaultMaxSkew)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	switch {
	case cfg.Interval < 0 || cfg.Timeout < 0 || cfg.MaxSkew < 0:
		return nil, errors.New("clock: durations must not be negative")
	case cfg.Samples < 1:
		return nil, fmt.Errorf("clock: samples %d: want at least 1", cfg.Samples)
	}
	m := &Monitor{cfg: cfg, src: src, logger: logger.With("component", "clock"), changed: make(chan struct{})}
	m.metrics = newMetrics(reg, m)
	if cfg.Readiness != nil {
		cfg.Readiness.Set(ReadinessCondition, false)
	}
	return m, nil
}

// Run measures at once and then every Interval until ctx ends, and returns nil then. It returns an error only
// for a refused permission (kafka.IsACLError), which the next round would meet again.
func (m *Monitor) Run(ctx context.Context) error {
	// After a round that measured nothing (the clock topic not known to the broker yet, a moment after
	// `ticker init`; a broker that did not answer), the next comes sooner: 1s, doubling up to Interval.
	retry := min(time.Second, m.cfg.Interval)
	timer := time.NewTimer(m.cfg.Interval)
	defer timer.Stop()
	for {
		measured, err := m.round(ctx)
		if err != nil {
			return err
		}
		wait := m.cfg.Interval
		if measured {
			retry = min(time.Second, m.cfg.Interval)
		} else {
			wait, retry = retry, min(2*retry, m.cfg.Interval)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
	}
}

// Offset returns the last reading, and false when there is none (nothing measured yet, or unmeasurable).
func (m *Monitor) Offset() (Reading, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.reading, m.read && m.state != unmeasured
}

// Skewed reports whether the offset was last found surely beyond MaxSkew.
func (m *Monitor) Skewed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state == skewed
}

// Refusal says why this process must not lead now, or "" when it may: during the first round, and while
// skewed. A clock that cannot be measured refuses nothing.
func (m *Monitor) Refusal() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refusal()
}

func (m *Monitor) refusal() string {
	switch m.state {
	case pending:
		return "the clock offset is not measured yet"
	case skewed:
		return fmt.Sprintf("the clock is %s from the broker's (±%s), beyond the maximum skew %s", signed(m.reading.Offset), round(m.reading.Uncertainty), m.cfg.MaxSkew)
	}
	return ""
}

// Changed returns a channel that is closed when Refusal changes next (between empty and not).
func (m *Monitor) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// round takes the samples of one round and records the result.
func (m *Monitor) round(ctx context.Context) (measured bool, err error) {
	var (
		best    Sample
		ok      bool
		lastErr error
	)
	// The first error ends the round: the next mark would most likely fail too, and a first round that
	// fails must end within one Timeout, since a ticker waits for it before it joins the election.
	for i := 0; i < m.cfg.Samples && lastErr == nil; i++ {
		sctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
		s, err := m.src.Sample(sctx, m.cfg.Now)
		cancel()
		switch {
		case ctx.Err() != nil:
			return false, nil
		case kafka.IsACLError(err):
			return false, fmt.Errorf("clock: %w", err)
		case errors.Is(err, ErrUnmeasurable):
			m.unmeasurable(err)
			return false, nil
		case err != nil:
			lastErr = err
			continue
		}
		if !ok || s.RoundTrip() < best.RoundTrip() {
			best, ok = s, true
		}
	}
	if !ok {
		m.failed(lastErr)
		return false, nil
	}
	// A round cut short by an error still counts what it measured.
	m.measured(Read(best))
	return true, nil
}

// measured records a reading and moves the state.
func (m *Monitor) measured(r Reading) {
	m.mu.Lock()
	defer m.mu.Unlock()
	again := m.failing || m.why != "" // say once that the trouble logged before is over
	m.failing, m.why = false, ""
	prev := m.state
	m.reading, m.read = r, true
	if rep, ok := m.src.(Reporter); ok {
		rep.Report(r)
	}
	m.metrics.measured.Set(float64(r.At.Add(-r.Offset).UnixNano()) / 1e9) // by the broker's clock, as Prometheus's should be
	next := prev
	switch {
	case r.Beyond(m.cfg.MaxSkew):
		next = skewed
	case r.Within(m.cfg.MaxSkew):
		next = within
	case prev == pending || prev == unmeasured:
		// Too slow a round trip to decide: a first reading is taken as within, as an unmeasured clock is.
		next = within
	}
	args := []any{"offset", signed(r.Offset), "uncertainty", round(r.Uncertainty), "max_skew", m.cfg.MaxSkew}
	switch {
	case next == skewed && prev != skewed:
		msg := "clock offset from the broker beyond the maximum skew: fix this host's time sync"
		if m.cfg.Consequence != "" {
			msg += "; " + m.cfg.Consequence
		}
		m.logger.Warn(msg, args...)
	case next == within && prev == skewed:
		m.logger.Info("clock offset back within the maximum skew", args...)
	case again:
		m.logger.Info("measuring the clock offset again", args...)
	default:
		m.logger.Debug("clock offset", args...)
	}
	m.set(next)
}

// failed records a round without a sample: the state and the last figures stay.
func (m *Monitor) failed(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.metrics.failures.Inc()
	if !m.failing {
		m.logger.Warn("measuring the clock offset failed; retrying after 1s, then less often up to every interval", "err", err, "interval", m.cfg.Interval)
		m.failing = true
	}
	if m.state == pending {
		m.set(unmeasured) // a first round that fails must not keep a ticker out of the election
	}
}

// unmeasurable records that the clock cannot be measured: no figures, nothing refused.
func (m *Monitor) unmeasurable(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.metrics.failures.Inc()
	m.failing = false
	if m.why == "" { // once per stretch: the reason's wording changes as the client's metadata catches up
		m.logger.Warn("cannot measure the clock offset; leading is not restricted until it can be measured", "err", err)
	}
	m.why = err.Error()
	m.read = false
	m.set(unmeasured)
}

// set moves to next and signals a change of Refusal. m.mu is held.
func (m *Monitor) set(next state) {
	before := m.refusal()
	m.state = next
	after := m.refusal()
	if (before == "") == (after == "") {
		return
	}
	close(m.changed)
	m.changed = make(chan struct{})
	if m.cfg.Readiness != nil {
		m.cfg.Readiness.Set(ReadinessCondition, after == "")
	}
}

// signed prints an offset with its sign, so that "+1.5s" reads as "ahead", to 0.1 ms.
func signed(d time.Duration) string {
	d = round(d)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

// round drops the digits below 0.1 ms from a figure for people: the broker's clock has whole milliseconds.
func round(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
