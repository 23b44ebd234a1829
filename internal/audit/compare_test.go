package audit

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// at returns t0 + seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// fixture builds a Log by hand: schedule versions, emissions and ledger entries.
type fixture struct {
	t *testing.T
	l *Log
}

func newFixture(t *testing.T) *fixture { return &fixture{t: t, l: NewLog()} }

func (f *fixture) put(spec schedule.Spec, changed time.Time) *fixture {
	f.t.Helper()
	if spec.Name == "" {
		spec.Name = "s"
	}
	sched, err := spec.Compile()
	if err != nil {
		f.t.Fatal(err)
	}
	d := f.l.Definitions[spec.Name]
	f.l.AddVersion(spec.Name, int64(len(f.l.Definitions)*1000+versionsOf(d)), changed, sched)
	return f
}

func versionsOf(d *Definition) int {
	if d == nil {
		return 0
	}
	return len(d.Versions)
}

// emit records a work record of schedule s's slot (shard of shards) emitted at emitted by term epoch.
func (f *fixture) emit(name string, slot time.Time, shard, shards int, emitted time.Time, epoch int64) string {
	id := tick.ID(name, slot, shard, shards)
	t := f.l.tick(id)
	t.Schedule, t.Slot, t.Shard, t.Shards = name, slot, shard, shards
	t.Emissions = append(t.Emissions, Emission{Partition: 0, Offset: int64(len(t.Emissions)), EmittedAt: emitted, LeaderEpoch: epoch})
	return id
}

func (f *fixture) entry(id string, e ledger.Entry) {
	e.ID = id
	t := f.l.tick(id)
	t.Ledger = append(t.Ledger, e)
}

func ok(worker string, attempts int) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindOutcome, Status: ledger.StatusOK, Worker: worker, Attempts: attempts, DurationMS: 12}
}

func started(worker string, attempt int) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindStarted, Worker: worker, Attempt: attempt}
}

// marked returns e with the interrupted mark: its run's handler was told of an earlier run's interruption.
func marked(e ledger.Entry) ledger.Entry {
	e.Interrupted = true
	return e
}

// run emits and executes (ok) every slot of an every-10s schedule in [from, to] seconds, on time, by epoch 1,
// except the slots in skip.
func (f *fixture) run(name string, from, to int, skip ...int) {
	skipped := map[int]bool{}
	for _, s := range skip {
		skipped[s] = true
	}
	for s := from; s <= to; s += 10 {
		if skipped[s] {
			continue
		}
		id := f.emit(name, at(float64(s)), 0, 1, at(float64(s)+0.01), 1)
		f.entry(id, ok("w1", 1))
	}
}

var every10 = schedule.Spec{Every: schedule.Duration(10 * time.Second)}

// every10latest is every10 with catch-up latest (the default is all).
var every10latest = schedule.Spec{Every: schedule.Duration(10 * time.Second), Catchup: schedule.CatchupLatest}

func TestCompare(t *testing.T) {
	// Lead -1: leaders that emit each slot when due; the case "a pause inside the lead window" sets a lead.
	opts := Options{From: at(0), To: at(100), Now: at(3600), Lead: -1}
	cases := []struct {
		name   string
		build  func(f *fixture)
		opts   Options
		want   Counts
		wantOK bool
	}{
		{
			name:   "every slot emitted once and executed",
			build:  func(f *fixture) { f.put(every10, at(0)).run("s", 10, 100) },
			want:   Counts{Expected: 10, Emitted: 10, Executed: 10},
			wantOK: true,
		},
		{
			name: "a cron schedule (6 fields, seconds)",
			build: func(f *fixture) {
				f.put(schedule.Spec{Cron: "*/10 * * * * *", TZ: "Europe/Berlin"}, at(0)).run("s", 10, 100, 70)
			},
			want:   Counts{Expected: 10, Emitted: 9, Executed: 9, Missing: 1, MissingNotEmitted: 1},
			wantOK: false,
		},
		{
			name:  "a slot never emitted is missing",
			build: func(f *fixture) { f.put(every10, at(0)).run("s", 10, 100, 40) },
			want:  Counts{Expected: 10, Emitted: 9, Executed: 9, Missing: 1, MissingNotEmitted: 1},
		},
		{
			name: "an emitted slot without an outcome is missing",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 100, 40)
				f.emit("s", at(40), 0, 1, at(40), 1)
			},
			want: Counts{Expected: 10, Emitted: 10, Executed: 9, Missing: 1, MissingNoOutcome: 1},
		},
		{
			name: "a slot emitted twice and run twice",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 100)
				id := f.emit("s", at(40), 0, 1, at(40.5), 2)
				f.entry(id, ok("w2", 1))
			},
			want: Counts{Expected: 10, Emitted: 10, Executed: 10, Doubled: 1, RanTwice: 1, ReRun: 1},
		},
		{
			name: "taken over mid-run, the re-run marked: re-run and interrupted, still fine",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 100, 40)
				id := f.emit("s", at(40), 0, 1, at(40), 1)
				f.entry(id, started("w1", 1))
				f.entry(id, marked(started("w2", 2)))
				f.entry(id, marked(ok("w2", 2)))
			},
			want:   Counts{Expected: 10, Emitted: 10, Executed: 10, ReRun: 1, MarkedReRun: 1, Interrupted: 1},
			wantOK: true,
		},
		{
			name: "taken over mid-run, the re-run not marked: ran twice",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 100, 40)
				id := f.emit("s", at(40), 0, 1, at(40), 1)
				f.entry(id, started("w1", 1))
				f.entry(id, started("w2", 2))
				f.entry(id, ok("w2", 2))
			},
			want: Counts{Expected: 10, Emitted: 10, Executed: 10, RanTwice: 1, ReRun: 1, Interrupted: 1},
		},
		{
			name: "only the outcome is left (started compacted away), marked interrupted",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 100, 40)
				id := f.emit("s", at(40), 0, 1, at(40), 1)
				f.entry(id, marked(ok("w2", 2)))
			},
			want:   Counts{Expected: 10, Emitted: 10, Executed: 10, ReRun: 1, MarkedReRun: 1, Interrupted: 1},
			wantOK: true,
		},
		{
			name: "started, never finished",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 100, 40)
				id := f.emit("s", at(40), 0, 1, at(40), 1)
				f.entry(id, started("w1", 1))
			},
			want: Counts{Expected: 10, Emitted: 10, Executed: 9, Missing: 1, MissingNoOutcome: 1, Interrupted: 1},
		},
		{
			name: "recent slots are pending, not missing",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 80)
				f.emit("s", at(90), 0, 1, at(90), 1)
			},
			opts:   Options{From: at(0), To: at(100), Now: at(101)},
			want:   Counts{Expected: 10, Emitted: 9, Executed: 8, Pending: 2},
			wantOK: true,
		},
		{
			name: "a manual trigger is never expected",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 100)
				id := tick.TriggerID("s", at(55), "1a2b3c4d", 0, 1)
				tk := f.l.tick(id)
				tk.Emissions = []Emission{{EmittedAt: at(55)}}
				f.entry(id, ok("w1", 1))
			},
			want:   Counts{Expected: 10, Emitted: 10, Executed: 10},
			wantOK: true,
		},
		{
			name: "pause and resume: nothing expected while paused, no catch-up after",
			build: func(f *fixture) {
				paused := every10
				paused.Paused = true
				f.put(every10, at(0)).put(paused, at(50.5)).put(every10, at(80.5))
				f.run("s", 10, 50)
				f.run("s", 90, 100)
			},
			// 10..40 required, 50 optional (due 0.5 s before the pause) and emitted, 90 and 100 required.
			want:   Counts{Expected: 7, Emitted: 7, Executed: 7},
			wantOK: true,
		},
		{
			name: "a pause with an end: nothing expected before it, every slot from it on",
			build: func(f *fixture) {
				paused := every10
				paused.Paused = true
				end := at(80)
				paused.PausedUntil = &end
				f.put(every10, at(0)).put(paused, at(50.5))
				f.run("s", 10, 50)
				f.run("s", 80, 100)
			},
			// 10..40 required, 50 optional and emitted, then 80, 90 and 100 from the pause's end.
			want:   Counts{Expected: 8, Emitted: 8, Executed: 8},
			wantOK: true,
		},
		{
			name: "a pause with an end whose slots did not run: missing",
			build: func(f *fixture) {
				paused := every10
				paused.Paused = true
				end := at(80)
				paused.PausedUntil = &end
				f.put(every10, at(0)).put(paused, at(50.5))
				f.run("s", 10, 50)
			},
			want: Counts{Expected: 8, Emitted: 5, Executed: 5, Missing: 3, MissingNotEmitted: 3},
		},
		{
			name: "a tick emitted while paused is unexpected",
			build: func(f *fixture) {
				paused := every10
				paused.Paused = true
				f.put(every10, at(0)).put(paused, at(50.5)).put(every10, at(80.5))
				f.run("s", 10, 100)
			},
			want:   Counts{Expected: 7, Emitted: 10, Executed: 10, Unexpected: 3},
			wantOK: true,
		},
		{
			name: "a pause inside the lead window: the slots emitted ahead are optional (cancelled or run)",
			build: func(f *fixture) {
				paused := every10
				paused.Paused = true
				f.put(every10, at(0)).put(paused, at(50.5))
				f.run("s", 10, 60) // 60 was emitted ahead before the pause and ran (its cancel came late)
			},
			opts:   Options{From: at(0), To: at(100), Now: at(3600), Lead: 15 * time.Second},
			want:   Counts{Expected: 6, Emitted: 6, Executed: 6},
			wantOK: true,
		},
		{
			name: "a tick cancelled although its schedule was never paused or deleted: missing",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 90)
				id := f.emit("s", at(100), 0, 1, at(100), 1)
				f.entry(id, ledger.Entry{Kind: ledger.KindOutcome, Status: ledger.StatusCancelled, Worker: "w1"})
			},
			want: Counts{Expected: 10, Emitted: 10, Executed: 10, Missing: 1},
		},
		{
			name: "a change inside a term: the running leader waits for the old next slot",
			build: func(f *fixture) {
				f.put(schedule.Spec{Every: schedule.Duration(time.Minute)}, at(0)).put(every10, at(25))
				f.run("s", 60, 100) // 30, 40 and 50 are optional: the old version's next slot was 60
			},
			want:   Counts{Expected: 5, Emitted: 5, Executed: 5},
			wantOK: true,
		},
		{
			name: "a change, then a new term that starts from the change time",
			build: func(f *fixture) {
				f.put(schedule.Spec{Every: schedule.Duration(time.Minute)}, at(0)).put(every10, at(25))
				f.run("s", 30, 100)
			},
			want:   Counts{Expected: 8, Emitted: 8, Executed: 8},
			wantOK: true,
		},
		{
			name: "catch-up latest after an outage: the slots before the new term are passed over",
			build: func(f *fixture) {
				f.put(every10latest, at(0)).run("s", 10, 30)
				id := f.emit("s", at(60), 0, 1, at(65), 2) // the new term's first batch, 5 s late
				f.entry(id, ok("w1", 1))
				for s := 70; s <= 100; s += 10 {
					f.entry(f.emit("s", at(float64(s)), 0, 1, at(float64(s)), 2), ok("w1", 1))
				}
			},
			want:   Counts{Expected: 10, Emitted: 8, Executed: 8, PassedOver: 2},
			wantOK: true,
		},
		{
			name: "the default catch-up (all) after an outage: the slots the new term did not emit are missing",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 30)
				id := f.emit("s", at(60), 0, 1, at(65), 2) // the new term's first batch, 5 s late
				f.entry(id, ok("w1", 1))
				for s := 70; s <= 100; s += 10 {
					f.entry(f.emit("s", at(float64(s)), 0, 1, at(float64(s)), 2), ok("w1", 1))
				}
			},
			want: Counts{Expected: 10, Emitted: 8, Executed: 8, Missing: 2, MissingNotEmitted: 2},
		},
		{
			name: "catch-up latest inside one term is not an outage: missing",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 30)
				f.entry(f.emit("s", at(60), 0, 1, at(65), 1), ok("w1", 1))
				f.run("s", 70, 100)
			},
			want: Counts{Expected: 10, Emitted: 8, Executed: 8, Missing: 2, MissingNotEmitted: 2},
		},
		{
			name: "a new term that was running when the slot fell due: missing",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 10, 30)
				f.put(schedule.Spec{Name: "other", Every: schedule.Duration(time.Second)}, at(0))
				f.entry(f.emit("other", at(35), 0, 1, at(35), 2), ok("w1", 1)) // term 2 runs from 35
				for s := 60; s <= 100; s += 10 {
					f.entry(f.emit("s", at(float64(s)), 0, 1, at(float64(s)), 2), ok("w1", 1))
				}
			},
			opts: Options{From: at(0), To: at(100), Now: at(3600), Schedule: "s"},
			want: Counts{Expected: 10, Emitted: 8, Executed: 8, Missing: 2, MissingNotEmitted: 2},
		},
		{
			name: "catch-up skip after an outage",
			build: func(f *fixture) {
				skip := every10
				skip.Catchup = schedule.CatchupSkip
				f.put(skip, at(0)).run("s", 10, 30)
				for s := 70; s <= 100; s += 10 { // term 2 started at 65, 5 s after slot 60: skipped
					f.entry(f.emit("s", at(float64(s)), 0, 1, at(float64(s)), 2), ok("w1", 1))
				}
			},
			want:   Counts{Expected: 10, Emitted: 7, Executed: 7, PassedOver: 3},
			wantOK: true,
		},
		{
			name: "catch-up all beyond catchup_max is passed over, within it missing",
			build: func(f *fixture) {
				all := every10
				all.Catchup, all.CatchupMax = schedule.CatchupAll, 2
				f.put(all, at(0)).run("s", 10, 20)
				// term 2 at 65 should emit 50 and 60 (the 2 newest); it emitted only 60.
				f.entry(f.emit("s", at(60), 0, 1, at(65), 2), ok("w1", 1))
				for s := 70; s <= 100; s += 10 {
					f.entry(f.emit("s", at(float64(s)), 0, 1, at(float64(s)), 2), ok("w1", 1))
				}
			},
			// 30 and 40: beyond the 2 newest of 30..60 -> passed over; 50: the leader owed it -> missing.
			want: Counts{Expected: 10, Emitted: 7, Executed: 7, PassedOver: 2, Missing: 1, MissingNotEmitted: 1},
		},
		{
			name: "shards: one shard of a slot missing",
			build: func(f *fixture) {
				sharded := every10
				sharded.Shards = 2
				f.put(sharded, at(0))
				for s := 10; s <= 100; s += 10 {
					for shard := range 2 {
						if s == 50 && shard == 1 {
							continue
						}
						f.entry(f.emit("s", at(float64(s)), shard, 2, at(float64(s)), 1), ok("w1", 1))
					}
				}
			},
			want: Counts{Expected: 20, Emitted: 19, Executed: 19, Missing: 1, MissingNotEmitted: 1},
		},
		{
			name: "partial history: slots before the oldest retained version are counted, not compared",
			build: func(f *fixture) {
				f.put(every10, at(50.5)).run("s", 10, 100, 20)
				f.l.Definitions["s"].Partial = true
			},
			want:   Counts{Expected: 5, Emitted: 9, Executed: 9},
			wantOK: true,
		},
		{
			name: "work records deleted by retention: slots before the first retained record are not audited",
			build: func(f *fixture) {
				f.put(every10, at(0)).run("s", 60, 100)
				f.l.WorkPartitions = 1
				f.l.WorkFrom[0] = at(55)
			},
			want:   Counts{Expected: 5, Emitted: 5, Executed: 5},
			wantOK: true,
		},
		{
			name:   "no definition retained: nothing expected, emitted ticks still need outcomes",
			build:  func(f *fixture) { f.emit("gone", at(30), 0, 1, at(30), 1) },
			opts:   Options{From: at(0), To: at(100), Now: at(3600), Schedule: "gone", Lead: -1},
			want:   Counts{Emitted: 1, Missing: 1, MissingNoOutcome: 1},
			wantOK: false,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			tc.build(f)
			o := tc.opts
			if o.Now.IsZero() {
				o = opts
			}
			rep := Compare(f.l, o)
			name := o.Schedule
			if name == "" {
				name = "s"
			}
			var got *ScheduleReport
			for i := range rep.Schedules {
				if rep.Schedules[i].Name == name {
					got = &rep.Schedules[i]
				}
			}
			if got == nil {
				t.Fatalf("no report for schedule %s: %+v", name, rep.Schedules)
			}
			c := got.Counts
			c.Outcomes = nil
			if !reflect.DeepEqual(c, tc.want) {
				t.Errorf("counts:\n got %+v\nwant %+v", c, tc.want)
				for _, tr := range got.Ticks {
					t.Logf("  %s %s %v", tr.ID, tr.State, tr.Problems)
				}
			}
			if rep.OK != tc.wantOK {
				t.Errorf("OK = %v, want %v", rep.OK, tc.wantOK)
			}
		})
	}
}

func TestExecutions(t *testing.T) {
	fin := at(5)
	cases := []struct {
		name    string
		entries []ledger.Entry
		settled bool
		want    []Execution
	}{
		{
			name:    "started then outcome",
			entries: []ledger.Entry{started("w1", 1), ok("w1", 1)},
			want:    []Execution{{Worker: "w1", Attempt: 1, Status: "ok", DurationMS: 12}},
		},
		{
			name:    "outcome only (started compacted away)",
			entries: []ledger.Entry{{Kind: ledger.KindOutcome, Status: "failed", Worker: "w2", Attempts: 3, FinishedAt: &fin}},
			want:    []Execution{{Worker: "w2", Attempt: 3, Status: "failed", FinishedAt: &fin}},
		},
		{
			name:    "taken over by another worker",
			entries: []ledger.Entry{started("w1", 1), started("w2", 2), ok("w2", 2)},
			want:    []Execution{{Worker: "w1", Attempt: 1, Status: ExecInterrupted}, {Worker: "w2", Attempt: 2, Status: "ok", DurationMS: 12}},
		},
		{
			name:    "retried by the same worker",
			entries: []ledger.Entry{started("w1", 1), started("w1", 2), ok("w1", 2)},
			want:    []Execution{{Worker: "w1", Attempt: 1, Status: ExecRetried}, {Worker: "w1", Attempt: 2, Status: "ok", DurationMS: 12}},
		},
		{
			name: "retried by the partition's next owner",
			entries: []ledger.Entry{started("w1", 1), {Kind: ledger.KindReleased, Retry: true, Worker: "w1", Attempt: 1, Error: "boom", At: fin},
				started("w2", 2), ok("w2", 2)},
			want: []Execution{{Worker: "w1", Attempt: 1, Status: ExecRetried, Error: "boom", FinishedAt: &fin},
				{Worker: "w2", Attempt: 2, Status: "ok", DurationMS: 12}},
		},
		{
			name:    "released",
			entries: []ledger.Entry{started("w1", 1), {Kind: ledger.KindReleased, Worker: "w1", Attempt: 1}},
			want:    []Execution{{Worker: "w1", Attempt: 1, Status: ExecReleased}},
		},
		{
			name:    "started, still running",
			entries: []ledger.Entry{started("w1", 1)},
			want:    []Execution{{Worker: "w1", Attempt: 1, Status: ExecRunning}},
		},
		{
			name:    "started, no outcome after the grace",
			entries: []ledger.Entry{started("w1", 1)},
			settled: true,
			want:    []Execution{{Worker: "w1", Attempt: 1, Status: ExecNoOutcome}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := executions(tc.entries, tc.settled)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d executions %+v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				g.StartedAt = nil // the zero At of a fabricated entry
				if !equalTime(g.FinishedAt, w.FinishedAt) {
					t.Errorf("[%d] finished %v, want %v", i, g.FinishedAt, w.FinishedAt)
				}
				g.FinishedAt, w.FinishedAt = nil, nil
				if g != w {
					t.Errorf("[%d] got %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// TestLegacyOutcome: an outcome written before the ledger existed (no kind) is an execution.
func TestLegacyOutcome(t *testing.T) {
	e, err := ledger.Decode([]byte(`{"id":"s@2026-12-01T10:00:10Z","status":"ok","attempts":1,"duration_ms":3.5,"worker":"w1","partition":0,"offset":7,"finished_at":"2026-12-01T10:00:11Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	xs := executions([]ledger.Entry{e}, true)
	if len(xs) != 1 || xs[0].Status != "ok" || xs[0].Worker != "w1" || xs[0].DurationMS != 3.5 || xs[0].FinishedAt == nil {
		t.Errorf("executions = %+v", xs)
	}
}

// TestOptionalAroundChange: a slot due within ChangeSlack of a change is neither required nor unexpected.
func TestOptionalAroundChange(t *testing.T) {
	f := newFixture(t)
	f.put(every10, at(0)).put(schedule.Spec{Every: schedule.Duration(5 * time.Second)}, at(41))
	f.run("s", 10, 30) // slot 40 (due 1 s before the change) not emitted: optional
	for s := 45; s <= 100; s += 5 {
		f.entry(f.emit("s", at(float64(s)), 0, 1, at(float64(s)), 1), ok("w1", 1))
	}
	rep := Compare(f.l, Options{From: at(0), To: at(100), Now: at(3600)})
	c := rep.Schedules[0].Counts
	// 10, 20, 30 + 45..100 (12 slots; 45 is due 4 s after the change, more than the 3 s slack).
	if c.Expected != 15 || c.Missing != 0 || c.Unexpected != 0 || !rep.OK {
		t.Errorf("counts %+v, ok %v", c, rep.OK)
	}
}

// TestJSONContract: lists are arrays, never null, and the names scripts rely on are there.
func TestJSONContract(t *testing.T) {
	f := newFixture(t)
	f.put(every10, at(0)).run("s", 10, 30, 20)
	rep := Compare(f.l, Options{Now: at(3600), To: at(30)})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"from":null`, `"triggers":[]`, `"notes":[]`, `"ok":false`, `"strict":false`, `"missing_not_emitted":1`,
		`"ran_twice":0`, `"re_run":0`, `"marked_re_run":0`, `"retried":0`,
		`"problems":["missing"]`, `"emissions":[]`, `"executions":[]`, `"history_partial":false`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	h, found := HistoryOf(Compare(f.l, Options{Now: at(3600), Schedule: "nope", AllTicks: true}), "nope", at(0))
	if found || h.Ticks == nil || h.Triggers == nil {
		t.Errorf("history of an unknown schedule: found %v, %+v", found, h)
	}
}

// TestMaxTicks: past the cap, ticks are neither derived nor called unexpected.
func TestMaxTicks(t *testing.T) {
	f := newFixture(t)
	f.put(every10, at(0)).run("s", 10, 100)
	rep := Compare(f.l, Options{From: at(0), To: at(100), Now: at(3600), MaxTicks: 4})
	c := rep.Schedules[0].Counts
	if c.Expected != 4 || c.Emitted != 10 || c.Unexpected != 0 || c.Missing != 0 || len(rep.Schedules[0].Notes) != 1 {
		t.Errorf("counts %+v, notes %v", c, rep.Schedules[0].Notes)
	}
}
