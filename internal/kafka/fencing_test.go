package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

func newTxnClient(t *testing.T, seeds []string, txnID string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(10*time.Second),
		kgo.RequestRetries(2),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func isFencing(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.OperationNotAttempted) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed) ||
		errors.Is(err, kerr.InvalidTxnState)
}

// TestSharedTransactionalIDFences is the mechanism the leader rests on, against a real broker: two producers with
// one transactional ID; the second's initialisation aborts the first's open transaction and fences it; the first
// can neither produce nor commit; a read_committed reader sees only what the second committed; and a read to the
// last stable offset, with control records kept, ends.
func TestSharedTransactionalIDFences(t *testing.T) {
	seeds := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, 1, nil)
	txnID := kafkatest.Unique("txn")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// A: the old leader. It commits one record, then leaves a second transaction open.
	a := newTxnClient(t, seeds, txnID)
	produce := func(cl *kgo.Client, value string) error {
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("k"), Value: []byte(value)}).FirstErr()
	}
	if err := a.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := produce(a, "a-committed"); err != nil {
		t.Fatal(err)
	}
	if err := a.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("A commit: %v", err)
	}
	if err := a.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := produce(a, "a-open"); err != nil {
		t.Fatal(err)
	}

	// B: the new leader. Initialising the producer ID fences A and aborts its open transaction.
	b := newTxnClient(t, seeds, txnID)
	if _, _, err := b.ProducerID(ctx); err != nil {
		t.Fatalf("B init producer ID: %v", err)
	}
	if err := b.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := produce(b, "b-committed"); err != nil {
		t.Fatalf("B produce: %v", err)
	}
	if err := b.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("B commit: %v", err)
	}

	// A, the zombie, wakes up: its produce and its commit must both fail with a fencing error.
	perr := produce(a, "a-zombie")
	cerr := a.EndTransaction(ctx, kgo.TryCommit)
	if perr == nil && cerr == nil {
		t.Fatal("the fenced producer A could still produce and commit")
	}
	if cerr == nil {
		t.Fatalf("A's commit succeeded after fencing (produce error: %v)", perr)
	}
	if !isFencing(cerr) && !isFencing(perr) {
		t.Fatalf("A failed without a fencing error: produce %v, commit %v", perr, cerr)
	}
	t.Logf("zombie A: produce error %v; commit error %v", perr, cerr)

	// A read_committed read to the LSO ends and sees only committed records. B's commit returned once its
	// coordinator had decided it; the markers follow (at once under transaction version 1, a moment later under
	// version 2), so the LSO reaches B's record shortly after: each read ends, and none sees an aborted record.
	opts, err := kafka.Config{Brokers: seeds}.Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a-committed", "b-committed"}
	var got []string
	var lso int64
	kafkatest.Eventually(t, 10*time.Second, "a read to the LSO to see B's record", func() bool {
		got = got[:0]
		lso, err = kafka.ReadStable(ctx, opts, topic, 0, func(r *kgo.Record) error {
			got = append(got, string(r.Value))
			return nil
		})
		if err != nil {
			t.Fatalf("ReadStable: %v", err)
		}
		if len(got) > len(want) || len(got) > 0 && got[0] != want[0] || len(got) == 2 && got[1] != want[1] {
			t.Fatalf("read_committed saw %q, want %q", got, want)
		}
		return len(got) == len(want)
	})
	t.Logf("read to LSO %d: %q", lso, got)
}

// TestReadStableStopsBelowOpenTransaction checks that the state read ends at the LSO even while a transaction is
// open above it (reading to the high watermark would wait for that transaction forever).
func TestReadStableStopsBelowOpenTransaction(t *testing.T) {
	seeds := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	a := newTxnClient(t, seeds, kafkatest.Unique("txn"))
	for i, commit := range []bool{true, false} {
		if err := a.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := a.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte('0' + i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := a.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	opts, _ := kafka.Config{Brokers: seeds}.Opts(nil)
	n := 0
	if _, err := kafka.ReadStable(ctx, opts, topic, 0, func(*kgo.Record) error { n++; return nil }); err != nil {
		t.Fatalf("ReadStable with an open transaction above the LSO: %v", err)
	}
	if n != 1 {
		t.Fatalf("read %d committed records, want 1", n)
	}
	// An empty partition reads nothing and ends at once.
	empty := kafkatest.NewTopic(t, 1, nil)
	if _, err := kafka.ReadStable(ctx, opts, empty, 0, func(*kgo.Record) error { t.Fatal("record in empty topic"); return nil }); err != nil {
		t.Fatal(err)
	}
}
