package tickgroup_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// TestChangeLogRoundTrip: every change of the schedules client is in the change log with its reason, its author
// and the definitions before and after; a pause carries its reason and end; a record the schedules topic
// contradicts and one that is no change are counted, not returned.
func TestChangeLogRoundTrip(t *testing.T) {
	k, s := newSchedules(t)
	ctx := t.Context()
	start := time.Now().Add(-time.Second)
	if err := s.Put(ctx, tickgroup.Schedule{Name: "scan", Every: tickgroup.Duration(time.Minute)}, tickgroup.Reason("first version"), tickgroup.By("deploy-42")); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Hour).Truncate(time.Second)
	if err := s.Pause(ctx, "scan", until, tickgroup.Reason("orders DB maintenance (OPS-7)")); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "scan")
	if err != nil {
		t.Fatal(err)
	}
	if !got.Schedule.Paused || got.Schedule.PauseReason != "orders DB maintenance (OPS-7)" || got.Schedule.PausedUntil == nil || !got.Schedule.PausedUntil.Equal(until) {
		t.Errorf("the paused schedule: %+v", got.Schedule)
	}
	next, err := s.Next(ctx, "scan", 2)
	if err != nil || len(next) != 2 || next[0].Before(until) {
		t.Errorf("Next of a pause until %v: %v, %v (want the slots from its end)", until, next, err)
	}
	if err := s.Pause(ctx, "scan", time.Now().Add(-time.Minute)); err == nil {
		t.Error("a pause until a past instant was accepted")
	}
	if err := s.Resume(ctx, "scan", tickgroup.Reason("maintenance done")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "scan"); got.Schedule.Paused || got.Schedule.PauseReason != "" || got.Schedule.PausedUntil != nil {
		t.Errorf("resumed: %+v", got.Schedule)
	}
	if err := s.Delete(ctx, "scan", tickgroup.Reason("replaced by scan-v2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "scan"); !errors.Is(err, tickgroup.ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}

	// Forgeries: a change claiming a definition the schedules topic does not hold at that version, a second
	// claim of a version, and a record that is no change.
	log, _, err := s.ChangeLog(ctx, "", time.Time{})
	if err != nil || len(log) != 4 {
		t.Fatalf("ChangeLog: %d records, %v", len(log), err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := k.Namespace + ".changes"
	forged := `{"v":1,"kind":"schedule_change","op":"put","schedule":"scan","at":"2026-12-05T10:00:00Z","by":{"user":"root","host":"h"},` +
		`"after":{"v":1,"name":"scan","every":"1s"},"schedule_offset":` + itoa(log[0].Version) + `}`
	again := strings.Replace(forged, `"after":{"v":1,"name":"scan","every":"1s"}`, `"after":`+mustJSON(t, log[0].After), 1)
	for _, v := range []string{forged, again, `{"v":1,"kind":"schedule_change","op":"rm -rf"}`, "\x00garbage"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte("scan"), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	log, stats, err := s.ChangeLog(ctx, "scan", start)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, r := range log {
		ops = append(ops, string(r.Op)+":"+r.Reason)
		if !r.Confirmed || r.By.Host == "" || r.By.User == "" || r.At.IsZero() || r.LoggedAt.IsZero() {
			t.Errorf("record %+v: not confirmed or without its author and times", r)
		}
	}
	want := "put:first version pause:orders DB maintenance (OPS-7) resume:maintenance done delete:replaced by scan-v2"
	if got := strings.Join(ops, " "); got != want {
		t.Errorf("the change log: %q, want %q", got, want)
	}
	if stats.Forged != 2 || stats.Invalid != 2 {
		t.Errorf("stats %+v, want 2 forged and 2 invalid", stats)
	}
	if log[0].By.Name != "deploy-42" || log[0].Before != nil || log[0].After == nil || log[0].After.Every != tickgroup.Duration(time.Minute) {
		t.Errorf("the put: %+v", log[0])
	}
	if p := log[1]; p.Before == nil || p.Before.Paused || p.After == nil || !p.After.Paused || p.After.PausedUntil == nil {
		t.Errorf("the pause: before %+v after %+v", p.Before, p.After)
	}
	if d := log[3]; d.After != nil || d.Before == nil {
		t.Errorf("the delete: before %+v after %+v", d.Before, d.After)
	}
	if other, _, err := s.ChangeLog(ctx, "other", time.Time{}); err != nil || len(other) != 0 {
		t.Errorf("the log of another schedule: %d records, %v", len(other), err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func mustJSON(t *testing.T, s *tickgroup.Schedule) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return `{"v":1,` + strings.TrimPrefix(string(b), "{")
}

// topicEnds returns the end offset of each topic's partitions summed (0 for a topic that does not exist).
func topicEnds(t *testing.T, cl *kgo.Client, topics ...string) map[string]int64 {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(t.Context(), topics...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[o.Topic] += o.Offset
		}
	})
	return out
}

// TestInvalidChangeWritesNothing: a change whose reason or author the change log would refuse is refused before
// anything is written, with an error that names the field and matches ErrInvalidChange: no tick, no backfill
// request, no schedule record and no change-log record exists of it.
func TestInvalidChangeWritesNothing(t *testing.T) {
	k, s := newSchedules(t)
	ctx := t.Context()
	scan := tickgroup.Schedule{Name: "scan", Every: tickgroup.Duration(time.Minute), Pool: "batch"}
	if err := s.Put(ctx, scan); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, tickgroup.Schedule{Name: "idle", Every: tickgroup.Duration(time.Minute), Paused: true}); err != nil {
		t.Fatal(err)
	}
	to := time.Now().Add(-time.Minute)
	if _, err := s.Backfill(ctx, "scan", to.Add(-time.Hour), to, tickgroup.BackfillOptions{Reprocess: tickgroup.ReprocessAll}); err != nil {
		t.Fatal(err)
	}
	bfs, err := s.Backfills(ctx)
	if err != nil || len(bfs) != 1 {
		t.Fatalf("Backfills: %+v, %v", bfs, err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics := []string{k.Namespace + ".schedules", k.Namespace + ".changes", k.Namespace + ".backfills", k.Namespace + ".pool.batch.work"}
	before := topicEnds(t, cl, topics...)

	long := strings.Repeat("é", 600) // 600 characters, 1,200 bytes
	for _, bad := range []struct {
		name string
		opt  tickgroup.ChangeOption
		want string
	}{
		{"control character", tickgroup.Reason("ok\x01"), "reason: holds a control character"},
		{"1,200 bytes", tickgroup.Reason(long), "reason: 1,200 bytes, at most 1,024"},
		{"invalid UTF-8", tickgroup.Reason("ok\xff"), "reason: not valid UTF-8"},
		{"by", tickgroup.By("job\x1b[2J"), "by: holds a control character"},
		{"long by", tickgroup.By(strings.Repeat("x", 257)), "by: 257 bytes, at most 256"},
	} {
		changes := map[string]func() error{
			"Put":    func() error { return s.Put(ctx, scan, bad.opt) },
			"Pause":  func() error { return s.Pause(ctx, "scan", time.Time{}, bad.opt) },
			"Resume": func() error { return s.Resume(ctx, "idle", bad.opt) },
			"Delete": func() error { return s.Delete(ctx, "scan", bad.opt) },
			"Trigger": func() error {
				_, err := s.Trigger(ctx, "scan", bad.opt)
				return err
			},
			"Apply": func() error {
				_, err := s.Apply(ctx, []tickgroup.Schedule{{Name: "new", Every: tickgroup.Duration(time.Hour)}}, false, bad.opt)
				return err
			},
			"Write": func() error {
				return s.Write(ctx, []tickgroup.Change{{Op: tickgroup.ChangeCreate, Name: "new", Schedule: tickgroup.Schedule{Name: "new", Every: tickgroup.Duration(time.Hour)}}}, bad.opt)
			},
			"Backfill": func() error {
				_, err := s.Backfill(ctx, "scan", to.Add(-time.Hour), to, tickgroup.BackfillOptions{Reprocess: tickgroup.ReprocessAll}, bad.opt)
				return err
			},
			"CancelBackfill": func() error { return s.CancelBackfill(ctx, bfs[0].ID, bad.opt) },
		}
		for op, change := range changes {
			err := change()
			if !errors.Is(err, tickgroup.ErrInvalidChange) || err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("%s with a %s: %v, want ErrInvalidChange saying %q", op, bad.name, err, bad.want)
			}
		}
	}
	if after := topicEnds(t, cl, topics...); !reflect.DeepEqual(after, before) {
		t.Errorf("the topics' ends went from %v to %v: an invalid change was written", before, after)
	}
	if got, err := s.Get(ctx, "scan"); err != nil || got.Schedule.Paused {
		t.Errorf("scan after the refused changes: %+v, %v", got, err)
	}
}

// TestDotNamesRefusedOnWrite: Put, Plan, Apply and an apply file refuse a name made only of dots (the console
// could never open it: a browser rewrites /schedules/..); a schedule so named by an earlier release is still read
// and can be paused and deleted.
func TestDotNamesRefusedOnWrite(t *testing.T) {
	k, s := newSchedules(t)
	ctx := t.Context()
	if err := s.Put(ctx, tickgroup.Schedule{Name: "a..b", Every: tickgroup.Duration(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".", "..", "..."} {
		sched := tickgroup.Schedule{Name: name, Every: tickgroup.Duration(time.Minute)}
		if err := sched.Validate(); err == nil {
			t.Errorf("Validate(%q) accepted it", name)
		}
		if err := s.Put(ctx, sched); !errors.Is(err, tickgroup.ErrInvalidChange) || !strings.Contains(err.Error(), "only of dots") {
			t.Errorf("Put(%q) = %v, want ErrInvalidChange refusing the name", name, err)
		}
		if _, err := s.Plan(ctx, []tickgroup.Schedule{sched}, false); !errors.Is(err, tickgroup.ErrInvalidChange) {
			t.Errorf("Plan(%q) = %v, want ErrInvalidChange", name, err)
		}
		if _, err := s.Apply(ctx, []tickgroup.Schedule{sched}, false); !errors.Is(err, tickgroup.ErrInvalidChange) {
			t.Errorf("Apply(%q) = %v, want ErrInvalidChange", name, err)
		}
		err := s.Write(ctx, []tickgroup.Change{{Op: tickgroup.ChangeCreate, Name: name, Schedule: sched}})
		if !errors.Is(err, tickgroup.ErrInvalidChange) {
			t.Errorf("Write(+ %q) = %v, want ErrInvalidChange", name, err)
		}
		if _, err := tickgroup.ParseSchedules(strings.NewReader("- name: \"" + name + "\"\n  every: 1m\n")); err == nil {
			t.Errorf("ParseSchedules of %q accepted it", name)
		}
	}
	if list, err := s.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("List after the refusals: %+v, %v", list, err)
	}

	// A record of an earlier release.
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: k.Namespace + ".schedules", Key: []byte(".."), Value: []byte(`{"v":1,"name":"..","every":"1m0s"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, ".."); err != nil || got.Schedule.Name != ".." {
		t.Fatalf("Get(..) = %+v, %v; want the record read", got, err)
	}
	if err := s.Pause(ctx, "..", time.Time{}, tickgroup.Reason("to be renamed")); err != nil {
		t.Errorf("Pause(..) = %v", err)
	}
	if err := s.Delete(ctx, ".."); err != nil {
		t.Errorf("Delete(..) = %v", err)
	}
	if _, err := s.Get(ctx, ".."); !errors.Is(err, tickgroup.ErrNotFound) {
		t.Errorf("Get(..) after its deletion: %v", err)
	}
}

// TestChangeLogClaimWrittenAhead: claims of the next schedules-topic offsets, written before the change they
// would hide (a resume's value is predictable), are forged and take nothing: the resume that follows is confirmed,
// with its own author and reason.
func TestChangeLogClaimWrittenAhead(t *testing.T) {
	k, s := newSchedules(t)
	ctx := t.Context()
	start := time.Now().Add(-time.Second)
	if err := s.Put(ctx, tickgroup.Schedule{Name: "scan", Every: tickgroup.Duration(time.Minute)}, tickgroup.Reason("first version")); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(ctx, "scan", time.Time{}); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The put's record is the value a resume writes again.
	first := readFirst(t, k.Brokers, k.Namespace+".schedules")
	next := topicEnds(t, cl, k.Namespace+".schedules")[k.Namespace+".schedules"]
	for off := next; off < next+3; off++ {
		v := `{"v":1,"kind":"schedule_change","op":"resume","schedule":"scan","at":"2026-12-05T10:00:00Z","by":{"name":"console:alice"},` +
			`"reason":"per security","after":` + string(first.Value) + `,"schedule_offset":` + itoa(off) + `}`
		// Logged a minute before the resume: what the broker's LogAppendTime says of a claim written ahead.
		r := &kgo.Record{Topic: k.Namespace + ".changes", Key: []byte("scan"), Value: []byte(v), Timestamp: time.Now().Add(-time.Minute)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// A real broker stamps the claims with its own time (LogAppendTime), now: the resume comes more than the
	// brokers' allowed skew later, as a claim written ahead at leisure would be.
	time.Sleep(changelog.ClaimSkew + 200*time.Millisecond)
	if err := s.Resume(ctx, "scan", tickgroup.Reason("maintenance done"), tickgroup.By("ops")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scan", ""} {
		log, stats, err := s.ChangeLog(ctx, name, start.Add(-2*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, r := range log {
			ops = append(ops, fmt.Sprintf("%s:%s:%s:%t", r.Op, r.By.Name, r.Reason, r.Confirmed))
		}
		want := "put::first version:true pause:::true resume:ops:maintenance done:true"
		if got := strings.Join(ops, " "); got != want || stats.Forged != 3 {
			t.Errorf("ChangeLog(%q): %q, %d forged; want %q, 3 forged", name, got, stats.Forged, want)
		}
		if len(log) == 3 && log[2].Version != next {
			t.Errorf("ChangeLog(%q): the resume at version %d, want %d", name, log[2].Version, next)
		}
	}
}

// readFirst returns the first record of partition 0 of topic.
func readFirst(t *testing.T, brokers []string, topic string) *kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		if rs := fs.Records(); len(rs) > 0 {
			return rs[0]
		}
	}
}

// TestChangeLogOfOneSchedule: the change log of one schedule is what the whole change log holds of it, read
// without the other schedules' records, and at most its newest 1,000 changes.
func TestChangeLogOfOneSchedule(t *testing.T) {
	k, s := newSchedules(t)
	ctx := t.Context()
	since := time.Now().Add(-time.Second)
	var want []tickgroup.Schedule
	for i := range 30 {
		want = append(want, tickgroup.Schedule{Name: fmt.Sprintf("s%02d", i), Every: tickgroup.Duration(time.Duration(i+1) * time.Minute), Pool: "batch"})
	}
	if _, err := s.Apply(ctx, want, false, tickgroup.Reason("the first apply")); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"s03", "s05", "s03", "s11"} {
		if err := s.Pause(ctx, name, time.Time{}, tickgroup.Reason(fmt.Sprint("pause ", i))); err != nil {
			t.Fatal(err)
		}
		if err := s.Resume(ctx, name, tickgroup.By("ops")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Trigger(ctx, "s03", tickgroup.Reason("once more")); err != nil {
		t.Fatal(err)
	}
	to := time.Now().Add(-time.Minute)
	if _, err := s.Backfill(ctx, "s03", to.Add(-time.Hour), to, tickgroup.BackfillOptions{Reprocess: tickgroup.ReprocessAll}); err != nil {
		t.Fatal(err)
	}
	want[5].Every = tickgroup.Duration(time.Hour)
	if _, err := s.Apply(ctx, want[:20], true); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "s03"); err != nil {
		t.Fatal(err)
	}
	// 1,100 triggers of s07 in the log (their ticks are not written: a trigger's change is never confirmed).
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 1100 {
		v := fmt.Sprintf(`{"v":1,"kind":"schedule_change","op":"trigger","schedule":"s07","at":"2026-12-05T10:00:00Z","by":{"name":"job"},"reason":"run %d","schedule_offset":0,"trigger":"s07@x-%d"}`, i, i)
		recs = append(recs, &kgo.Record{Topic: k.Namespace + ".changes", Key: []byte("s07"), Value: []byte(v)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	all, _, err := s.ChangeLog(ctx, "", since)
	if err != nil {
		t.Fatal(err)
	}
	of := func(name string) []tickgroup.ChangeRecord {
		var out []tickgroup.ChangeRecord
		for _, r := range all {
			if r.Schedule == name {
				out = append(out, r)
			}
		}
		return out
	}
	for _, name := range []string{"s03", "s05", "s11", "s25", "s07"} {
		got, stats, err := s.ChangeLog(ctx, name, since)
		if err != nil {
			t.Fatal(err)
		}
		want := of(name)
		if name == "s07" {
			if len(want) != 1101 {
				t.Fatalf("the whole log holds %d changes of s07, want 1,101", len(want))
			}
			want = want[len(want)-1000:]
		}
		if !reflect.DeepEqual(got, want) || stats != (tickgroup.ChangeLogStats{}) {
			t.Errorf("ChangeLog(%s): %d changes, %+v; want the %d of the whole log", name, len(got), stats, len(want))
			for i := range min(len(got), len(want)) {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("change %d: %+v, want %+v", i, got[i], want[i])
					break
				}
			}
		}
	}
	if got := of("s03"); len(got) != 8 || !got[6].Confirmed || got[6].Op != tickgroup.ChangeLogBackfill || got[7].Op != tickgroup.ChangeLogDelete {
		t.Errorf("the changes of s03: %+v", got)
	}
}

// An apply of BulkApply changes or more is logged compactly: a record per 2,000 changes, each change by its
// schedule and version. Read back, each is a change of its own, confirmed by the schedules topic, with the
// definition it wrote (from that topic) and no definition before; its deletions are told apart. An apply below
// the threshold is logged a change a record, its definitions before and after included.
func TestChangeLogOfBulkApply(t *testing.T) {
	k, s := newSchedules(t)
	ctx := t.Context()
	since := time.Now().Add(-time.Second)
	n := tickgroup.BulkApply + 1500
	want := make([]tickgroup.Schedule, n)
	for i := range want {
		want[i] = tickgroup.Schedule{Name: fmt.Sprintf("b%05d", i), Every: tickgroup.Duration(time.Minute)}
	}
	if _, err := s.Apply(ctx, want, false, tickgroup.Reason("bulk"), tickgroup.By("deploy")); err != nil {
		t.Fatal(err)
	}
	// The second apply: 10 changed and the last 1,000 pruned (1,010 changes: logged in bulk too).
	for i := range 10 {
		want[i].Every = tickgroup.Duration(time.Hour)
	}
	if _, err := s.Apply(ctx, want[:n-1000], true); err != nil {
		t.Fatal(err)
	}
	// The third: one change, logged alone.
	want[20].Every = tickgroup.Duration(2 * time.Hour)
	if _, err := s.Apply(ctx, want[:n-1000], true); err != nil {
		t.Fatal(err)
	}

	keys := map[string]int{}
	if _, err := kafka.ReadStable(ctx, []kgo.Opt{kgo.SeedBrokers(k.Brokers...)}, k.Namespace+".changes", 0, func(r *kgo.Record) error {
		if !r.Attrs.IsControl() {
			keys[string(r.Key)]++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if keys["~apply"] != 3 || keys["b00020"] != 1 || len(keys) != 2 {
		t.Errorf("change-log records by key: %v; want 2 bulk records for %d changes, 1 for 1,010, and b00020's own", keys, n)
	}

	all, stats, err := s.ChangeLog(ctx, "", since)
	if err != nil || stats != (tickgroup.ChangeLogStats{}) {
		t.Fatalf("ChangeLog: %v, %+v", err, stats)
	}
	if len(all) != n+1010+1 {
		t.Fatalf("%d changes read, want %d", len(all), n+1010+1)
	}
	first, second, third := all[:n], all[n:n+1010], all[n+1010]
	for i, r := range first {
		if r.Bulk != n || r.Before != nil || r.Deleted || r.Reason != "bulk" || r.By.Name != "deploy" || r.Op != tickgroup.ChangeLogApply {
			t.Fatalf("first apply, change %d: %+v", i, r)
		}
		// Compaction has not run: the record of every change is there, but the 10 the second apply replaced
		// are still the first apply's (a compacted topic keeps them until its cleaner runs).
		if !r.Confirmed || r.After == nil || r.After.Name != r.Schedule {
			t.Fatalf("first apply, change %d: confirmed %v, after %+v", i, r.Confirmed, r.After)
		}
	}
	deleted := 0
	for _, r := range second {
		if r.Bulk != 1010 || !r.Confirmed {
			t.Fatalf("second apply: %+v", r)
		}
		if r.Deleted {
			deleted++
			if r.After != nil {
				t.Errorf("a deletion of %s with a definition after", r.Schedule)
			}
		} else if time.Duration(r.After.Every) != time.Hour {
			t.Errorf("%s changed to %v, want 1h", r.Schedule, r.After.Every)
		}
	}
	if deleted != 1000 {
		t.Errorf("%d deletions in the second apply, want 1,000", deleted)
	}
	if third.Bulk != 0 || third.Before == nil || time.Duration(third.Before.Every) != time.Minute || time.Duration(third.After.Every) != 2*time.Hour {
		t.Errorf("the one change of the third apply: %+v", third)
	}

	// One schedule's log finds its changes in the bulk records.
	got, stats, err := s.ChangeLog(ctx, "b00005", since)
	if err != nil || stats != (tickgroup.ChangeLogStats{}) || len(got) != 2 || got[0].Bulk != n || got[1].Bulk != 1010 ||
		time.Duration(got[1].After.Every) != time.Hour || !got[1].Confirmed {
		t.Errorf("ChangeLog(b00005) = %+v, %+v, %v", got, stats, err)
	}
}

// newSchedules returns a fresh namespace and a schedules client of it, closed when the test ends.
func newSchedules(t *testing.T) (tickgroup.KafkaConfig, *tickgroup.Schedules) {
	t.Helper()
	k := testKafka(t)
	s, err := tickgroup.NewSchedules(k)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return k, s
}
