package shares

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	copied   prometheus.Counter
	failures prometheus.Counter
	fenced   prometheus.Counter
	progress prometheus.Gauge
	end      prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		copied: prometheus.NewCounter(prometheus.CounterOpts{Name: "tickgroup_schedule_shares_copied_total",
			Help: "Schedules records leader 0 copied into the schedule shares topic."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "tickgroup_schedule_shares_failures_total",
			Help: "Copies of the schedules into their shares that failed and started again."}),
		fenced: prometheus.NewCounter(prometheus.CounterOpts{Name: "tickgroup_schedule_shares_fenced_total",
			Help: "Copy sessions of this replica that another copier fenced (a leader 0 that lost its term, or the next one); each starts again."}),
		progress: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tickgroup_schedule_shares_progress_offset",
			Help: "Offset of the last schedules record copied into the shares (-1: none)."}),
		end: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tickgroup_schedule_shares_source_end_offset",
			Help: "End of the schedules topic as the copier last listed it: the shares are complete when progress is end - 1 or more."}),
	}
	if reg != nil {
		reg.MustRegister(m.copied, m.failures, m.fenced, m.progress, m.end)
	}
	return m
}
