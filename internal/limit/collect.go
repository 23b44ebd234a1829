package limit

import "github.com/prometheus/client_golang/prometheus"

// Collectors returns the View's metrics, for an owner that registers them itself (a worker registers its metrics
// for as long as a Run runs): a View made with a nil registerer has registered none.
func (v *View) Collectors() []prometheus.Collector {
	return []prometheus.Collector{v.metrics.refused, v.metrics.limits}
}
