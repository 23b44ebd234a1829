package limit

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	refused prometheus.Counter
	limits  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_limit_records_refused_total",
			Help: "Records of the limits topic refused as no valid limit of their key (another major version, another name, a bound out of range, not JSON); the key keeps its last valid definition.",
		}),
		limits: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_limits",
			Help: "Limits defined in the limits topic, as this process reads them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.refused, m.limits)
	}
	return m
}
