package changelog

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fetchCounter counts the records fetched of one topic.
type fetchCounter struct {
	topic string
	n     atomic.Int64
}

func (f *fetchCounter) OnFetchBatchRead(_ kgo.BrokerMetadata, topic string, _ int32, m kgo.FetchBatchMetrics) {
	if topic == f.topic {
		f.n.Add(int64(m.NumRecords))
	}
}

// TestReadScheduleReadsLittle: the change log of one schedule reads the schedules topic only at the records its
// changes name, and returns what the whole read returns of it.
func TestReadScheduleReadsLittle(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := t.Context()
	// Small batches, as separate writes make them: a fetch returns at least a whole batch.
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchMaxBytes(512), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const changes, schedules, backfills = "t.changes", "t.schedules", "t.backfills"
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, changes, schedules, backfills); err != nil {
		t.Fatal(err)
	}
	// 3,000 schedule records of other schedules, and among them 6 changes of scan, each logged after its record.
	var want []int64
	for i := range 3000 {
		name := fmt.Sprintf("s%04d", i)
		if i%500 == 250 {
			name = "scan"
		}
		v := fmt.Appendf(nil, `{"v":1,"name":%q,"every":"%ds"}`, name, i%50+1)
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: schedules, Key: []byte(name), Value: v}).First()
		if err != nil {
			t.Fatal(err)
		}
		if name != "scan" && i%100 != 0 {
			continue
		}
		if name == "scan" {
			want = append(want, r.Offset)
		}
		if err := Write(ctx, cl, changes, Change{Op: OpPut, Schedule: name, At: time.Now(), After: v, Offset: r.Offset}); err != nil {
			t.Fatal(err)
		}
	}
	count := &fetchCounter{topic: schedules}
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.WithHooks(count)}
	got, stats, err := ReadSchedule(ctx, opts, changes, schedules, backfills, "scan", time.Now().Add(-time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	for _, e := range got {
		offsets = append(offsets, e.Offset)
		if e.Status != Confirmed {
			t.Errorf("change at %d: %s, want confirmed", e.Offset, e.Status)
		}
	}
	if !slices.Equal(offsets, want) || stats != (Stats{}) {
		t.Errorf("ReadSchedule: changes at %v, %+v; want at %v", offsets, stats, want)
	}
	if n := count.n.Load(); n > 600 {
		t.Errorf("ReadSchedule fetched %d records of the schedules topic for %d changes", n, len(want))
	}
	all, _, err := Read(ctx, opts, changes, schedules, backfills, func(c Change, _ time.Time) bool { return c.Schedule == "scan" })
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(got) {
		t.Fatalf("Read: %d changes of scan, ReadSchedule %d", len(all), len(got))
	}
	for i := range all {
		if all[i].LogOffset != got[i].LogOffset || all[i].Status != got[i].Status {
			t.Errorf("change %d: Read %+v, ReadSchedule %+v", i, all[i], got[i])
		}
	}
}
