package calendarstore

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	refused   prometheus.Counter
	calendars prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_calendar_records_refused_total",
			Help: "Records of the calendars topic refused as no valid calendar of their key (another major version, another name, no working day, too large, not JSON); the key keeps its last valid definition.",
		}),
		calendars: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_calendars",
			Help: "Calendars defined in the calendars topic, as this process reads them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.refused, m.calendars)
	}
	return m
}

// Collectors returns the View's metrics, for an owner that registers them itself (for as long as a Run runs): a
// View made with a nil registerer has registered none.
func (v *View) Collectors() []prometheus.Collector {
	return []prometheus.Collector{v.metrics.refused, v.metrics.calendars}
}
