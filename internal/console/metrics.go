package console

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	reads       *prometheus.CounterVec
	readSeconds prometheus.Histogram
	schedules   prometheus.Gauge
	lastRead    prometheus.Gauge
	requests    *prometheus.CounterVec
	actions     *prometheus.CounterVec
	signIns     *prometheus.CounterVec
	details     *prometheus.CounterVec
	detailWait  prometheus.Gauge
	detailTook  prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_console_reads_total",
			Help: "Reads of the namespace by the console's refresher, by result (ok, failed).",
		}, []string{"result"}),
		readSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tickgroup_console_read_duration_seconds",
			Help:    "Time one read of the namespace took (who leads, lag, every schedule's runs over the last day).",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}),
		schedules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_console_schedules",
			Help: "Schedules in the console's newest read.",
		}),
		lastRead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_console_last_read_timestamp_seconds",
			Help: "When the console last read the namespace successfully: the pages are this old.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_console_requests_total",
			Help: "Requests served, by page (fleet, schedules, schedule, action, asset, other) and status code.",
		}, []string{"page", "code"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_console_actions_total",
			Help: "Actions taken through the console, by action (trigger, pause, resume, backfill, bulk_pause, bulk_resume, bulk_trigger) and result (ok, failed, refused).",
		}, []string{"action", "result"}),
		signIns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_console_sign_in_refusals_total",
			Help: "Requests whose credentials were refused, by reason (failed: wrong; throttled: too many failures from the address; busy: too many password checks at once).",
		}, []string{"reason"}),
		details: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickgroup_console_detail_reads_total",
			Help: "Reads of one schedule's runs and change log for its page, by result (ok, failed, dropped: every client waiting for it left; refused: too many under way).",
		}, []string{"result"}),
		detailWait: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_console_detail_reads_pending",
			Help: "Reads of schedule pages under way or waiting for a slot.",
		}),
		detailTook: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tickgroup_console_detail_read_duration_seconds",
			Help:    "Time one read of a schedule's runs and change log took, once it had a slot.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
	}
	for _, r := range []string{"failed", "throttled", "busy"} {
		m.signIns.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "failed", "dropped", "refused"} {
		m.details.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "failed"} {
		m.reads.WithLabelValues(r)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.reads, m.readSeconds, m.schedules, m.lastRead, m.requests, m.actions, m.signIns, m.details, m.detailWait, m.detailTook}
}

// register registers the metrics with r, and undoes it on a failure.
func (m *metrics) register(r prometheus.Registerer) error {
	var done []prometheus.Collector
	for _, c := range m.collectors() {
		if err := r.Register(c); err != nil {
			for _, d := range done {
				r.Unregister(d)
			}
			return errors.Join(errors.New("console: registering its metrics"), err)
		}
		done = append(done, c)
	}
	return nil
}

func (m *metrics) unregister(r prometheus.Registerer) {
	for _, c := range m.collectors() {
		r.Unregister(c)
	}
}
