package store

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	schedules prometheus.Gauge
	invalid   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		schedules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_schedules",
			Help: "Schedules defined in the schedules topic, as this replica sees them.",
		}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_invalid_schedule_records_total",
			Help: "Records of the schedules topic that could not be decoded and were skipped (and dead-lettered).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.schedules, m.invalid)
	}
	return m
}
