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
	topics := Topics{Changes: changes, Schedules: schedules, Backfills: backfills}
	got, stats, err := ReadSchedule(ctx, opts, topics, "scan", time.Now().Add(-time.Minute))
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
	all, _, err := Read(ctx, opts, topics, func(c Change, _ time.Time) bool { return c.Schedule == "scan" })
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

// TestReadLimitChanges: a limit's change is keyed limit.Key of its limit and checked against the limits topic:
// confirmed as written, forged when the topic holds another value at its offset, invalid when keyed as a
// schedule's; a read of one schedule's changes never sees it; without a limits topic none can be checked, and
// each is unconfirmed.
func TestReadLimitChanges(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := t.Context()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics := Topics{Changes: "l.changes", Schedules: "l.schedules", Backfills: "l.backfills", Limits: "l.limits"}
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, topics.Changes, topics.Schedules, topics.Limits); err != nil {
		t.Fatal(err)
	}
	produce := func(topic, key string, value []byte) int64 {
		t.Helper()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: value}).First()
		if err != nil {
			t.Fatal(err)
		}
		return r.Offset
	}
	db := []byte(`{"v":1,"name":"db","concurrency":4}`)
	at := produce(topics.Limits, "db", db)
	gone := produce(topics.Limits, "db", nil)
	put := Change{Op: OpLimitPut, Limit: "db", At: time.Now(), After: db, Offset: at}
	del := Change{Op: OpLimitDelete, Limit: "db", At: time.Now(), Before: db, Offset: gone}
	forged := Change{Op: OpLimitPut, Limit: "db", At: time.Now(), After: []byte(`{"v":1,"name":"db","concurrency":400}`), Offset: at}
	if err := Write(ctx, cl, topics.Changes, put, del, forged); err != nil {
		t.Fatal(err)
	}
	asSchedule, _ := Encode(put)
	produce(topics.Changes, "db", asSchedule) // keyed as a schedule's change

	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	all, stats, err := Read(ctx, opts, topics, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Op != OpLimitPut || all[0].Status != Confirmed || all[1].Op != OpLimitDelete || all[1].Status != Confirmed ||
		stats != (Stats{Invalid: 1, Forged: 1}) {
		t.Errorf("Read = %+v, %+v; want the put and the delete confirmed, 1 forged, 1 invalid", all, stats)
	}
	if l := DecodeLimit("db", all[0].After); l == nil || l.Concurrency != 4 {
		t.Errorf("the limit written: %+v", l)
	}
	if one, _, err := ReadSchedule(ctx, opts, topics, "db", time.Time{}); err != nil || len(one) != 0 {
		t.Errorf("ReadSchedule(db) = %+v, %v; want no change (no schedule db)", one, err)
	}
	topics.Limits = "l.no-such-topic"
	all, _, err = Read(ctx, opts, topics, nil)
	if err != nil || len(all) != 3 {
		t.Fatalf("Read without the limits topic = %+v, %v; want the 3 changes, none checked", all, err)
	}
	for _, e := range all {
		if e.Status != Unconfirmed {
			t.Errorf("without the limits topic: %s %s", e.Op, e.Status)
		}
	}
}

// TestReadCalendarChanges: a calendar's change is keyed calendarstore.Key of its calendar and checked against the
// calendars topic: confirmed as written, forged when the topic holds another value at its offset; a read of one
// schedule's changes never sees it; without a calendars topic none can be checked, and each is unconfirmed.
func TestReadCalendarChanges(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := t.Context()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics := Topics{Changes: "c.changes", Schedules: "c.schedules", Backfills: "c.backfills", Limits: "c.limits", Calendars: "c.calendars"}
	if _, err := kadm.NewClient(cl).CreateTopics(ctx, 1, 1, nil, topics.Changes, topics.Schedules, topics.Calendars); err != nil {
		t.Fatal(err)
	}
	produce := func(topic, key string, value []byte) int64 {
		t.Helper()
		r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: value}).First()
		if err != nil {
			t.Fatal(err)
		}
		return r.Offset
	}
	de := []byte(`{"v":1,"name":"de","weekdays":["sun"]}`)
	at := produce(topics.Calendars, "de", de)
	gone := produce(topics.Calendars, "de", nil)
	put := Change{Op: OpCalendarPut, Calendar: "de", At: time.Now(), After: de, Offset: at}
	del := Change{Op: OpCalendarDelete, Calendar: "de", At: time.Now(), Before: de, Offset: gone}
	forged := Change{Op: OpCalendarPut, Calendar: "de", At: time.Now(), After: []byte(`{"v":1,"name":"de","weekdays":["sat"]}`), Offset: at}
	if err := Write(ctx, cl, topics.Changes, put, del, forged); err != nil {
		t.Fatal(err)
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	all, stats, err := Read(ctx, opts, topics, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].Op != OpCalendarPut || all[0].Status != Confirmed || all[1].Op != OpCalendarDelete || all[1].Status != Confirmed ||
		stats != (Stats{Forged: 1}) {
		t.Errorf("Read = %+v, %+v; want the put and the delete confirmed, 1 forged", all, stats)
	}
	if one, _, err := ReadSchedule(ctx, opts, topics, "de", time.Time{}); err != nil || len(one) != 0 {
		t.Errorf("ReadSchedule(de) = %+v, %v; want no change (no schedule de)", one, err)
	}
	topics.Calendars = "c.no-such-topic"
	all, _, err = Read(ctx, opts, topics, nil)
	if err != nil || len(all) != 3 {
		t.Fatalf("Read without the calendars topic = %+v, %v; want the 3 changes, none checked", all, err)
	}
	for _, e := range all {
		if e.Status != Unconfirmed {
			t.Errorf("without the calendars topic: %s %s", e.Op, e.Status)
		}
	}
}
