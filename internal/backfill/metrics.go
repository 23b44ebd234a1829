package backfill

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the runners' metrics, shared by every leader term of a replica; the caller registers them
// (Collectors) once, with its own.
type Metrics struct {
	ticks   prometheus.Counter // backfill ticks committed
	invalid prometheus.Counter // records of the backfill topics refused
	active  prometheus.Gauge   // backfills this replica's terms work through
}

// NewMetrics returns the runners' metrics, not registered.
func NewMetrics() *Metrics {
	return &Metrics{
		ticks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_backfill_ticks_emitted_total",
			Help: "Backfill ticks committed to the work topic by this replica's leader terms (one per slot and shard of a backfill).",
		}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_backfill_invalid_records_total",
			Help: "Records of the backfill topics that were not valid (or, on the progress topic, not a leader's) and were skipped; leader 0 dead-letters an invalid request once.",
		}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_backfills_active",
			Help: "Backfills this replica's leader terms are working through.",
		}),
	}
}

// Collectors lists the metrics, to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.ticks, m.invalid, m.active}
}
