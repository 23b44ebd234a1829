package kafka

import (
	"errors"
	"strconv"

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

// LeaderClientMetrics is ClientMetrics for the producer of leader k's terms: role "leader" (leader 0) or
// "leader-<k>". Two terms of one leader can overlap in one process for a moment (a lost term that has not
// returned yet, and the next one): the second client's collectors are then not registered, instead of a panic,
// and its series appear with the next term.
func LeaderClientMetrics(reg prometheus.Registerer, k int32) kgo.Opt {
	role := "leader"
	if k != 0 {
		role = "leader-" + strconv.Itoa(int(k))
	}
	return ClientMetrics(Tolerant(reg), role)
}

// Tolerant returns reg (nil for nil) with a MustRegister that passes over collectors registered already: for
// series that two parts of one process both measure (a ticker and a worker embedded in one program both watch
// the host's clock), the first to register reports them.
func Tolerant(reg prometheus.Registerer) prometheus.Registerer {
	if reg == nil {
		return nil
	}
	return tolerant{reg}
}

// tolerant is a Registerer whose MustRegister passes over collectors registered already.
type tolerant struct{ prometheus.Registerer }

func (t tolerant) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := t.Register(c); err != nil {
			if are := (prometheus.AlreadyRegisteredError{}); errors.As(err, &are) {
				continue
			}
			panic(err)
		}
	}
}
