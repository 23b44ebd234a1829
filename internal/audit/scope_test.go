package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/dispatch"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// scopeBundle is a namespace on an in-process kfake cluster and a client that writes its records by hand.
type scopeBundle struct {
	tb    testing.TB
	ctx   context.Context
	names kafka.Names
	opts  []kgo.Opt
	cl    *kgo.Client
	parts int // work (and results) partitions
}

func setupScope(tb testing.TB, workPartitions int) *scopeBundle {
	tb.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	cfg := kafka.Config{Brokers: c.ListenAddrs(), Namespace: "scope"}
	opts, err := cfg.Opts(nil)
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	tb.Cleanup(cancel)
	b := &scopeBundle{tb: tb, ctx: ctx, names: cfg.Names(), opts: opts, cl: cl, parts: workPartitions}
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), b.names, kafka.TopicOptions{WorkPartitions: int32(workPartitions)}); err != nil {
		tb.Fatal(err)
	}
	return b
}

func (b *scopeBundle) produce(recs ...*kgo.Record) {
	b.tb.Helper()
	if err := b.cl.ProduceSync(b.ctx, recs...).FirstErr(); err != nil {
		b.tb.Fatal(err)
	}
}

// put writes a version of spec.
func (b *scopeBundle) put(spec schedule.Spec) {
	b.tb.Helper()
	v, err := schedule.Encode(spec)
	if err != nil {
		b.tb.Fatal(err)
	}
	b.produce(&kgo.Record{Topic: b.names.Schedules, Key: []byte(spec.Name), Value: v})
}

// emit writes tk to its work partition, stamped when it was emitted, and returns its partition and offset.
func (b *scopeBundle) emit(tk tick.Tick) (int32, int64) {
	b.tb.Helper()
	v, err := tick.Encode(tk)
	if err != nil {
		b.tb.Fatal(err)
	}
	r := &kgo.Record{Topic: b.names.Work, Partition: tk.Partition(b.parts), Key: []byte(tk.ID), Value: v, Timestamp: tk.EmittedAt}
	b.produce(r)
	return r.Partition, r.Offset
}

// scheduled returns the tick of name's slot (shard of shards) emitted at emitted by term epoch.
func scheduled(name string, slot time.Time, shard, shards int, emitted time.Time, epoch int64) tick.Tick {
	tk := tick.New(name, slot, shard, shards)
	tk.EmittedAt, tk.LeaderEpoch, tk.ScheduleVersion = emitted, epoch, 0
	return tk
}

// ran returns the started and ok outcome entries of w1 (fence 1) for the tick id at work partition p, offset o.
func ran(id string, p int32, o int64, at time.Time) []ledger.Entry {
	return []ledger.Entry{
		{Kind: ledger.KindStarted, ID: id, Partition: p, Offset: o, Worker: "w1", Fence: 1, Attempt: 1, At: at},
		{Kind: ledger.KindOutcome, ID: id, Partition: p, Offset: o, Worker: "w1", Fence: 1, Attempts: 1, Status: ledger.StatusOK, At: at.Add(time.Second)},
	}
}

// write writes es to the results partition of work partition p: one record each keyed by its tick ID, or one
// batch record.
func (b *scopeBundle) write(p int32, batch bool, at time.Time, es ...ledger.Entry) {
	b.tb.Helper()
	if !batch {
		for _, e := range es {
			key := []byte(e.ID)
			if e.Kind == ledger.KindClaim {
				key = ledger.ClaimKey(p)
			}
			b.produce(&kgo.Record{Topic: b.names.Results, Partition: p, Key: key, Value: ledger.Encode(e), Timestamp: at})
		}
		return
	}
	var enc [][]byte
	for _, e := range es {
		enc = append(enc, ledger.Encode(e))
	}
	b.produce(&kgo.Record{Topic: b.names.Results, Partition: p, Key: ledger.BatchKey(p, "w1", fmt.Sprint(at.UnixNano())),
		Value: ledger.AppendBatch(nil, p, "w1", at, enc), Timestamp: at})
}

// partitionsOf returns the work partitions of name's shards.
func partitionsOf(name string, shards, parts int) []int32 {
	var out []int32
	for shard := range shards {
		if p := tick.Partition(name, shard, parts); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// nameOn returns a schedule name (prefix and a number) whose one shard is (or, with on false, is not) in ps.
func nameOn(tb testing.TB, prefix string, ps []int32, parts int, on bool) string {
	for i := range 1000 {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if slices.Contains(ps, tick.Partition(name, 0, parts)) == on {
			return name
		}
	}
	tb.Fatalf("no name %s-N on partitions %v (%v)", prefix, ps, on)
	return ""
}

// manySchedules writes, over 6 partitions: "alpha" (2 shards, catch-up latest), a schedule that shares one of
// its partitions and one that does not, every 10s from base, with two leader terms and an outage between them;
// alpha also misses two slots while the first term runs, is triggered, backfilled, and has ledger entries in
// batch records, a start of a worker that never claimed its partition and a tombstone.
func manySchedules(tb testing.TB) (b *scopeBundle, base time.Time, alpha, beta, gamma string) {
	b = setupScope(tb, 6)
	alpha = "alpha"
	alphaParts := partitionsOf(alpha, 2, b.parts)
	beta = nameOn(tb, "beta", alphaParts, b.parts, true)
	gamma = nameOn(tb, "gamma", alphaParts, b.parts, false)
	every := schedule.Duration(10 * time.Second)
	b.put(schedule.Spec{Name: alpha, Every: every, Shards: 2, Catchup: schedule.CatchupLatest})
	b.put(schedule.Spec{Name: beta, Every: every, Catchup: schedule.CatchupLatest})
	b.put(schedule.Spec{Name: gamma, Every: every, Catchup: schedule.CatchupLatest})
	b.put(schedule.Spec{Name: "other", Every: every, Paused: true}) // read, not folded
	base = time.Now().UTC().Truncate(10 * time.Second).Add(30 * time.Second)
	slot := func(k int) time.Time { return base.Add(time.Duration(k) * 10 * time.Second) }

	for p := range int32(b.parts) {
		b.write(p, false, base.Add(-time.Minute), ledger.Entry{Kind: ledger.KindClaim, Partition: p, Worker: "w1", Fence: 1, At: base.Add(-time.Minute)})
	}
	// emitAll emits slot k of the schedules (alpha unless skipAlpha) at emitted by epoch and runs them.
	emitAll := func(k int, emitted time.Time, epoch int64, skipAlpha bool) {
		byPart := map[int32][]ledger.Entry{}
		for _, name := range []string{alpha, beta, gamma} {
			shards := 1
			if name == alpha {
				if skipAlpha {
					continue
				}
				shards = 2
			}
			for shard := range shards {
				tk := scheduled(name, slot(k), shard, shards, emitted, epoch)
				p, o := b.emit(tk)
				byPart[p] = append(byPart[p], ran(tk.ID, p, o, slot(k))...)
			}
		}
		for p, es := range byPart {
			b.write(p, k%2 == 0, slot(k).Add(2*time.Second), es...) // odd slots one record per entry
		}
	}
	for k := range 6 { // term 1; alpha misses slots 4 and 5 while beta and gamma are emitted
		emitAll(k, slot(k).Add(-time.Second), 1, k >= 4)
	}
	// An outage over slots 6 and 7; term 2 starts at 8+5s and emits slot 8 (catch-up latest), then on time.
	emitAll(8, slot(8).Add(5*time.Second), 2, false)
	for k := 9; k <= 12; k++ {
		emitAll(k, slot(k).Add(-time.Second), 2, false)
	}

	// A trigger (both shards) and a backfill tick of slot 6, shard 0.
	for shard := range 2 {
		tk := tick.New(alpha, slot(9).Add(3*time.Second), shard, 2)
		tk.ID, tk.Trigger, tk.EmittedAt = tick.TriggerID(alpha, tk.Slot, "n1", shard, 2), true, tk.Slot
		p, o := b.emit(tk)
		b.write(p, false, tk.Slot.Add(time.Second), ran(tk.ID, p, o, tk.Slot)...)
	}
	bf := scheduled(alpha, slot(6), 0, 2, slot(10), 2)
	bf.ID, bf.Trigger, bf.Backfill = tick.BackfillID(alpha, slot(6), "bf1", 0, 2), true, "bf1"
	p, o := b.emit(bf)
	b.write(p, false, slot(10).Add(time.Second), ran(bf.ID, p, o, slot(10))...)

	// A start by a worker that never claimed the partition never ran; a tombstone deletes slot 11 shard 1's
	// entries (records of their own: an odd slot).
	id := tick.ID(alpha, slot(11), 0, 2)
	p0 := tick.Partition(alpha, 0, b.parts)
	b.write(p0, false, slot(11).Add(5*time.Second), ledger.Entry{Kind: ledger.KindStarted, ID: id, Partition: p0, Worker: "w9", Fence: 9, Attempt: 2, At: slot(11)})
	gone := tick.ID(alpha, slot(11), 1, 2)
	b.produce(&kgo.Record{Topic: b.names.Results, Partition: tick.Partition(alpha, 1, b.parts), Key: []byte(gone), Timestamp: slot(11).Add(5 * time.Second)})
	return b, base, alpha, beta, gamma
}

// TestReadScheduleIsReadSince: the history of one schedule among several over a 6-partition work topic read
// with ReadSchedule is the one ReadSince gives: the same ticks, states, executions, triggers and backfills, the
// slots missed while a leader term ran (seen from another schedule's ticks in a shared partition) still missing
// and those of an outage passed over.
func TestReadScheduleIsReadSince(t *testing.T) {
	t.Parallel()
	b, base, alpha, _, _ := manySchedules(t)
	since := base.Add(-time.Minute)
	full, err := ReadSince(b.ctx, b.opts, b.names, since)
	if err != nil {
		t.Fatal(err)
	}
	scoped, err := ReadSchedule(b.ctx, b.opts, b.names, Scope{Schedule: alpha, Shards: 2, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{From: base, To: base.Add(125 * time.Second), Now: base.Add(20 * time.Minute), Lead: -1, Schedule: alpha, AllTicks: true}
	want, _ := HistoryOf(Compare(full, o), alpha, base)
	got, found := HistoryOf(Compare(scoped, o), alpha, base)
	if !found {
		t.Fatalf("no history of %s", alpha)
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("ReadSchedule's history differs from ReadSince's:\n got %s\nwant %s", g, w)
	}
	// The history is the one the data was written for.
	c := got.Counts
	if c.Missing != 3 || c.MissingNotEmitted != 2 || c.PassedOver != 6 || len(got.Triggers) != 2 || len(got.Backfills) != 1 {
		t.Errorf("counts %+v, %d triggers, %d backfills; want 3 missing (slot 4 not emitted while the first term ran, "+
			"slot 11#1 with no outcome), 6 passed over (slots 5 to 7), 2 triggers, 1 backfill", c, len(got.Triggers), len(got.Backfills))
	}
	if !slices.ContainsFunc(got.Ticks, func(tr TickReport) bool {
		return tr.Slot.Equal(base.Add(110*time.Second)) && tr.Shard == 0 && tr.State == ledger.StatusOK && len(tr.Executions) == 1
	}) {
		t.Errorf("slot 11#0: the start of a worker that never claimed its partition counted: %+v", got.Ticks)
	}
	if scoped.WorkPartitions != 6 || scoped.ResultsPartitions != 6 || scoped.Truncated {
		t.Errorf("scoped log: %d work and %d results partitions, truncated %v; want 6, 6, false", scoped.WorkPartitions, scoped.ResultsPartitions, scoped.Truncated)
	}
	for id, tk := range scoped.Ticks {
		if tk.Schedule != alpha {
			t.Errorf("scoped log keeps %s, of another schedule", id)
		}
	}
	if len(scoped.Definitions) != 1 || scoped.Definitions[alpha] == nil {
		t.Errorf("scoped log keeps the definitions of %v, want %s's only", slices.Collect(maps.Keys(scoped.Definitions)), alpha)
	}

	// Given a schedule's newest version (a catalog's): that version alone, marked partial (the slots before it
	// are not derived, as after a compaction), and the same ticks.
	var later *Definition // a schedule whose newest version is not the topic's first record
	for _, d := range full.Definitions {
		if n := len(d.Versions); n > 0 && d.Versions[n-1].Offset > 0 && (later == nil || d.Name < later.Name) {
			later = d
		}
	}
	newest := later.Versions[len(later.Versions)-1].Offset
	v := later.Versions[len(later.Versions)-1]
	tail, err := ReadSchedule(b.ctx, b.opts, b.names, Scope{Schedule: later.Name, Since: since, Latest: &v})
	if err != nil {
		t.Fatal(err)
	}
	if td := tail.Definitions[later.Name]; td == nil || len(td.Versions) != 1 || td.Versions[0].Offset != newest || !td.Partial {
		t.Errorf("%s given its version at offset %d: %+v, want it alone, partial", later.Name, newest, td)
	}
	whole, err := ReadSchedule(b.ctx, b.opts, b.names, Scope{Schedule: later.Name, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	if len(tail.Ticks) != len(whole.Ticks) {
		t.Errorf("%s: %d ticks given its version, %d read whole", later.Name, len(tail.Ticks), len(whole.Ticks))
	}
}

// TestReadScheduleFetchesItsPartitions: ReadSchedule fetches no record of a work or results partition the
// schedule's shards cannot use, though other schedules' records are there.
func TestReadScheduleFetchesItsPartitions(t *testing.T) {
	t.Parallel()
	b, _, alpha, _, gamma := manySchedules(t)
	mine := partitionsOf(alpha, 2, b.parts)
	if slices.Contains(mine, tick.Partition(gamma, 0, b.parts)) {
		t.Fatal("the test needs a schedule on a partition alpha does not use")
	}
	seen := map[string]map[int32]int{}
	r := newReader()
	r.onRecord = func(rec *kgo.Record) {
		if seen[rec.Topic] == nil {
			seen[rec.Topic] = map[int32]int{}
		}
		seen[rec.Topic][rec.Partition]++
	}
	l, err := readSchedule(b.ctx, b.opts, b.names, Scope{Schedule: alpha, Shards: 2}, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{b.names.Work, b.names.Results} {
		if len(seen[topic]) == 0 {
			t.Errorf("%s: nothing read", topic)
		}
		for p, n := range seen[topic] {
			if !slices.Contains(mine, p) {
				t.Errorf("%s[%d]: %d records fetched; alpha's ticks are in %v only", topic, p, n, mine)
			}
		}
	}
	if n := seen[b.names.Schedules][0]; n != 4 {
		t.Errorf("schedules topic: %d records read, want all 4", n)
	}
	for p := range int32(b.parts) {
		if _, ok := l.WorkFrom[p]; ok == slices.Contains(mine, p) {
			t.Errorf("work partition %d: covered from %v (%v); want a read partition covered whole, another from the read on", p, l.WorkFrom[p], ok)
		}
	}
}

// TestReadScheduleMaxPerPartition: with MaxPerPartition under the window, ReadSchedule reads at most that many
// records of each partition, the newest, marks the log truncated, and Compare calls no slot before the covered
// start missing; one after it still is.
func TestReadScheduleMaxPerPartition(t *testing.T) {
	t.Parallel()
	b := setupScope(t, 2)
	alpha := "alpha"
	ps := partitionsOf(alpha, 1, b.parts)
	beta := nameOn(t, "beta", ps, b.parts, true)
	every := schedule.Duration(time.Minute)
	b.put(schedule.Spec{Name: alpha, Every: every})
	b.put(schedule.Spec{Name: beta, Every: every})
	base := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute)
	slot := func(k int) time.Time { return base.Add(time.Duration(k) * time.Minute) }
	b.write(ps[0], false, base.Add(-time.Minute), ledger.Entry{Kind: ledger.KindClaim, Partition: ps[0], Worker: "w1", Fence: 1, At: base.Add(-time.Minute)})
	const slots = 60
	for k := range slots {
		var es []ledger.Entry
		for _, name := range []string{alpha, beta} {
			if name == alpha && (k == 10 || k == 50) {
				continue // missed
			}
			tk := scheduled(name, slot(k), 0, 1, slot(k).Add(-time.Second), 1)
			p, o := b.emit(tk)
			es = append(es, ran(tk.ID, p, o, slot(k))...)
		}
		b.write(ps[0], true, slot(k).Add(2*time.Second), es...)
	}
	// Work: 118 records, 2 a minute; results: the claim and 60 batches, 1 a minute.
	const max = 40
	seen := map[string]map[int32]int{}
	r := newReader()
	r.onRecord = func(rec *kgo.Record) {
		if seen[rec.Topic] == nil {
			seen[rec.Topic] = map[int32]int{}
		}
		seen[rec.Topic][rec.Partition]++
	}
	l, err := readSchedule(b.ctx, b.opts, b.names, Scope{Schedule: alpha, Shards: 1, MaxPerPartition: max}, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{b.names.Work, b.names.Results} {
		if n := seen[topic][ps[0]]; n != max {
			t.Errorf("%s[%d]: %d records read, want the newest %d", topic, ps[0], n, max)
		}
	}
	if !l.Truncated {
		t.Error("the log is not marked truncated")
	}
	// The newest 40 work records are slots 40 to 59 (alpha's 50 missed, so from beta's 39): covered from a
	// lead after the first.
	wantWork := slot(39).Add(-time.Second).Add(maxLead)
	if got := l.WorkFrom[ps[0]]; !got.Equal(wantWork) {
		t.Errorf("work partition covered from %v, want %v", got, wantWork)
	}

	o := Options{From: base, To: slot(slots - 1), Now: slot(slots).Add(time.Hour), Lead: -1, Schedule: alpha, AllTicks: true}
	full, err := ReadSince(b.ctx, b.opts, b.names, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := HistoryOf(Compare(full, o), alpha, base); h.Missing != 2 {
		t.Fatalf("ReadSince: %d missing, want 2 (slots 10 and 50)", h.Missing)
	}
	h, _ := HistoryOf(Compare(l, o), alpha, base)
	if h.AuditedFrom == nil || !h.AuditedFrom.Equal(wantWork) {
		t.Fatalf("audited from %v, want %v", h.AuditedFrom, wantWork)
	}
	for _, tr := range h.Ticks {
		if slices.Contains(tr.Problems, ProblemMissing) && tr.Slot.Before(*h.AuditedFrom) {
			t.Errorf("slot %v, before the covered start %v, reported missing", tr.Slot, h.AuditedFrom)
		}
	}
	if h.Missing != 1 || h.MissingNotEmitted != 1 {
		t.Errorf("%d missing, want 1 (slot 50)", h.Missing)
	}
	if !slices.ContainsFunc(h.Notes, func(n string) bool { return strings.Contains(n, "were not read") }) {
		t.Errorf("no note that older records were not read: %q", h.Notes)
	}
	if !slices.ContainsFunc(h.Ticks, func(tr TickReport) bool { return tr.Slot.Equal(slot(59)) && tr.State == ledger.StatusOK }) {
		t.Error("the newest slot's run is not in the history")
	}
}

// TestScopeReach: the read takes the largest shard count and every pool of the retained versions.
func TestScopeReach(t *testing.T) {
	t.Parallel()
	names := kafka.Config{Namespace: "ns"}.Names()
	l := NewLog()
	for i, spec := range []schedule.Spec{
		{Name: "s", Every: schedule.Duration(time.Minute), Shards: 4, Pool: "gpu"},
		{Name: "s", Every: schedule.Duration(time.Minute), Shards: 2},
	} {
		sched, err := spec.Compile()
		if err != nil {
			t.Fatal(err)
		}
		l.AddVersion("s", int64(i), t0, sched)
	}
	l.AddVersion("s", 2, t0, nil)
	shards, pools := Scope{Schedule: "s", Pool: kafka.DefaultPool, Shards: 1}.reach(names, l.Definitions["s"])
	if shards != 4 || !reflect.DeepEqual(pools, []string{"", "gpu"}) {
		t.Errorf("reach %d shards, pools %q; want 4 and the default and gpu", shards, pools)
	}
	if shards, pools := (Scope{Schedule: "t"}).reach(names, nil); shards != 1 || !reflect.DeepEqual(pools, []string{""}) {
		t.Errorf("no definition: reach %d shards, pools %q; want 1 and the default", shards, pools)
	}
}

// TestReadScheduleRefuses: no schedule, or a negative bound, is an error before any read.
func TestReadScheduleRefuses(t *testing.T) {
	t.Parallel()
	for _, s := range []Scope{{}, {Schedule: "s", MaxPerPartition: -1}} {
		if _, err := ReadSchedule(context.Background(), nil, kafka.Names{}, s); err == nil {
			t.Errorf("%+v: no error", s)
		}
	}
}

// BenchmarkReadSchedule reads one schedule's page out of 2,000 schedules of 30 slots each over 12 partitions
// (60,000 ticks), with ReadSince and with ReadSchedule.
func BenchmarkReadSchedule(b *testing.B) {
	const schedules, slots = 2000, 30
	sb := setupScope(b, 12)
	base := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	for k := range slots {
		recs := make([]*kgo.Record, 0, schedules)
		res := make([]*kgo.Record, 0, schedules)
		for i := range schedules {
			tk := scheduled(fmt.Sprintf("s-%d", i), base.Add(time.Duration(k)*time.Minute), 0, 1, base.Add(time.Duration(k)*time.Minute), 1)
			v, err := tick.Encode(tk)
			if err != nil {
				b.Fatal(err)
			}
			p := tk.Partition(sb.parts)
			recs = append(recs, &kgo.Record{Topic: sb.names.Work, Partition: p, Key: []byte(tk.ID), Value: v, Timestamp: tk.EmittedAt})
			for _, e := range ran(tk.ID, p, int64(k), tk.Slot) {
				res = append(res, &kgo.Record{Topic: sb.names.Results, Partition: p, Key: []byte(tk.ID), Value: ledger.Encode(e), Timestamp: tk.Slot})
			}
		}
		sb.produce(append(recs, res...)...)
	}
	o := Options{Now: base.Add(time.Hour), Schedule: "s-7", AllTicks: true}
	b.Run("ReadSince", func(b *testing.B) {
		for b.Loop() {
			l, err := ReadSince(sb.ctx, sb.opts, sb.names, time.Time{})
			if err != nil {
				b.Fatal(err)
			}
			HistoryOf(Compare(l, o), "s-7", time.Time{})
		}
	})
	b.Run("ReadSchedule", func(b *testing.B) {
		for b.Loop() {
			l, err := ReadSchedule(sb.ctx, sb.opts, sb.names, Scope{Schedule: "s-7", Shards: 1})
			if err != nil {
				b.Fatal(err)
			}
			HistoryOf(Compare(l, o), "s-7", time.Time{})
		}
	})
}

// TestMaxLead: the lead ReadSchedule allows at a cut is the longest a ticker takes.
func TestMaxLead(t *testing.T) {
	if maxLead != dispatch.MaxLead {
		t.Errorf("maxLead %v, dispatch.MaxLead %v", maxLead, dispatch.MaxLead)
	}
}

// TestReadRecentIsBounded: ReadRecent reads at most its bound of each partition, the newest, marks the log
// truncated, and counts no slot before its coverage missing (ticker status and the console's refresher over a
// window that holds more than --max-records).
func TestReadRecentIsBounded(t *testing.T) {
	t.Parallel()
	b := setupScope(t, 2)
	alpha := "alpha"
	ps := partitionsOf(alpha, 1, b.parts)
	b.put(schedule.Spec{Name: alpha, Every: schedule.Duration(time.Minute)})
	base := time.Now().UTC().Truncate(time.Minute).Add(2 * time.Minute)
	slot := func(k int) time.Time { return base.Add(time.Duration(k) * time.Minute) }
	b.write(ps[0], false, base.Add(-time.Minute), ledger.Entry{Kind: ledger.KindClaim, Partition: ps[0], Worker: "w1", Fence: 1, At: base.Add(-time.Minute)})
	const slots = 60
	for k := range slots {
		if k == 10 || k == 50 {
			continue // missed
		}
		tk := scheduled(alpha, slot(k), 0, 1, slot(k).Add(-time.Second), 1)
		p, o := b.emit(tk)
		b.write(ps[0], false, slot(k).Add(2*time.Second), ran(tk.ID, p, o, slot(k))...)
	}
	l, err := ReadRecent(b.ctx, b.opts, b.names, time.Time{}, 20)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Truncated {
		t.Error("the log is not marked truncated")
	}
	if n := len(l.Ticks); n > 20 {
		t.Errorf("%d ticks read, want at most the newest 20", n)
	}
	o := Options{From: base, To: slot(slots - 1), Now: slot(slots).Add(time.Hour), Lead: -1, Schedule: alpha, AllTicks: true}
	if h, _ := HistoryOf(Compare(l, o), alpha, base); h.Missing != 1 {
		t.Errorf("%d slots missing, want 1 (slot 50; slot 10 is before the bound's coverage)", h.Missing)
	}
	if _, err := ReadRecent(b.ctx, b.opts, b.names, time.Time{}, -1); err == nil {
		t.Error("a negative bound was taken")
	}
}
