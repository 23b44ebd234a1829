package limit

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/named"
)

// View follows a limits topic and keeps its limits in memory, for the workers that keep them (named.View): each
// key's newest valid definition. Run retries every error but a refused permission: a worker that cannot read
// its limits must say so rather than hold their ticks for ever. It is safe for concurrent use.
type View struct {
	*named.View[Limit]
	metrics *metrics
}

// NewView returns a View of topic. opts are the connection options (kafka.Config.Opts); Run adds its own.
func NewView(opts []kgo.Opt, topic string, logger *slog.Logger, reg prometheus.Registerer) *View {
	m := newMetrics(reg)
	return &View{metrics: m, View: named.NewView(named.Config[Limit]{Opts: opts, Topic: topic, What: "limits", Key: "limit",
		Decode: Decode, Same: func(a, b Limit) bool { return a == b }, Logger: logger, Refused: m.refused, Count: m.limits})}
}

// All returns every limit, sorted by name.
func (v *View) All() []Limit { return Sorted(v.Snapshot()) }
