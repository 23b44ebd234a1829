package dispatch

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestTermRoutesPoolsAndSurvivesOneDown: each schedule's ticks go to its pool's work topic; a pool whose topics
// cannot be made ready (here: a replication factor the one-broker cluster cannot give) emits nothing, says so
// (tickgroup_pool_down, the unroutable count, an error log), and delays nothing else in the term.
func TestTermRoutesPoolsAndSurvivesOneDown(t *testing.T) {
	t.Parallel()
	b := setupTerm(t)
	if _, err := kafka.EnsurePoolTopics(t.Context(), kadm.NewClient(b.cl), b.names.Pool("ok"), kafka.TopicOptions{WorkPartitions: 3}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	var err error
	b.d, err = New(Config{Names: b.names, Lead: 3 * time.Second, PoolTopics: kafka.TopicOptions{ReplicationFactor: 3}}, b.opts, b.view,
		slog.New(slog.NewTextHandler(b.logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	b.put(t, schedule.Spec{Name: "plain", Every: schedule.Duration(time.Second)})
	b.put(t, schedule.Spec{Name: "okjob", Every: schedule.Duration(time.Second), Pool: "ok"})
	b.put(t, schedule.Spec{Name: "badjob", Every: schedule.Duration(time.Second), Pool: "bad"})
	b.lead(t)

	okTicks := func() (n int) {
		for p := range int32(3) {
			if _, err := kafka.ReadStable(t.Context(), b.opts, b.names.Pool("ok").Work, p, func(r *kgo.Record) error {
				if tk, err := tick.Decode(r.Value); err == nil {
					if tk.Schedule != "okjob" {
						t.Errorf("pool ok holds a tick of %s", tk.Schedule)
					}
					n++
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	kafkatest.Eventually(t, 20*time.Second, "3 ticks of plain and of okjob", func() bool {
		plain := 0
		for _, tk := range b.ticks(t) {
			if tk.Schedule != "plain" {
				t.Fatalf("the default pool holds a tick of %s", tk.Schedule)
			}
			plain++
		}
		return plain >= 3 && okTicks() >= 3
	})
	if got := gauge(t, reg, "tickgroup_pool_down"); got != 1 {
		t.Errorf("tickgroup_pool_down = %v, want 1 (pool bad)", got)
	}
	if !strings.Contains(b.logs.String(), "pool not ready") || !strings.Contains(b.logs.String(), "pool=bad") {
		t.Errorf("no error log naming pool bad:\n%s", b.logs.String())
	}
	mfs, _ := reg.Gather()
	unroutable := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "tickgroup_slots_unroutable_total" {
			for _, m := range mf.GetMetric() {
				unroutable += m.GetCounter().GetValue()
			}
		}
	}
	if unroutable < 1 {
		t.Errorf("tickgroup_slots_unroutable_total = %v, want the slots of badjob", unroutable)
	}
	tds, err := kadm.NewClient(b.cl).ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if tds.Has(b.names.Pool("bad").Work) {
		t.Errorf("pool bad's work topic exists")
	}
}
