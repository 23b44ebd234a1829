package clock

import "github.com/prometheus/client_golang/prometheus"

// metrics exports the Monitor's state. The offset series are absent while nothing is measured (the first round,
// or an unmeasurable clock), so that an alert on them never fires on a made-up zero.
type metrics struct {
	m *Monitor

	offset, uncertainty, skewed *prometheus.Desc
	measured                    prometheus.Gauge
	failures                    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, m *Monitor) *metrics {
	x := &metrics{
		m: m,
		offset: prometheus.NewDesc("tickgroup_clock_offset_seconds",
			"This host's clock minus the Kafka broker's, from the last measurement: positive when this host is ahead. Absent while not measured.", nil, nil),
		uncertainty: prometheus.NewDesc("tickgroup_clock_offset_uncertainty_seconds",
			"Bound of the error of tickgroup_clock_offset_seconds: half the measurement's round trip plus half a millisecond.", nil, nil),
		skewed: prometheus.NewDesc("tickgroup_clock_skewed",
			"1 while the clock offset is surely beyond --max-clock-skew (a ticker does not lead then), else 0. Absent while not measured.", nil, nil),
		measured: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_clock_last_measured_timestamp_seconds",
			Help: "Unix time of the last clock offset measurement (0: none yet).",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_clock_measurement_failures_total",
			Help: "Rounds of clock offset measurement that measured nothing (broker unreachable, timeout, clock topic missing).",
		}),
	}
	if reg != nil {
		reg.MustRegister(x, x.measured, x.failures)
	}
	return x
}

// Describe implements prometheus.Collector for the offset series.
func (x *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- x.offset
	ch <- x.uncertainty
	ch <- x.skewed
}

// Collect implements prometheus.Collector for the offset series.
func (x *metrics) Collect(ch chan<- prometheus.Metric) {
	r, ok := x.m.Offset()
	if !ok {
		return
	}
	skewed := 0.0
	if x.m.Skewed() {
		skewed = 1
	}
	ch <- prometheus.MustNewConstMetric(x.offset, prometheus.GaugeValue, r.Offset.Seconds())
	ch <- prometheus.MustNewConstMetric(x.uncertainty, prometheus.GaugeValue, r.Uncertainty.Seconds())
	ch <- prometheus.MustNewConstMetric(x.skewed, prometheus.GaugeValue, skewed)
}
