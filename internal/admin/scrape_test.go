package admin

import (
	"strings"
	"testing"
)

func TestParseMetrics(t *testing.T) {
	t.Parallel()
	page := `# HELP tickgroup_leader 1 while leading
# TYPE tickgroup_leader gauge
tickgroup_leader 1
# TYPE tickgroup_leader_state_refused_total counter
tickgroup_leader_state_refused_total{reason="future"} 2
# TYPE tickgroup_work_lag_seconds gauge
tickgroup_work_lag_seconds{partition="0"} 0
tickgroup_work_lag_seconds{partition="3"} 12.5
# TYPE tickgroup_emit_lag_seconds histogram
tickgroup_emit_lag_seconds_bucket{le="1"} 3
tickgroup_emit_lag_seconds_bucket{le="+Inf"} 4
tickgroup_emit_lag_seconds_sum 2.5
tickgroup_emit_lag_seconds_count 4
`
	s, err := ParseMetrics(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Get("tickgroup_leader"); !ok || v != 1 {
		t.Errorf("tickgroup_leader = %v, %v", v, ok)
	}
	if v, ok := s.Get("tickgroup_leader_state_refused_total", "reason", "future"); !ok || v != 2 {
		t.Errorf("refused{future} = %v, %v", v, ok)
	}
	if got := s.ByLabel("tickgroup_work_lag_seconds", "partition"); len(got) != 2 || got["3"] != 12.5 {
		t.Errorf("lag by partition = %v", got)
	}
	if v := s["tickgroup_emit_lag_seconds_count"]; v != 4 {
		t.Errorf("histogram count = %v", v)
	}
	if _, err := ParseMetrics(strings.NewReader("not a metrics page {")); err == nil {
		t.Error("garbage parsed without an error")
	}
}
