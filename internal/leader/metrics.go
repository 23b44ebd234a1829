package leader

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	leaders prometheus.Gauge
	leader  prometheus.Gauge
	leading *prometheus.GaugeVec
	changes prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		leaders: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_leaders",
			Help: "The number of leaders of the namespace (partitions of the ticker topic), as this replica read it at start.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickgroup_leader",
			Help: "The number of ticker-topic partitions (leaders) this replica leads now: 1 or 0 in a namespace with one leader.",
		}),
		leading: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_leading",
			Help: "1 while this replica owns ticker-topic partition leader and runs its term; the series goes when the term ends.",
		}, []string{"leader"}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickgroup_leader_changes_total",
			Help: "Leader terms started by this replica.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.leaders, m.leader, m.leading, m.changes)
	}
	return m
}

// set records that partition p is (or is no longer) led here, and how many partitions are.
func (m *metrics) set(p int32, leading bool, n int) {
	if leading {
		m.leading.WithLabelValues(strconv.Itoa(int(p))).Set(1)
	} else {
		m.leading.DeleteLabelValues(strconv.Itoa(int(p)))
	}
	m.leader.Set(float64(n))
}
