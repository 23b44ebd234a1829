package kafkatest

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Topics makes a fresh namespace on the test broker (Brokers) with its topics, workPartitions of them for the
// work topic, and returns its names, the connection options and a client that is closed when the test ends.
func Topics(t testing.TB, ctx context.Context, workPartitions int32) (kafka.Names, []kgo.Opt, *kgo.Client) {
	t.Helper()
	cfg := kafka.Config{Brokers: Brokers(t), Namespace: NewNamespace(t)}
	names := cfg.Names()
	opts, err := cfg.Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), names, kafka.TopicOptions{WorkPartitions: workPartitions}); err != nil {
		t.Fatal(err)
	}
	return names, opts, cl
}
