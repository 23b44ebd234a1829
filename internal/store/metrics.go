package store

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	schedules prometheus.Gauge
	invalid   prometheus.Counter
	broken    prometheus.Gauge
	sharded   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		schedules: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_schedules",
			Help: "Schedules defined in the schedules topic, as this replica sees them.",
		}),
		invalid: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_invalid_schedule_records_total",
			Help: "Records of the schedules topic that could not be decoded; the key keeps its last valid definition and the leader repairs it (and dead-letters the record once).",
		}),
		broken: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_schedules_broken",
			Help: "Keys of the schedules topic whose newest record is invalid (or a stale repair) and waits for the leader's repair.",
		}),
		sharded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_schedules_sharded",
			Help: "1 when this replica reads only the shares of the schedules of the leaders it runs, 0 when it reads the whole schedules topic.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.schedules, m.invalid, m.broken, m.sharded)
	}
	return m
}
