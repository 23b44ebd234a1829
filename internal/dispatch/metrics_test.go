package dispatch

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

func TestNextDueSeries(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	end := base.Add(10 * time.Second)
	entry := func(s schedule.Spec) store.Entry {
		t.Helper()
		sch, err := s.Compile()
		if err != nil {
			t.Fatal(err)
		}
		return store.Entry{Schedule: sch}
	}
	tests := []struct {
		name   string
		spec   schedule.Spec
		due    float64 // 0: no series
		period float64 // 0: no series
	}{
		{"every", schedule.Spec{Name: "a", Every: schedule.Duration(10 * time.Second), Metrics: true}, float64(base.Unix() + 5), 10},
		{"cron weekdays", schedule.Spec{Name: "b", Cron: "0 6 * * MON-FRI", Metrics: true}, float64(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC).Unix()), 24 * 3600},
		{"not opted in", schedule.Spec{Name: "c", Every: schedule.Duration(10 * time.Second)}, 0, 0},
		{"paused", schedule.Spec{Name: "d", Every: schedule.Duration(10 * time.Second), Metrics: true, Paused: true}, 0, 0},
		{"last slot before its end", schedule.Spec{Name: "e", Every: schedule.Duration(10 * time.Second), Metrics: true, End: &end}, float64(base.Unix() + 5), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			m := newMetrics(reg)
			e := entry(tt.spec)
			m.next(tt.spec.Name, e, base)
			due, period := gauge(t, reg, "tickgroup_schedule_next_due_timestamp_seconds"), gauge(t, reg, "tickgroup_schedule_period_seconds")
			if due != tt.due || period != tt.period {
				t.Errorf("next due %v, period %v; want %v, %v", due, period, tt.due, tt.period)
			}
			m.endTerm(map[string]store.Entry{tt.spec.Name: e})
			if gauge(t, reg, "tickgroup_schedule_next_due_timestamp_seconds") != 0 || gauge(t, reg, "tickgroup_schedule_period_seconds") != 0 {
				t.Error("series left after the term ended")
			}
		})
	}
}

// gauge returns the value of the only series of metric in reg, or 0 when there is none.
func gauge(t *testing.T, reg *prometheus.Registry, metric string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == metric && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}
