package audit

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// TestReadTopicRealBroker: readTopic reads every partition to its last stable offset on Apache Kafka, an empty
// partition included, skips an aborted transaction's records (and records their offsets as a gap) and ends.
func TestReadTopicRealBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("real-broker test")
	}
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}

	plain, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for i := range 5 {
		if err := plain.ProduceSync(ctx, &kgo.Record{Partition: 0, Key: []byte{byte(i)}, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID(kafkatest.Unique("audit-test")))...)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for _, commit := range []kgo.TransactionEndTry{kgo.TryAbort, kgo.TryCommit} {
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		n := 2
		if commit == kgo.TryCommit {
			n = 1
		}
		for range n {
			if err := tx.ProduceSync(ctx, &kgo.Record{Partition: 2, Key: []byte("k"), Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}

	got := map[int32]int{}
	parts, err := readTopic(ctx, opts, topic, func(r *kgo.Record) { got[r.Partition]++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || got[0] != 5 || got[1] != 0 || got[2] != 1 {
		t.Errorf("read %v from %d partitions, want 5, 0 and 1 records from 3", got, len(parts))
	}
	// Partition 2: aborted records at 0 and 1, the abort marker at 2, the committed record at 3.
	if p := parts[2]; p == nil || !gapIn(p.gaps, 0, 2) || gapIn(p.gaps, 3, 4) {
		t.Errorf("partition 2: gaps %+v, want the aborted offsets 0-1 only", p)
	}
	if p := parts[0]; p == nil || len(p.gaps) != 0 {
		t.Errorf("partition 0: gaps %+v, want none", p)
	}
}
