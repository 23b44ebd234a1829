package status

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// at returns t0 + seconds.
func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// logFixture builds by hand what audit.Read gathers (schedule versions, emissions, ledger entries) and the
// schedules as store.Load returns them.
type logFixture struct {
	t       *testing.T
	l       *audit.Log
	entries map[string]store.Entry
}

func newLogFixture(t *testing.T) *logFixture {
	return &logFixture{t: t, l: audit.NewLog(), entries: map[string]store.Entry{}}
}

func (f *logFixture) put(spec schedule.Spec, changed time.Time) *logFixture {
	f.t.Helper()
	sched, err := spec.Compile()
	if err != nil {
		f.t.Fatal(err)
	}
	version := int64(len(f.entries))
	f.l.AddVersion(spec.Name, version, changed, sched)
	f.entries[spec.Name] = store.Entry{Schedule: sched, Version: version, UpdatedAt: changed}
	return f
}

// emit records a work record of name's slot (shard of shards), emitted at emitted by term epoch.
func (f *logFixture) emit(name string, slot time.Time, shard, shards int, emitted time.Time, epoch int64) *audit.Tick {
	id := tick.ID(name, slot, shard, shards)
	t := f.l.Ticks[id]
	if t == nil {
		t = &audit.Tick{ID: id, Schedule: name, Slot: slot, Shard: shard, Shards: shards}
		f.l.Ticks[id] = t
	}
	t.Emissions = append(t.Emissions, audit.Emission{Offset: int64(len(t.Emissions)), EmittedAt: emitted, LeaderEpoch: epoch})
	return t
}

// record records entries in t's ledger, in order.
func record(t *audit.Tick, es ...ledger.Entry) {
	for _, e := range es {
		e.ID = t.ID
		t.Ledger = append(t.Ledger, e)
	}
}

func startedAt(worker string, attempt int, when time.Time) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindStarted, Worker: worker, Attempt: attempt, At: when}
}

func outcome(status, worker string, attempts int, finished time.Time) ledger.Entry {
	return ledger.Entry{Kind: ledger.KindOutcome, Status: status, Worker: worker, Attempts: attempts, DurationMS: 12, FinishedAt: &finished, At: finished}
}

// facts runs runFacts at now over the schedules of f and returns them by name.
func (f *logFixture) facts(o Options) map[string]Schedule {
	f.t.Helper()
	o = o.withDefaults()
	rep := &Report{}
	for _, e := range store.Sorted(f.entries) {
		rep.Schedules = append(rep.Schedules, Schedule{Name: e.Spec().Name, Schedule: e.Spec().Describe()})
	}
	runFacts(f.l, f.entries, rep, o)
	out := map[string]Schedule{}
	for _, s := range rep.Schedules {
		out[s.Name] = s
	}
	return out
}

func every(name string, d time.Duration) schedule.Spec {
	return schedule.Spec{Name: name, Every: schedule.Duration(d)}
}

// TestLastRun: the last run is the newest due slot that was emitted or ran; its status, attempts and start
// delay come from its ledger entries, and say where the delay comes from.
func TestLastRun(t *testing.T) {
	now := at(1000)
	delay := func(s float64) *float64 { return &s }
	cases := []struct {
		name  string
		build func(f *logFixture)
		want  Run // Slot, Status, Attempts, Worker, StartDelaySeconds (nil or value), StartDelayFrom
	}{
		{
			name: "started and finished: the delay from the started entry",
			build: func(f *logFixture) {
				record(f.emit("s", at(980), 0, 1, at(970), 1), startedAt("w1", 1, at(980.25)), outcome(ledger.StatusOK, "w1", 1, at(981)))
				record(f.emit("s", at(970), 0, 1, at(960), 1), startedAt("w1", 1, at(975)), outcome(ledger.StatusOK, "w1", 1, at(976)))
			},
			want: Run{Slot: at(980), Status: ledger.StatusOK, Attempts: 1, Worker: "w1", StartDelaySeconds: delay(0.25), StartDelayFrom: DelayStarted},
		},
		{
			name: "a start recorded ahead of the instant is on time",
			build: func(f *logFixture) {
				record(f.emit("s", at(980), 0, 1, at(970), 1), startedAt("w1", 1, at(979.98)), outcome(ledger.StatusOK, "w1", 1, at(981)))
			},
			want: Run{Slot: at(980), Status: ledger.StatusOK, Attempts: 1, Worker: "w1", StartDelaySeconds: delay(0), StartDelayFrom: DelayStarted},
		},
		{
			name: "the outcome alone: the delay is unknown",
			build: func(f *logFixture) {
				record(f.emit("s", at(980), 0, 1, at(970), 1), outcome(ledger.StatusFailed, "w2", 3, at(990)))
			},
			want: Run{Slot: at(980), Status: ledger.StatusFailed, Attempts: 3, Worker: "w2", StartDelayFrom: DelayOutcomeOnly},
		},
		{
			name: "retried: every attempt counts, the delay is the first attempt's",
			build: func(f *logFixture) {
				record(f.emit("s", at(980), 0, 1, at(970), 1),
					startedAt("w1", 1, at(981)),
					ledger.Entry{Kind: ledger.KindReleased, Worker: "w1", Attempt: 1, Retry: true, At: at(982)},
					startedAt("w1", 2, at(984)),
					outcome(ledger.StatusOK, "w1", 2, at(985)))
			},
			want: Run{Slot: at(980), Status: ledger.StatusOK, Attempts: 2, Worker: "w1", StartDelaySeconds: delay(1), StartDelayFrom: DelayStarted},
		},
		{
			name: "started, no outcome yet: running",
			build: func(f *logFixture) {
				record(f.emit("s", at(990), 0, 1, at(980), 1), startedAt("w1", 1, at(992)))
			},
			want: Run{Slot: at(990), Status: audit.StateRunning, Attempts: 1, Worker: "w1", StartDelaySeconds: delay(2), StartDelayFrom: DelayStarted},
		},
		{
			name: "emitted, not started: pending, waiting since its instant",
			build: func(f *logFixture) {
				record(f.emit("s", at(980), 0, 1, at(970), 1), startedAt("w1", 1, at(980)), outcome(ledger.StatusOK, "w1", 1, at(981)))
				f.emit("s", at(990), 0, 1, at(980), 1)
			},
			want: Run{Slot: at(990), Status: audit.StatePending, StartDelaySeconds: delay(10), StartDelayFrom: DelayWaiting},
		},
		{
			name: "a stuck queue: the wait of the oldest tick not started since the last one that did",
			build: func(f *logFixture) {
				record(f.emit("s", at(960), 0, 1, at(950), 1), startedAt("w1", 1, at(960)), outcome(ledger.StatusOK, "w1", 1, at(961)))
				f.emit("s", at(970), 0, 1, at(960), 1)
				f.emit("s", at(980), 0, 1, at(970), 1)
				f.emit("s", at(990), 0, 1, at(980), 1)
			},
			want: Run{Slot: at(990), Status: audit.StatePending, StartDelaySeconds: delay(30), StartDelayFrom: DelayWaiting, WaitingSince: ptr(at(970))},
		},
		{
			name: "emitted, not started past the grace: no outcome",
			build: func(f *logFixture) {
				f.emit("s", at(600), 0, 1, at(590), 1)
			},
			want: Run{Slot: at(600), Status: audit.StateNoOutcome, StartDelaySeconds: delay(400), StartDelayFrom: DelayWaiting},
		},
		{
			name: "a tick emitted ahead of its instant is not the last run yet, nor is a manual trigger",
			build: func(f *logFixture) {
				record(f.emit("s", at(990), 0, 1, at(980), 1), startedAt("w1", 1, at(990.5)), outcome(ledger.StatusOK, "w1", 1, at(991)))
				f.emit("s", at(1005), 0, 1, at(995), 1)
				trig := f.emit("s", at(999), 0, 1, at(999), 1)
				trig.Trigger, trig.ID = true, "s@2026-12-01T10:16:39Z~trigger-x"
			},
			want: Run{Slot: at(990), Status: ledger.StatusOK, Attempts: 1, Worker: "w1", StartDelaySeconds: delay(0.5), StartDelayFrom: DelayStarted},
		},
		{
			name: "shards: the one that started latest",
			build: func(f *logFixture) {
				record(f.emit("s", at(980), 0, 3, at(970), 1), startedAt("w1", 1, at(980.1)), outcome(ledger.StatusOK, "w1", 1, at(981)))
				record(f.emit("s", at(980), 1, 3, at(970), 1), startedAt("w2", 1, at(983)), outcome(ledger.StatusOK, "w2", 1, at(984)))
				record(f.emit("s", at(980), 2, 3, at(970), 1), startedAt("w3", 1, at(980.2)), outcome(ledger.StatusFailed, "w3", 1, at(981)))
			},
			want: Run{Slot: at(980), Status: ledger.StatusOK, Attempts: 1, Worker: "w2", StartDelaySeconds: delay(3), StartDelayFrom: DelayStarted},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newLogFixture(t).put(every("s", 10*time.Second), at(0))
			tc.build(f)
			s := f.facts(Options{Now: now})["s"]
			got := s.LastRun
			if got == nil {
				t.Fatalf("no last run, want %+v", tc.want)
			}
			if !got.Slot.Equal(tc.want.Slot) || got.Status != tc.want.Status || got.Attempts != tc.want.Attempts || got.Worker != tc.want.Worker ||
				got.StartDelayFrom != tc.want.StartDelayFrom {
				t.Errorf("last run = slot %s %s, %d attempts, worker %q, delay from %q; want slot %s %s, %d, %q, %q",
					got.Slot.Format(time.RFC3339), got.Status, got.Attempts, got.Worker, got.StartDelayFrom,
					tc.want.Slot.Format(time.RFC3339), tc.want.Status, tc.want.Attempts, tc.want.Worker, tc.want.StartDelayFrom)
			}
			if w, g := tc.want.WaitingSince, got.WaitingSince; (w == nil) != (g == nil) || (w != nil && !w.Equal(*g)) {
				t.Errorf("waiting since %v, want %v", g, w)
			}
			switch w, g := tc.want.StartDelaySeconds, got.StartDelaySeconds; {
			case (w == nil) != (g == nil):
				t.Errorf("start delay = %v, want %v", g, w)
			case w != nil && (*g-*w > 1e-6 || *w-*g > 1e-6):
				t.Errorf("start delay = %vs, want %vs", *g, *w)
			}
		})
	}
}

// TestMissed: the slots missed in the window are audit.Compare's missing ticks, one per slot: expected and not
// emitted, or emitted without an outcome, past the grace; not those within the grace, before the window, or
// passed over by the catch-up policy after an outage.
func TestMissed(t *testing.T) {
	now := at(3600)
	o := Options{Now: now, Window: 1000 * time.Second, Grace: 60 * time.Second}
	runAll := func(f *logFixture, name string, from, to int, skip ...int) {
		for s := from; s <= to; s += 10 {
			if !contains(skip, s) {
				record(f.emit(name, at(float64(s)), 0, 1, at(float64(s)), 1), startedAt("w1", 1, at(float64(s))), outcome(ledger.StatusOK, "w1", 1, at(float64(s)+1)))
			}
		}
	}
	f := newLogFixture(t)
	// on-time: every slot ran.
	f.put(every("on-time", 10*time.Second), at(0))
	runAll(f, "on-time", 10, 3600)
	// gaps: 3000 never emitted, 3100 emitted without an outcome, 2000 never emitted but before the window,
	// 3590 not emitted yet (within the grace).
	f.put(every("gaps", 10*time.Second), at(0))
	runAll(f, "gaps", 10, 3580, 2000, 3000, 3100)
	f.emit("gaps", at(3100), 0, 1, at(3100), 1)
	// sharded: slot 3200 lost on one of its two shards: one slot missed.
	f.put(schedule.Spec{Name: "sharded", Every: schedule.Duration(100 * time.Second), Shards: 2}, at(0))
	for s := 100; s <= 3600; s += 100 {
		for shard := range 2 {
			if s == 3200 && shard == 1 {
				continue
			}
			record(f.emit("sharded", at(float64(s)), shard, 2, at(float64(s)), 1), outcome(ledger.StatusOK, "w1", 1, at(float64(s)+1)))
		}
	}
	got := f.facts(o)
	want := map[string][]time.Time{"on-time": nil, "gaps": {at(3000), at(3100)}, "sharded": {at(3200)}}
	for name, slots := range want {
		s := got[name]
		if s.Missed == nil || *s.Missed != len(slots) || !equalTimes(s.MissedSlots, slots) {
			t.Errorf("%s: missed %v %v, want %d %v", name, deref(s.Missed), s.MissedSlots, len(slots), slots)
		}
	}

	// An outage of the whole fleet under catch-up latest: no leader from 3010 to 3065, the new term emits 3060
	// first; 3020..3050 are passed over, not missed. The same slots lost while a term was running are missed.
	for _, outage := range []bool{true, false} {
		f := newLogFixture(t).put(schedule.Spec{Name: "s", Every: schedule.Duration(10 * time.Second), Catchup: schedule.CatchupLatest}, at(0))
		runAll(f, "s", 10, 3010)
		for s := 3060; s <= 3600; s += 10 {
			emitted, epoch := at(max(float64(s), 3065)), int64(2)
			if !outage {
				emitted, epoch = at(float64(s)), 1
			}
			record(f.emit("s", at(float64(s)), 0, 1, emitted, epoch), outcome(ledger.StatusOK, "w1", 1, at(float64(s)+6)))
		}
		if s := f.facts(o)["s"]; s.Missed == nil || (outage && *s.Missed != 0) || (!outage && *s.Missed != 4) {
			t.Errorf("catch-up latest, outage %v: missed %v %v, want %d", outage, deref(s.Missed), s.MissedSlots, map[bool]int{true: 0, false: 4}[outage])
		}
	}
	if late := got["gaps"].Late(time.Hour); !late {
		t.Error("gaps is not late with 2 missed slots")
	}
	if late := got["on-time"].Late(500 * time.Millisecond); late {
		t.Errorf("on-time is late: last run %+v", got["on-time"].LastRun)
	}
}

// TestLateFilter: --late keeps the schedules whose last start (or wait) exceeds it, or that missed a slot.
func TestLateFilter(t *testing.T) {
	d := func(s float64) *float64 { return &s }
	zero, one := 0, 1
	cases := []struct {
		s    Schedule
		late bool
	}{
		{Schedule{Missed: &zero, LastRun: &Run{StartDelaySeconds: d(0.2), StartDelayFrom: DelayStarted}}, false},
		{Schedule{Missed: &zero, LastRun: &Run{StartDelaySeconds: d(90), StartDelayFrom: DelayStarted}}, true},
		{Schedule{Missed: &zero, LastRun: &Run{StartDelaySeconds: d(61), StartDelayFrom: DelayWaiting}}, true},
		{Schedule{Missed: &zero, LastRun: &Run{StartDelayFrom: DelayOutcomeOnly}}, false},
		{Schedule{Missed: &one}, true},
		{Schedule{}, false}, // the runs could not be read: nothing says it is late
	}
	for i, c := range cases {
		if got := c.s.Late(time.Minute); got != c.late {
			t.Errorf("case %d: Late(1m) = %v, want %v (%+v)", i, got, c.late, c.s.LastRun)
		}
	}
}

// TestPrintRunColumns: the table keeps its columns in their order and adds the run facts after them.
func TestPrintRunColumns(t *testing.T) {
	d := 12.5
	missed := 2
	rep := &Report{Namespace: "st", WindowSeconds: 3600, GraceSeconds: 300, Pools: []Pool{{Name: "default"}}, Schedules: []Schedule{{
		Name: "scan", Pool: "default", Schedule: "every 30s",
		LastRun: &Run{Status: "failed", Attempts: 3, StartDelaySeconds: &d, StartDelayFrom: DelayStarted}, Missed: &missed,
	}, {
		Name: "idle", Pool: "default", Schedule: "every 1m", Paused: true,
	}}}
	var out bytes.Buffer
	Print(&out, rep)
	lines := strings.Split(out.String(), "\n")
	header := strings.Fields(strings.NewReplacer("LAST SLOT", "LAST_SLOT", "NEXT SLOT", "NEXT_SLOT", "LAST RUN", "LAST_RUN").Replace(lines[3]))
	want := []string{"SCHEDULE", "DEFINITION", "LAST_SLOT", "NEXT_SLOT", "STATE", "LEADER", "POOL", "LAST_RUN", "DELAY", "ATTEMPTS", "MISSED/1h"}
	if strings.Join(header, " ") != strings.Join(want, " ") {
		t.Errorf("header = %q, want %q", header, want)
	}
	if f := strings.Fields(lines[4]); len(f) != 12 || strings.Join(f[len(f)-4:], " ") != "failed 12.5s 3 2" {
		t.Errorf("scan's row = %q, want it to end with failed 12.5s 3 2", lines[4])
	}
	if f := strings.Fields(lines[5]); strings.Join(f[len(f)-4:], " ") != "- - - -" {
		t.Errorf("idle's row = %q, want - for every run fact (no run, runs not read)", lines[5])
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
