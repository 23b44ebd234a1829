package calendarstore

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/named"
)

// View follows a calendars topic and keeps its calendars in memory, compiled, for the processes that consult
// them (named.View): each key's newest valid definition. A Calendar is immutable: a caller of Get may keep it,
// and a later change of the calendar makes another. Sync lets a new leader term read every calendar written
// before it. It is safe for concurrent use.
type View struct {
	*named.View[*calendar.Calendar]
	metrics *metrics
}

// NewView returns a View of topic. opts are the connection options (kafka.Config.Opts); Run adds its own.
func NewView(opts []kgo.Opt, topic string, logger *slog.Logger, reg prometheus.Registerer) *View {
	m := newMetrics(reg)
	return &View{metrics: m, View: named.NewView(named.Config[*calendar.Calendar]{Opts: opts, Topic: topic, What: "calendars",
		Key: "calendar", Decode: Decode, Same: Same, Logger: logger, Refused: m.refused, Count: m.calendars})}
}

// All returns every calendar, sorted by name.
func (v *View) All() []*calendar.Calendar { return Sorted(v.Snapshot()) }
