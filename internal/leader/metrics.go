package leader

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	leader  prometheus.Gauge
	changes prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_leader",
			Help: "1 while this ticker replica owns partition 0 of the ticker topic and runs a leader term, else 0.",
		}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_leader_changes_total",
			Help: "Leader terms started by this replica.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.leader, m.changes)
	}
	return m
}
