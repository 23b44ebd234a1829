package tickgroup

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// TestPoolListerListsWorkTopics: the work lag's pools are those whose work topic exists, listed from the broker
// (not from the schedules, whose scan held the View locked); another namespace's and the default pool's topics
// are not among them; a failed listing keeps the last one.
func TestPoolListerListsWorkTopics(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	names, other := kafka.Config{Namespace: "ns"}.Names(), kafka.Config{Namespace: "other"}.Names()
	topics := []string{names.Work, names.Pool("scan").Work, names.Pool("backup").Work, names.Pool("scan").Schedules, other.Pool("x").Work}
	if _, err := kadm.NewClient(cl).CreateTopics(t.Context(), 1, 1, nil, topics...); err != nil {
		t.Fatal(err)
	}
	list := poolLister(names, opts, slog.New(slog.DiscardHandler))
	var got []string
	for _, n := range list() {
		got = append(got, n.PoolName)
	}
	if want := []string{"backup", "scan"}; !slices.Equal(got, want) {
		t.Fatalf("pools %v, want %v", got, want)
	}
	c.Close() // the broker gone: the last listing stands
	if n := len(list()); n != 2 {
		t.Errorf("after a failed listing: %d pools, want the last 2", n)
	}
}
