package tickgroup

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestApplyMakesPoolTopics: Apply, as Put and Write, makes the topics of a pool its schedules name before it
// writes them (a schedule for a pool whose ticks have nowhere to go would stop its leader), and its changes
// are the API's.
func TestApplyMakesPoolTopics(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	k := KafkaConfig{Brokers: c.ListenAddrs(), Namespace: "apply-test"}
	s, err := NewSchedules(k)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	want := []Schedule{
		{Name: "scan", Every: Duration(30 * time.Second), Pool: "batch", Catchup: CatchupLatest},
		{Name: "sweep", Every: Duration(time.Minute)},
	}
	changes, err := s.Apply(ctx, want, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 2 || changes[0].Op != ChangeCreate || changes[0].Name != "scan" || !reflect.DeepEqual(changes[0].Schedule, want[0]) {
		t.Errorf("Apply = %+v, want the creation of both", changes)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"apply-test.pool.batch.work", "apply-test.pool.batch.results", "apply-test.pool.batch.dlq"} {
		if !topics.Has(topic) {
			t.Errorf("Apply did not make %s; topics: %s", topic, strings.Join(topics.Names(), ", "))
		}
	}

	got, err := s.Get(ctx, "scan")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Schedule, want[0]) || got.Catchup != CatchupLatest {
		t.Errorf("Get = %+v, want %+v with catch-up latest", got, want[0])
	}
	if got, err := s.Get(ctx, "sweep"); err != nil || got.Catchup != DefaultCatchup {
		t.Errorf("Get(sweep) = %+v, %v; want the default catch-up filled in", got, err)
	}
	changes, err = s.Apply(ctx, want[:1], true)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].Op != ChangeDelete || changes[0].Name != "sweep" || !reflect.DeepEqual(changes[0].Schedule, Schedule{}) {
		t.Errorf("Apply with prune = %+v, want the deletion of sweep", changes)
	}
}
