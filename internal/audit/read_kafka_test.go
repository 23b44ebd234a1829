package audit

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
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

	// Kafka 4.x with transactions v2 (KIP-890) answers EndTxn before the commit marker is written: the committed
	// record becomes readable (read_committed) a moment later.
	var got map[int32]int
	var parts map[int32]*partitionRead
	kafkatest.Eventually(t, 10*time.Second, "the committed record to be readable", func() bool {
		got = map[int32]int{}
		var err error
		if parts, err = readTopic(ctx, opts, topic, func(r *kgo.Record) { got[r.Partition]++ }, span{}); err != nil {
			t.Fatal(err)
		}
		return got[2] > 0
	})
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

// TestReadTopicSinceRealBroker: a read since an instant starts each partition at its first record stamped at or
// after it, and covers the partition from that instant, an idle partition included.
func TestReadTopicSinceRealBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("real-broker test")
	}
	brokers := kafkatest.Brokers(t)
	topic := kafkatest.NewTopic(t, 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	since := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i, at := range []time.Time{since.Add(-2 * time.Hour), since.Add(-time.Minute), since, since.Add(time.Minute)} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Key: []byte{byte(i)}, Value: []byte("v"), Timestamp: at}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("old"), Timestamp: since.Add(-time.Minute)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := map[int32][]int64{}
	parts, err := readTopic(ctx, opts, topic, func(r *kgo.Record) { got[r.Partition] = append(got[r.Partition], r.Offset) }, span{since: since})
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 2 || got[0][0] != 2 || len(got[1]) != 0 {
		t.Errorf("read %v, want offsets 2 and 3 of partition 0 and nothing of partition 1", got)
	}
	cov := coverage(parts)
	if !cov[0].Equal(since) || !cov[1].Equal(since) {
		t.Errorf("coverage %v, want both partitions covered from %v", cov, since)
	}
}

// TestReRunClassesRealBroker: the ledger of a worker cut off from the broker while its handler finished (its ok
// outcome written late) and of the worker that took the partition over and ran the tick again, marked
// interrupted (a second ok outcome), read back from Apache Kafka, is a marked re-run: the audit passes, and fails
// with Strict. A tick run twice with neither run marked fails it.
func TestReRunClassesRealBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("real-broker test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names, opts, _ := kafkatest.Topics(t, ctx, 1)
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(topic string, key, value []byte) int64 {
		t.Helper()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: key, Value: value}).First()
		if err != nil {
			t.Fatalf("producing to %s: %v", topic, err)
		}
		return r.Offset
	}
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	emit := func(name string) (string, int64) {
		t.Helper()
		tk := tick.New(name, slot, 0, 1)
		tk.EmittedAt = slot
		v, err := tick.Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		return tk.ID, produce(names.Work, []byte(tk.ID), v)
	}
	claim := func(worker string, fence int64) {
		produce(names.Results, ledger.ClaimKey(0), ledger.Encode(ledger.Entry{V: ledger.Version, Kind: ledger.KindClaim, Worker: worker, Fence: fence, At: time.Now()}))
	}
	write := func(id string, offset int64, e ledger.Entry) {
		e.V, e.ID, e.Offset, e.At = ledger.Version, id, offset, time.Now()
		if e.Kind == ledger.KindOutcome {
			fin := time.Now()
			e.FinishedAt = &fin
		}
		produce(names.Results, []byte(id), ledger.Encode(e))
	}
	start := func(worker string, fence int64, attempt int, interrupted bool) ledger.Entry {
		return ledger.Entry{Kind: ledger.KindStarted, Worker: worker, Fence: fence, Attempt: attempt, Interrupted: interrupted}
	}
	okBy := func(worker string, fence int64, attempts int, interrupted bool) ledger.Entry {
		return ledger.Entry{Kind: ledger.KindOutcome, Status: ledger.StatusOK, Worker: worker, Fence: fence, Attempts: attempts, Interrupted: interrupted}
	}

	cut, cutAt := emit("cutoff")
	twice, twiceAt := emit("twice")
	claim("w1", 1)
	write(cut, cutAt, start("w1", 1, 1, false))
	write(twice, twiceAt, start("w1", 1, 1, false))
	write(twice, twiceAt, okBy("w1", 1, 1, false))
	claim("w2", 2) // w1 cannot reach the broker; its group membership expires and w2 takes the partition
	write(cut, cutAt, start("w2", 2, 2, true))
	write(cut, cutAt, okBy("w2", 2, 2, true))
	write(twice, twiceAt, start("w2", 2, 1, false)) // not told of w1's run
	write(twice, twiceAt, okBy("w2", 2, 1, false))
	write(cut, cutAt, okBy("w1", 1, 1, false)) // w1's handler had finished: its outcome, once the broker is back

	for _, tc := range []struct {
		schedule string
		strict   bool
		wantOK   bool
		want     Counts
	}{
		{"cutoff", false, true, Counts{Emitted: 1, Executed: 1, ReRun: 1, MarkedReRun: 1, Interrupted: 1}},
		{"cutoff", true, false, Counts{Emitted: 1, Executed: 1, ReRun: 1, MarkedReRun: 1, Interrupted: 1}},
		{"twice", false, false, Counts{Emitted: 1, Executed: 1, RanTwice: 1, ReRun: 1}},
	} {
		rep, err := Run(ctx, opts, names, Options{Now: time.Now(), Schedule: tc.schedule, Strict: tc.strict})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Schedules) != 1 {
			t.Fatalf("%s: %d schedules reported, want 1", tc.schedule, len(rep.Schedules))
		}
		got := rep.Schedules[0].Counts
		got.Outcomes = nil
		if !reflect.DeepEqual(got, tc.want) || rep.OK != tc.wantOK {
			t.Errorf("%s (strict %v): ok %v, counts %+v; want ok %v, %+v", tc.schedule, tc.strict, rep.OK, got, tc.wantOK, tc.want)
		}
	}
}
