package status

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

type bundle struct {
	cluster *kfake.Cluster
	opts    []kgo.Opt
	names   kafka.Names
	cl      *kgo.Client
	ctx     context.Context
}

func setup(t *testing.T) *bundle {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	names := kafka.Config{Namespace: "st"}.Names()
	if err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), names, kafka.TopicOptions{WorkPartitions: 2}); err != nil {
		t.Fatal(err)
	}
	return &bundle{cluster: c, opts: opts, names: names, cl: cl, ctx: ctx}
}

func (b *bundle) put(t *testing.T, key string, value []byte) {
	t.Helper()
	if err := b.cl.ProduceSync(b.ctx, &kgo.Record{Topic: b.names.Schedules, Key: []byte(key), Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// A namespace with a schedule, a broken record for it, no ticker and no worker: the report lists the schedule
// (its last valid definition), names the broken record, says there is no leader, and has no errors.
func TestCollectSchedulesAndBrokenRecords(t *testing.T) {
	b := setup(t)
	v, err := schedule.Encode(schedule.Spec{Name: "scan", Every: schedule.Duration(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	b.put(t, "scan", v)
	b.put(t, "scan", []byte("garbage"))
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Leader != nil || len(rep.Schedules) != 1 || rep.Schedules[0].Name != "scan" || rep.Schedules[0].Schedule != "every 30s" {
		t.Errorf("report: leader %v, schedules %+v; want no leader and scan every 30s", rep.Leader, rep.Schedules)
	}
	if len(rep.Broken) != 1 || rep.Broken[0].Name != "scan" || rep.Broken[0].Offset != 1 || !rep.Broken[0].HasValid {
		t.Errorf("broken = %+v, want scan at offset 1 with a valid definition kept", rep.Broken)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors = %v, want none", rep.Errors)
	}
	var out bytes.Buffer
	Print(&out, rep)
	if !strings.Contains(out.String(), "BROKEN SCHEDULE RECORDS") || !strings.Contains(out.String(), "scan at offset 1") {
		t.Errorf("printed report lacks the broken record:\n%s", out.String())
	}
}

// A part that cannot be read is reported, not dropped: the rest of the report is still there. A refusal by the
// authorizer is an error naming the permission.
func TestCollectReportsErrors(t *testing.T) {
	t.Run("failure", func(t *testing.T) { collectWithDescribeError(t, kerr.UnknownServerError.Code) })
	t.Run("refusal", func(t *testing.T) { collectWithDescribeError(t, kerr.GroupAuthorizationFailed.Code) })
}

func collectWithDescribeError(t *testing.T, code int16) {
	b := setup(t)
	v, _ := schedule.Encode(schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)})
	b.put(t, "beat", v)
	b.cluster.ControlKey(int16(kmsg.DescribeGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		r := req.(*kmsg.DescribeGroupsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{})
	if code == kerr.GroupAuthorizationFailed.Code {
		if err == nil || !strings.Contains(err.Error(), "Describe") || !strings.Contains(err.Error(), "st.ticker") {
			t.Fatalf("a refused describe: err = %v, want one naming Describe on the ticker group", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Schedules) != 1 {
		t.Errorf("schedules = %+v, want beat", rep.Schedules)
	}
	joined := strings.Join(rep.Errors, "; ")
	if !strings.Contains(joined, "ticker group") || !strings.Contains(joined, "UNKNOWN_SERVER_ERROR") {
		t.Errorf("errors = %q, want the ticker group's failure named", joined)
	}
}

// produce writes records, each to its own topic and partition, and returns their offsets.
func (b *bundle) produce(t *testing.T, recs ...*kgo.Record) []int64 {
	t.Helper()
	res := b.cl.ProduceSync(b.ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := make([]int64, len(res))
	for i, r := range res {
		offsets[i] = r.Record.Offset
	}
	return offsets
}

// emitTick writes slot's tick of schedule name to the work topic and returns it and its work offset.
func (b *bundle) emitTick(t *testing.T, name string, slot time.Time) (tick.Tick, int32, int64) {
	t.Helper()
	tk := tick.New(name, slot, 0, 1)
	tk.EmittedAt, tk.LeaderEpoch = slot.Add(-10*time.Second), 1
	v, err := tick.Encode(tk)
	if err != nil {
		t.Fatal(err)
	}
	p := tk.Partition(2)
	return tk, p, b.produce(t, &kgo.Record{Topic: b.names.Work, Partition: p, Key: []byte(tk.ID), Value: v})[0]
}

// ledger writes entries about tk (at work partition p, offset o) to the results topic.
func (b *bundle) ledger(t *testing.T, tk tick.Tick, p int32, o int64, es ...ledger.Entry) {
	t.Helper()
	for _, e := range es {
		e.ID, e.Schedule, e.Partition, e.Offset, e.Fence, e.Worker = tk.ID, tk.Schedule, p, o, 1, "w1"
		b.produce(t, &kgo.Record{Topic: b.names.Results, Partition: p, Key: []byte(tk.ID), Value: ledger.Encode(e)})
	}
}

// TestCollectRuns: from the records on the work and results topics (read as the audit reads them), each
// schedule gets its last run and the slots it missed in the window; --late keeps the late ones; a report on one
// schedule adds its next slots in its zone, and an unknown name is an error.
func TestCollectRuns(t *testing.T) {
	b := setup(t)
	// The schedules' first slots come after their records' timestamps (now): the report is made later (Now).
	created := time.Now()
	put := func(spec schedule.Spec) {
		v, err := schedule.Encode(spec)
		if err != nil {
			t.Fatal(err)
		}
		b.put(t, spec.Name, v)
	}
	put(schedule.Spec{Name: "scan", Every: schedule.Duration(100 * time.Second)})
	put(schedule.Spec{Name: "fine", Every: schedule.Duration(100 * time.Second)})
	put(schedule.Spec{Name: "daily", Cron: "0 6 * * *", TZ: "Europe/Berlin", Paused: true})
	s1 := created.Truncate(100 * time.Second).Add(100 * time.Second)
	s2, s3 := s1.Add(100*time.Second), s1.Add(200*time.Second)
	// scan: s1 ran (started 2 s late), s2 never emitted, s3 started and never finished.
	tk, p, o := b.emitTick(t, "scan", s1)
	b.ledger(t, tk, p, o, ledger.Entry{Kind: ledger.KindStarted, Attempt: 1, At: s1.Add(2 * time.Second)},
		ledger.Entry{Kind: ledger.KindOutcome, Status: ledger.StatusOK, Attempts: 1, At: s1.Add(3 * time.Second)})
	tk, p, o = b.emitTick(t, "scan", s3)
	b.ledger(t, tk, p, o, ledger.Entry{Kind: ledger.KindStarted, Attempt: 1, At: s3.Add(time.Second)})
	// fine: every slot ran on time; the last one's started entry is gone (compacted): its outcome alone.
	for _, s := range []time.Time{s1, s2, s3} {
		tk, p, o := b.emitTick(t, "fine", s)
		if !s.Equal(s3) {
			b.ledger(t, tk, p, o, ledger.Entry{Kind: ledger.KindStarted, Attempt: 1, At: s})
		}
		b.ledger(t, tk, p, o, ledger.Entry{Kind: ledger.KindOutcome, Status: ledger.StatusOK, Attempts: 1, At: s.Add(time.Second)})
	}

	now := s3.Add(90 * time.Second)
	o1 := Options{Now: now, Window: time.Hour, Grace: time.Minute}
	rep, err := Collect(b.ctx, b.opts, b.names, "st", o1)
	if err != nil {
		t.Fatal(err)
	}
	if errs := runErrors(rep); len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	by := map[string]Schedule{}
	for _, s := range rep.Schedules {
		by[s.Name] = s
	}
	scan, fine, daily := by["scan"], by["fine"], by["daily"]
	if r := scan.LastRun; r == nil || !r.Slot.Equal(s3) || r.Status != "no_outcome" || r.StartDelaySeconds == nil || *r.StartDelaySeconds != 1 {
		t.Errorf("scan's last run = %+v, want slot %s, no outcome, started 1 s late", scan.LastRun, s3)
	}
	if scan.Missed == nil || *scan.Missed != 2 || !equalTimes(scan.MissedSlots, []time.Time{s2, s3}) {
		t.Errorf("scan missed %v %v, want s2 (never emitted) and s3 (no outcome)", deref(scan.Missed), scan.MissedSlots)
	}
	if r := fine.LastRun; r == nil || !r.Slot.Equal(s3) || r.Status != ledger.StatusOK || r.StartDelaySeconds != nil || r.StartDelayFrom != DelayOutcomeOnly {
		t.Errorf("fine's last run = %+v, want slot %s, ok, its start unknown (outcome only)", fine.LastRun, s3)
	}
	if fine.Missed == nil || *fine.Missed != 0 || daily.Missed == nil || *daily.Missed != 0 || daily.LastRun != nil {
		t.Errorf("fine missed %v, daily missed %v with last run %+v; want 0, 0 and none", deref(fine.Missed), deref(daily.Missed), daily.LastRun)
	}
	var out bytes.Buffer
	Print(&out, rep)
	for _, want := range []string{"MISSED/1h", "no_outcome", "outcome only"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed report lacks %q:\n%s", want, out.String())
		}
	}

	checkFleetOnly(t, b, now, rep)

	// --late 5s: scan (missed slots) alone; fine started on time and daily is paused.
	o1.Late = 5 * time.Second
	if rep, err = Collect(b.ctx, b.opts, b.names, "st", o1); err != nil {
		t.Fatal(err)
	}
	if len(rep.Schedules) != 1 || rep.Schedules[0].Name != "scan" {
		t.Errorf("--late 5s lists %+v, want scan alone", rep.Schedules)
	}

	// One schedule: its next slots in UTC and its zone; none while paused.
	rep, err = Collect(b.ctx, b.opts, b.names, "st", Options{Schedule: "fine", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Schedules) != 1 || len(rep.Schedules[0].Upcoming) != 5 || !rep.Schedules[0].Upcoming[0].Slot.Equal(s3.Add(100*time.Second)) ||
		rep.Schedules[0].Zone != "UTC" {
		t.Fatalf("fine in detail: %+v, want its 5 next slots from %s in UTC", rep.Schedules, s3.Add(100*time.Second))
	}
	out.Reset()
	PrintSchedule(&out, rep)
	for _, want := range []string{"schedule    fine", "next slots  " + s3.Add(100*time.Second).Format(time.RFC3339), "outcome only"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("printed schedule lacks %q:\n%s", want, out.String())
		}
	}
	rep, err = Collect(b.ctx, b.opts, b.names, "st", Options{Schedule: "daily", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Schedules[0]; s.Zone != "Europe/Berlin" || len(s.Upcoming) != 0 {
		t.Errorf("daily in detail: zone %q, next %v; want Europe/Berlin and none (paused)", s.Zone, s.Upcoming)
	}
	out.Reset()
	PrintSchedule(&out, rep)
	if !strings.Contains(out.String(), "next slots  paused") {
		t.Errorf("printed paused schedule lacks its pause:\n%s", out.String())
	}
	if _, err := Collect(b.ctx, b.opts, b.names, "st", Options{Schedule: "nope"}); !errors.Is(err, ErrUnknownSchedule) {
		t.Errorf("an unknown schedule: err = %v, want ErrUnknownSchedule", err)
	}
}

// checkFleetOnly checks the fleet-only report of TestCollectRuns's namespace against rep, the full one: no rows,
// the same pools, the timeline from the same runs, printed without the table of schedules.
func checkFleetOnly(t *testing.T, b *bundle, now time.Time, rep *Report) {
	t.Helper()
	fleet, err := Collect(b.ctx, b.opts, b.names, "st", Options{Now: now, Window: time.Hour, Grace: time.Minute, FleetOnly: true, Timeline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(fleet.Schedules) != 0 || fleet.Entries != nil || len(fleet.Pools) != len(rep.Pools) || len(fleet.Timeline) == 0 {
		t.Errorf("fleet-only report: %d schedules, entries %v, %d pools (want %d), %d timelines", len(fleet.Schedules), fleet.Entries != nil, len(fleet.Pools), len(rep.Pools), len(fleet.Timeline))
	}
	var out bytes.Buffer
	Print(&out, fleet)
	if !strings.Contains(out.String(), "schedules  not read (--fleet)") || strings.Contains(out.String(), "SCHEDULE\t") || strings.Contains(out.String(), "scan") {
		t.Errorf("printed fleet-only report:\n%s", out.String())
	}
	if _, err := Collect(b.ctx, b.opts, b.names, "st", Options{FleetOnly: true, Schedule: "scan"}); err == nil {
		t.Error("a fleet-only report on one schedule was made")
	}
}

// TestCollectZone: a cron schedule's next slots are shown in its zone as well as in UTC.
func TestCollectZone(t *testing.T) {
	b := setup(t)
	v, err := schedule.Encode(schedule.Spec{Name: "berlin", Cron: "30 6 * * *", TZ: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	b.put(t, "berlin", v)
	now := time.Now().Add(time.Hour)
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{Schedule: "berlin", Now: now, Upcoming: 2})
	if err != nil {
		t.Fatal(err)
	}
	up := rep.Schedules[0].Upcoming
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if len(up) != 2 || up[0].Local != up[0].Slot.In(berlin).Format(time.RFC3339) || !strings.Contains(up[0].Local, "T06:30:00+0") {
		t.Errorf("upcoming = %+v, want 2 slots at 06:30 Berlin time", up)
	}
	var out bytes.Buffer
	PrintSchedule(&out, rep)
	if !strings.Contains(out.String(), "Europe/Berlin") || !strings.Contains(out.String(), up[1].Local) {
		t.Errorf("printed schedule lacks its zone's column:\n%s", out.String())
	}
}

// TestCollectMaxRecords: above Options.MaxRecords the runs are read from the window only (audit.ReadSince): the
// report says from when, and a tick of the window is still read.
func TestCollectMaxRecords(t *testing.T) {
	b := setup(t)
	v, _ := schedule.Encode(schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)})
	b.put(t, "beat", v)
	for i := range 3 {
		b.emitTick(t, "beat", time.Now().Truncate(time.Second).Add(time.Duration(i+1)*time.Second))
	}
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{MaxRecords: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Schedules) != 1 || rep.Schedules[0].Missed == nil || rep.RunsSince == nil || len(runErrors(rep)) != 0 {
		t.Errorf("schedules %+v, since %v, errors %q; want beat with run facts read since the window", rep.Schedules, rep.RunsSince, rep.Errors)
	}
	var out bytes.Buffer
	Print(&out, rep)
	if !strings.Contains(out.String(), "retain more than --max-records: the run facts are those of the records since") {
		t.Errorf("the report does not say where the run facts come from:\n%s", out.String())
	}
}

// runErrors returns the errors of rep but the oldest pending tick's: with no worker group, kfake answers its
// offset fetch with GROUP_ID_NOT_FOUND, and these tests are not about it.
func runErrors(rep *Report) []string {
	var out []string
	for _, e := range rep.Errors {
		if !strings.Contains(e, "oldest pending ticks") {
			out = append(out, e)
		}
	}
	return out
}

// TestCollectPauseUntil: a pause's end and reason are shown; a pause with an end has a next slot (the first at
// or after its end), one without has none.
func TestCollectPauseUntil(t *testing.T) {
	b := setup(t)
	until := time.Now().Add(2 * time.Hour).Truncate(time.Minute).Add(30 * time.Second)
	for _, spec := range []schedule.Spec{
		{Name: "held", Every: schedule.Duration(time.Minute), Paused: true, PausedUntil: &until, PauseReason: "db migration"},
		{Name: "off", Every: schedule.Duration(time.Minute), Paused: true},
	} {
		v, err := schedule.Encode(spec)
		if err != nil {
			t.Fatal(err)
		}
		b.put(t, spec.Name, v)
	}
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{})
	if err != nil {
		t.Fatal(err)
	}
	held, off := rep.Schedules[0], rep.Schedules[1]
	if !held.Paused || held.PausedUntil == nil || !held.PausedUntil.Equal(until) || held.PauseReason != "db migration" ||
		held.NextSlot == nil || !held.NextSlot.Equal(until.Add(30*time.Second)) {
		t.Errorf("held = %+v, want paused until %s for its reason, next slot %s", held, until, until.Add(30*time.Second))
	}
	if !off.Paused || off.NextSlot != nil || off.PausedUntil != nil {
		t.Errorf("off = %+v, want paused with no next slot", off)
	}
	var out bytes.Buffer
	Print(&out, rep)
	if !strings.Contains(out.String(), `held: until `+until.Format(time.RFC3339)+`, reason "db migration"`) {
		t.Errorf("printed report lacks the pause:\n%s", out.String())
	}
	if rep, err = Collect(b.ctx, b.opts, b.names, "st", Options{Schedule: "held"}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	PrintSchedule(&out, rep)
	if s := rep.Schedules[0]; len(s.Upcoming) != 5 || !s.Upcoming[0].Slot.Equal(until.Add(30*time.Second)) ||
		!strings.Contains(out.String(), "state       paused, until") {
		t.Errorf("held in detail: next %v; printed:\n%s", s.Upcoming, out.String())
	}
}

// TestCollectRunsRefused: a principal that may not read the results topic gets no partial report but an error
// naming the ACL it lacks, as for the lag (the shipped operator ACLs grant it).
func TestCollectRunsRefused(t *testing.T) {
	b := setup(t)
	v, _ := schedule.Encode(schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)})
	b.put(t, "beat", v)
	b.cluster.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		r := req.(*kmsg.ListOffsetsRequest)
		if len(r.Topics) == 0 || !slices.ContainsFunc(r.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return t.Topic == b.names.Results }) {
			return nil, nil, false
		}
		resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{})
	if err == nil || !strings.Contains(err.Error(), "this principal needs Read on topic st.work, st.results") {
		t.Errorf("Collect: %v, %+v; want an error naming the refused ACL", err, rep)
	}
}

// TestLeadersFromTheTickerGroup: each partition of the ticker topic that a member of the ticker group holds is a
// leader in the report, a member holding two of them included.
func TestLeadersFromTheTickerGroup(t *testing.T) {
	b := setup(t)
	assignment := func(ps ...int32) []byte {
		a := kmsg.NewConsumerMemberAssignment()
		a.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: b.names.Ticker, Partitions: ps}}
		return a.AppendTo(nil)
	}
	b.cluster.ControlKey(int16(kmsg.DescribeGroups), func(req kmsg.Request) (kmsg.Response, error, bool) {
		b.cluster.KeepControl()
		r := req.(*kmsg.DescribeGroupsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.State, rg.ProtocolType = g, "Stable", "consumer"
			for i, ps := range [][]int32{{0, 2}, {1}} {
				m := kmsg.NewDescribeGroupsResponseGroupMember()
				m.MemberID, m.ClientID, m.ClientHost = fmt.Sprintf("m%d", i), fmt.Sprintf("c%d", i), "h"
				m.MemberAssignment = assignment(ps...)
				rg.Members = append(rg.Members, m)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	rep, err := Collect(b.ctx, b.opts, b.names, "st", Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range rep.Leaders {
		got = append(got, fmt.Sprintf("%d:%s", l.Partition, l.MemberID))
	}
	if want := "0:m0 1:m1 2:m0"; strings.Join(got, " ") != want || rep.Replicas != 2 {
		t.Errorf("leaders %v, replicas %d; want %s, 2", got, rep.Replicas, want)
	}
}
