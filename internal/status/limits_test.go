package status

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/limit"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestLimitRuns: a limit's ticks run from their started entry to their outcome (a retry's pause included) and
// wait when emitted and due without a start (a release that cuts the run off waits again); a tick not yet due,
// one with an outcome and one of a schedule without a limit do not count. The oldest wait is from its instant.
func TestLimitRuns(t *testing.T) {
	now := at(1000)
	f := newLogFixture(t)
	stripe := every("pay", 10*time.Second)
	stripe.Limit = "stripe"
	f.put(stripe, at(0)).put(every("free", 10*time.Second), at(0))
	released := func(retry bool, when time.Time) ledger.Entry {
		return ledger.Entry{Kind: ledger.KindReleased, Worker: "w1", Attempt: 1, Retry: retry, At: when}
	}
	record(f.emit("pay", at(950), 0, 1, at(940), 1), startedAt("w1", 1, at(950)), outcome(ledger.StatusOK, "w1", 1, at(951))) // done
	record(f.emit("pay", at(960), 0, 1, at(950), 1), startedAt("w1", 1, at(961)))                                             // running
	record(f.emit("pay", at(970), 0, 1, at(960), 1), startedAt("w1", 1, at(971)), released(true, at(972)))                    // running: a retry's pause
	record(f.emit("pay", at(980), 0, 1, at(970), 1), startedAt("w1", 1, at(981)), released(false, at(982)))                   // waiting: cut off
	f.emit("pay", at(990), 0, 1, at(980), 1)                                                                                  // waiting
	f.emit("pay", at(1010), 0, 1, at(1000), 1)                                                                                // not due
	f.emit("free", at(940), 0, 1, at(930), 1)                                                                                 // no limit
	// A started entry names its limit: the tick counts against it whatever its schedule names now.
	moved := f.emit("free", at(990), 0, 1, at(980), 1)
	e := startedAt("w1", 1, at(991))
	e.Limit = "stripe"
	record(moved, e)

	u := limitUses(f.entries)
	rep := &Report{Limits: []Limit{{Name: "stripe", Defined: true}, {Name: "idle", Defined: true}}}
	limitRuns(f.l, u, rep, Options{Now: now})
	got := rep.Limits[0]
	if deref(got.Running) != 3 || deref(got.Waiting) != 2 || got.OldestWaitSeconds == nil || *got.OldestWaitSeconds != 20 {
		t.Errorf("stripe: running %v, waiting %v, oldest %v; want 3, 2 and 20 s (the tick of slot 980, cut off)",
			deref(got.Running), deref(got.Waiting), got.OldestWaitSeconds)
	}
	if idle := rep.Limits[1]; deref(idle.Running) != 0 || deref(idle.Waiting) != 0 || idle.OldestWaitSeconds != nil {
		t.Errorf("idle: running %v, waiting %v, oldest %v; want 0, 0 and none", deref(idle.Running), deref(idle.Waiting), idle.OldestWaitSeconds)
	}
}

// TestCollectLimits: the report lists each limit with its bounds and the schedules naming it (of the whole
// namespace, also in a report on one schedule), a name no limit defines, the schedules of another pool, and its
// ticks running and waiting; each schedule shows its limit and priority, in the JSON and in print.
func TestCollectLimits(t *testing.T) {
	b := setup(t)
	if _, err := kafka.EnsurePoolTopics(b.ctx, kadm.NewClient(b.cl), b.names.Pool("other"), kafka.TopicOptions{WorkPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []limit.Limit{
		{Name: "stripe", Concurrency: 10, Rate: 100, Window: schedule.Duration(time.Minute)},
		{Name: "mail", Pool: "batch", Rate: 5, Window: schedule.Duration(10 * time.Second)},
	} {
		if _, err := limit.Put(b.ctx, b.cl, b.names.Limits, l); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Now()
	put := func(spec schedule.Spec) {
		t.Helper()
		v, err := schedule.Encode(spec)
		if err != nil {
			t.Fatal(err)
		}
		b.put(t, spec.Name, v)
	}
	put(schedule.Spec{Name: "pay-a", Every: schedule.Duration(100 * time.Second), Limit: "stripe", Priority: 5})
	put(schedule.Spec{Name: "pay-b", Every: schedule.Duration(100 * time.Second), Limit: "stripe"})
	put(schedule.Spec{Name: "pay-c", Every: schedule.Duration(100 * time.Second), Limit: "stripe", Pool: "other"})
	put(schedule.Spec{Name: "ghost", Every: schedule.Duration(100 * time.Second), Limit: "gone"})
	put(schedule.Spec{Name: "plain", Every: schedule.Duration(100 * time.Second), Priority: 1})

	// pay-a's slot s1 runs, pay-b's waits.
	s1 := created.Truncate(100 * time.Second).Add(100 * time.Second)
	emit := func(name string) (tick.Tick, int32, int64) {
		tk := tick.New(name, s1, 0, 1)
		tk.EmittedAt, tk.LeaderEpoch, tk.Limit = s1.Add(-10*time.Second), 1, "stripe"
		v, err := tick.Encode(tk)
		if err != nil {
			t.Fatal(err)
		}
		p := tk.Partition(2)
		return tk, p, b.produce(t, &kgo.Record{Topic: b.names.Work, Partition: p, Key: []byte(tk.ID), Value: v})[0]
	}
	tk, p, o := emit("pay-a")
	b.ledger(t, tk, p, o, ledger.Entry{Kind: ledger.KindStarted, Attempt: 1, At: s1, Limit: "stripe"})
	emit("pay-b")

	now := s1.Add(30 * time.Second)
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if errs := runErrors(rep); len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	if len(rep.Limits) != 3 {
		t.Fatalf("limits = %+v, want gone, mail and stripe", rep.Limits)
	}
	gone, mail, stripe := rep.Limits[0], rep.Limits[1], rep.Limits[2]
	if gone.Name != "gone" || gone.Defined || deref(gone.Schedules) != 1 {
		t.Errorf("gone = %+v, want undefined, named by 1 schedule", gone)
	}
	if mail.Name != "mail" || mail.Pool != "batch" || mail.Concurrency != 0 || mail.Rate != "5/10s" || mail.Schedules == nil || *mail.Schedules != 0 || deref(mail.Running) != 0 {
		t.Errorf("mail = %+v, want pool batch, 5/10s, no schedule, nothing running", mail)
	}
	if stripe.Name != "stripe" || stripe.Pool != "default" || stripe.Concurrency != 10 || stripe.Rate != "100/1m" || stripe.RateStarts != 100 ||
		stripe.RateWindowSeconds != 60 || deref(stripe.Schedules) != 3 || stripe.OtherPools != 1 {
		t.Errorf("stripe = %+v, want default, 10 at once, 100/1m, 3 schedules of which 1 of another pool", stripe)
	}
	if deref(stripe.Running) != 1 || deref(stripe.Waiting) != 1 || stripe.OldestWaitSeconds == nil || *stripe.OldestWaitSeconds != 30 {
		t.Errorf("stripe: running %v, waiting %v, oldest %v; want 1, 1, 30 s", deref(stripe.Running), deref(stripe.Waiting), stripe.OldestWaitSeconds)
	}
	by := map[string]Schedule{}
	for _, s := range rep.Schedules {
		by[s.Name] = s
	}
	if s := by["pay-a"]; s.Limit != "stripe" || s.Priority != 5 {
		t.Errorf("pay-a: limit %q priority %d, want stripe 5", s.Limit, s.Priority)
	}
	if s := by["plain"]; s.Limit != "" || s.Priority != 1 {
		t.Errorf("plain: limit %q priority %d, want none and 1", s.Limit, s.Priority)
	}

	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"limits":[{"name":"gone"`, `"name":"stripe","pool":"default","concurrency":10,"rate":"100/1m","rate_starts":100,"rate_window_seconds":60,"defined":true,"schedules":3,"schedules_of_other_pools":1,"running":1,"waiting":1,"oldest_wait_seconds":30}`,
		`"limit":"stripe","priority":5`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js)
		}
	}
	var out bytes.Buffer
	Print(&out, rep)
	for _, want := range []string{"MISSED/1h  LIMIT", "PRIORITY", "LIMITS (ticker limit list", "NOT DEFINED", "limit gone: named by 1 schedule(s) but not defined",
		"limit stripe: named by 1 schedule(s) of another pool than default", "100/1m", "5/10s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, out.String())
		}
	}

	checkFleetLimits(t, b, now)

	// One schedule: its limit alone, not counted (only that schedule's records are read).
	rep, err = Collect(b.ctx, b.opts, b.names, "st", Options{Schedule: "pay-b", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Limits) != 1 || rep.Limits[0].Name != "stripe" || rep.Limits[0].Schedules != nil || deref(rep.Limits[0].Waiting) != 1 {
		t.Fatalf("limits of pay-b = %+v, want stripe alone, its schedules not counted, 1 waiting", rep.Limits)
	}
	out.Reset()
	PrintSchedule(&out, rep)
	if want := "limit       stripe of pool default: at most 10 at once and 100/1m; 1 running, 1 waiting (the oldest for 30s)"; !strings.Contains(out.String(), want) {
		t.Errorf("printed schedule lacks %q:\n%s", want, out.String())
	}
}

// A namespace without limits reads as before them: no LIMIT column and no LIMITS section, and an empty list
// in the JSON.
func TestCollectWithoutLimits(t *testing.T) {
	b := setup(t)
	v, _ := schedule.Encode(schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)})
	b.put(t, "beat", v)
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Limits == nil || len(rep.Limits) != 0 {
		t.Errorf("limits = %#v, want an empty list", rep.Limits)
	}
	var out bytes.Buffer
	Print(&out, rep)
	if strings.Contains(out.String(), "LIMIT") {
		t.Errorf("a namespace without limits prints them:\n%s", out.String())
	}
}

// checkFleetLimits checks the limits of TestCollectLimits's fleet-only report: the same running and waiting,
// from the ticks' own records, and the schedules naming stripe not counted.
func checkFleetLimits(t *testing.T, b *bundle, now time.Time) {
	t.Helper()
	fleet, err := Collect(b.ctx, b.opts, b.names, "st", Options{Now: now, FleetOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(fleet.Limits, func(l Limit) bool { return l.Name == "stripe" })
	if l := fleet.Limits[max(i, 0)]; i < 0 || l.Schedules != nil || deref(l.Running) != 1 || deref(l.Waiting) != 1 {
		t.Errorf("stripe in the fleet-only report (%d): %+v, want its schedules not counted, 1 running, 1 waiting", i, fleet.Limits)
	}
}
