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
			Help: "Actions taken through the console, by action (trigger, pause, resume, backfill) and result (ok, failed, refused).",
		}, []string{"action", "result"}),
	}
	for _, r := range []string{"ok", "failed"} {
		m.reads.WithLabelValues(r)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.reads, m.readSeconds, m.schedules, m.lastRead, m.requests, m.actions}
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
