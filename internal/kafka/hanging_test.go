package kafka_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestHangingTransactionIsFoundAndSettled makes, on a real broker, the transaction that Kafka 4.4 can leave after
// an unclean restart (kafka/hanging.go): open on a partition while its coordinator knows nothing of it. A broker
// of its own with partition verification off accepts a transactional record for a partition never added to its
// transaction. Beside it, on another partition, a transaction in flight. FindHanging must name the first, not the
// second; Settle aborts the first, which frees the partition (its records stay unread); the second commits as
// usual.
func TestHangingTransactionIsFoundAndSettled(t *testing.T) {
	own := kafkatest.OwnBroker(t, "19192", "transaction.partition.verification.enable=false")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(own.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	const topic = "hanging"
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	pid, epoch := kafkatest.HangTransaction(t, ctx, own.Addr, "hangs", topic, 0)

	live, err := kgo.NewClient(kgo.SeedBrokers(own.Addr), kgo.TransactionalID("live"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if err := live.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := live.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 1, Value: []byte("live")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	both := kadm.TopicsSet{}
	both.Add(topic, 0, 1)
	if stable(t, ctx, adm, topic, 0) || stable(t, ctx, adm, topic, 1) {
		t.Fatal("both partitions should hold an open transaction")
	}
	hs, err := kafka.FindHanging(ctx, adm, both, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Partition != 0 || hs[0].ProducerID != pid || hs[0].ProducerEpoch != epoch || hs[0].Decided {
		t.Fatalf("FindHanging = %v, want only partition 0, producer %d epoch %d, undecided", hs, pid, epoch)
	}
	if err := kafka.Settle(ctx, adm, hs); err != nil {
		t.Fatal(err)
	}
	kafkatest.Eventually(t, 30*time.Second, "partition 0 stable after the abort", func() bool { return stable(t, ctx, adm, topic, 0) })
	if stable(t, ctx, adm, topic, 1) {
		t.Fatal("the transaction in flight on partition 1 was closed")
	}
	if hs, err := kafka.FindHanging(ctx, adm, both, nil); err != nil || len(hs) != 0 {
		t.Fatalf("FindHanging after Settle = %v, %v; want none", hs, err)
	}
	if err := live.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("the transaction in flight could not commit: %v", err)
	}

	// A read_committed reader sees the committed record, not the settled transaction's.
	rd, err := kgo.NewClient(kgo.SeedBrokers(own.Addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []string
	for len(got) < 1 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading: %v (got %q)", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 1 || got[0] != "live" {
		t.Fatalf("read_committed read %q, want [live]", got)
	}
}

// stable reports whether the partition's last stable offset has reached its high watermark.
func stable(t *testing.T, ctx context.Context, adm *kadm.Client, topic string, p int32) bool {
	t.Helper()
	lso, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := lso.Lookup(topic, p)
	h, _ := hwm.Lookup(topic, p)
	return l.Offset >= h.Offset
}
