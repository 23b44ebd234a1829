package kafka

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/plugin/kprom"
)

// ClientMetrics returns the option that exports one client's Kafka metrics (franz-go's kprom plugin) on reg,
// as tickgroup_kafka_* series with a role label. Each concurrently open client needs its own role: kprom
// registers its collectors when the client opens and removes them when it closes.
func ClientMetrics(reg prometheus.Registerer, role string) kgo.Opt {
	return kgo.WithHooks(kprom.NewMetrics("tickgroup_kafka",
		kprom.Registerer(reg),
		kprom.WithStaticLabel(prometheus.Labels{"role": role}),
	))
}
