package dispatch

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/leaderstate"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

func entry(t testing.TB, spec schedule.Spec, updated time.Time) store.Entry {
	t.Helper()
	s, err := spec.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return store.Entry{Schedule: s, Version: 1, UpdatedAt: updated}
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// TestPlannerEmitsEachSlotOnce drives the planner over simulated time: every slot once, in order, and a
// restart from the stored state continues without a gap or a repeat.
func TestPlannerEmitsEachSlotOnce(t *testing.T) {
	t.Parallel()
	spec := schedule.Spec{Name: "a", Every: schedule.Duration(time.Second), Catchup: "all"}
	entries := map[string]store.Entry{"a": entry(t, spec, t0)}
	p := newPlanner(entries, nil, 0)
	var got []time.Time
	now := t0
	for range 10 {
		at, ok := p.nextWake()
		if !ok {
			t.Fatal("no wake-up")
		}
		now = at
		for _, em := range p.collect(&batch{}, now, 100) {
			got = append(got, em.slots...)
		}
	}
	// A new term restarts from the stored state, 5 s later: catch-up all emits the 5 missed slots.
	state := map[string]stored{"a": {LastSlot: got[len(got)-1]}}
	p = newPlanner(entries, state, 0)
	for _, em := range p.collect(&batch{}, now.Add(5*time.Second), 100) {
		got = append(got, em.slots...)
	}
	for i, s := range got {
		if want := t0.Add(time.Duration(i+1) * time.Second); !s.Equal(want) {
			t.Fatalf("slot %d = %s, want %s (all: %v)", i, s, want, got)
		}
	}
	if len(got) != 15 {
		t.Fatalf("emitted %d slots, want 15", len(got))
	}
}

// TestPlannerChange: a changed schedule never catches up slots from before the change, and a deleted one
// stops.
func TestPlannerChange(t *testing.T) {
	t.Parallel()
	spec := schedule.Spec{Name: "a", Every: schedule.Duration(time.Second), Catchup: "all"}
	p := newPlanner(map[string]store.Entry{"a": entry(t, spec, t0)}, nil, 0)
	p.collect(&batch{}, t0.Add(3*time.Second), 10)
	// Changed at t0+10s to every 2s, seen at t0+12.5s: slots from t0+11s only.
	spec.Every = schedule.Duration(2 * time.Second)
	p.set("a", entry(t, spec, t0.Add(10*time.Second)), time.Time{})
	ems := p.collect(&batch{}, t0.Add(12500*time.Millisecond), 10)
	if len(ems) != 1 || len(ems[0].slots) != 1 || !ems[0].slots[0].Equal(t0.Add(12*time.Second)) {
		t.Fatalf("after the change: %+v, want the one slot t0+12s", ems)
	}
	p.remove("a", t0.Add(12500*time.Millisecond))
	if at, ok := p.nextWake(); ok {
		t.Fatalf("deleted schedule still due at %s", at)
	}
}

// TestPlannerLead: slots are emitted lead before they are due; a change inside the emitted window applies from
// the first slot after it; a schedule deleted and created again inside the window never emits one of its slots
// twice, and its grave is buried once they are past.
func TestPlannerLead(t *testing.T) {
	t.Parallel()
	const lead = 10 * time.Second
	spec := schedule.Spec{Name: "a", Every: schedule.Duration(time.Second), Catchup: "all"}
	p := newPlanner(map[string]store.Entry{"a": entry(t, spec, t0)}, nil, lead)
	var got []time.Time
	emit := func(now time.Time) {
		for _, em := range p.collect(&batch{}, now, 100) {
			got = append(got, em.slots...)
		}
	}
	// The first plan, at t0+0.5s, emits every slot up to t0+10.5s.
	emit(t0.Add(500 * time.Millisecond))
	if len(got) != 10 || !got[9].Equal(t0.Add(10*time.Second)) {
		t.Fatalf("first plan: %v, want t0+1s..t0+10s", fmtSlots(got))
	}
	// It wakes for the next slot lead before it is due.
	if at, _ := p.nextWake(); !at.Equal(t0.Add(11*time.Second - lead)) {
		t.Fatalf("next wake %s, want slot t0+11s minus lead", at)
	}
	emit(t0.Add(time.Second))
	// A change at t0+1.5s: the slots emitted (up to t0+11s) stay; the new definition starts after them.
	spec.Every = schedule.Duration(2 * time.Second)
	p.set("a", entry(t, spec, t0.Add(1500*time.Millisecond)), time.Time{})
	got = got[:0]
	emit(t0.Add(3 * time.Second))
	if len(got) == 0 || !got[0].After(t0.Add(11*time.Second)) {
		t.Fatalf("after a change inside the window: %v, want slots after t0+11s only", fmtSlots(got))
	}
	last := got[len(got)-1]
	// Deleted at t0+4s with slots ahead: a grave until they are past.
	now := t0.Add(4 * time.Second)
	if !p.remove("a", now) {
		t.Fatal("remove: no slots ahead reported")
	}
	if buried := p.buried(now); len(buried) != 0 {
		t.Fatalf("buried %v before its slots passed", buried)
	}
	// Created again at t0+5s: it continues after the last slot emitted before the deletion.
	p.set("a", entry(t, spec, t0.Add(5*time.Second)), time.Time{})
	got = got[:0]
	emit(t0.Add(6 * time.Second))
	if len(got) == 0 || !got[0].After(last) {
		t.Fatalf("created again: %v, want slots after %s", fmtSlots(got), last)
	}
	// Deleted again and never created: buried once its last slot is past.
	last = got[len(got)-1]
	p.remove("a", t0.Add(7*time.Second))
	at, ok := p.nextGrave()
	if !ok || at.Before(last) || !at.Before(last.Add(2*time.Second)) {
		t.Fatalf("next grave %v %v, want between its last slot %s and the next", at, ok, last)
	}
	if buried := p.buried(at.Add(-time.Millisecond)); len(buried) != 0 {
		t.Fatalf("buried %v early", buried)
	}
	if buried := p.buried(at); len(buried) != 1 || buried[0] != "a" {
		t.Fatalf("buried %v at its grave's time, want [a]", buried)
	}
}

// TestCollectInGroups: collect takes due entries in groups (and the records read the names in groups); cut
// by max anywhere, across stale heap entries of changed schedules, and into two batches used in turn, every
// slot of every schedule is emitted once and in order, each emission carries its definition's fields, and an
// emission's slots stay as they were while the other batch is collected.
func TestCollectInGroups(t *testing.T) {
	t.Parallel()
	const n, lead = 300, 2 * time.Second
	entries := make(map[string]store.Entry, n)
	for i := range n {
		spec := schedule.Spec{Name: fmt.Sprintf("s%03d", i), Every: schedule.Duration(time.Duration(1+i%3) * time.Second), Catchup: "all"}
		if i%5 == 0 {
			spec.Jitter = schedule.Duration(700 * time.Millisecond)
		}
		if i%7 == 0 {
			spec.Shards, spec.Payload, spec.Deadline = 3, "p", schedule.Duration(time.Minute)
		}
		entries[spec.Name] = entry(t, spec, t0)
	}
	p := newPlanner(entries, nil, lead)
	last := map[string]time.Time{}
	counts := map[string]int{}
	var batches [2]batch
	var held []emission // the previous collect's emissions, from the other batch
	var heldSlots [][]time.Time
	collects := 0
	end := t0.Add(20 * time.Second)
	for step, now := 0, t0; now.Before(end); step, now = step+1, now.Add(250*time.Millisecond) {
		if step == 20 { // stale heap entries: every tenth schedule changed twice, its definition the same
			for i := 0; i < n; i += 10 {
				name := fmt.Sprintf("s%03d", i)
				p.set(name, entries[name], time.Time{})
				p.set(name, entries[name], time.Time{})
			}
		}
		for {
			max := []int{1, 7, 31, 32, 33, 1000}[step%6]
			ems := p.collect(&batches[collects%2], now, max)
			collects++
			for i, em := range held {
				if !slices.Equal(em.slots, heldSlots[i]) {
					t.Fatalf("an emission of the other batch changed: %v, was %v", em.slots, heldSlots[i])
				}
			}
			if len(ems) > max {
				t.Fatalf("%d emissions, max %d", len(ems), max)
			}
			held, heldSlots = ems, nil
			for _, em := range ems {
				e := entries[em.name()]
				sc := e.Schedule
				want := tick.Source{Schedule: sc.Name(), Shards: sc.Shards(), Payload: sc.Payload(), Version: e.Version, Deadline: sc.Deadline(), Overlap: sc.Overlap()}
				if em.src != want || em.metrics != sc.Metrics() {
					t.Fatalf("emission of %s: %+v, want %+v", em.name(), em.src, want)
				}
				for _, slot := range em.slots {
					if !em.due(slot).Equal(sc.Due(slot)) {
						t.Fatalf("%s: due %s, want %s", em.name(), em.due(slot), sc.Due(slot))
					}
					if want := sc.Next(last[em.name()]); !last[em.name()].IsZero() && !slot.Equal(want) {
						t.Fatalf("%s: slot %s after %s, want %s", em.name(), slot, last[em.name()], want)
					}
					if sc.Due(slot).After(now.Add(lead)) {
						t.Fatalf("%s: slot %s due after now+lead", em.name(), slot)
					}
					last[em.name()] = slot
					counts[em.name()]++
				}
				heldSlots = append(heldSlots, slices.Clone(em.slots))
			}
			if len(ems) < max {
				break
			}
		}
	}
	// Every slot due by the end plus lead, once: the first after t0 up to the last.
	for name, e := range entries {
		want := 0
		for s := e.Schedule.Next(t0); !e.Schedule.Due(s).After(end.Add(-250*time.Millisecond + lead)); s = e.Schedule.Next(s) {
			want++
		}
		if counts[name] != want {
			t.Errorf("%s: %d slots, want %d", name, counts[name], want)
		}
	}
}

func fmtSlots(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, s := range ts {
		out[i] = s.Sub(t0).String()
	}
	return out
}

func TestAppendRecords(t *testing.T) {
	t.Parallel()
	spec := schedule.Spec{Name: "scan", Every: schedule.Duration(30 * time.Second), Shards: 4, Payload: "p", Deadline: schedule.Duration(5 * time.Second)}
	ems := []emission{newEmission(&item{entry: entry(t, spec, t0)}, []time.Time{t0.Add(30 * time.Second)}, 0)}
	recs := appendRecords(&batch{}, ems, recordTopics{work: "w", ticker: "t"}, 12, term{producerID: 9, epoch: 3}, t0, t0)
	if len(recs) != 5 {
		t.Fatalf("%d records, want 4 ticks + 1 state", len(recs))
	}
	parts := map[int32]bool{}
	for i, r := range recs[:4] {
		tk, err := tick.Decode(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Key) != tk.ID || tk.Shard != i || tk.Shards != 4 || tk.LeaderEpoch != 3 || tk.Deadline == nil || tk.Payload != "p" {
			t.Errorf("record %d: key %s, tick %+v", i, r.Key, tk)
		}
		parts[r.Partition] = true
	}
	if len(parts) != 4 {
		t.Errorf("4 shards on %d partitions, want 4 distinct", len(parts))
	}
	st, err := leaderstate.DecodeState(recs[4].Value)
	if err != nil || recs[4].Topic != "t" || string(recs[4].Key) != "scan" || !st.LastSlot.Equal(t0.Add(30*time.Second)) {
		t.Errorf("state record %s=%s: %+v %v", recs[4].Key, recs[4].Value, st, err)
	}
}

// The records of a planner's emissions, slot after slot: each tick on its schedule's partition (tick.Partition,
// what the workers and the audit compute; the leader keeps each name's hash after its first record), and every
// record stamped with the instant the batch was made (the ticks carry their emission instant).
func TestAppendRecordsPartitionsOverSlots(t *testing.T) {
	t.Parallel()
	const parts = 7
	entries := map[string]store.Entry{}
	shards := 0
	for i := range 50 {
		spec := schedule.Spec{Name: fmt.Sprintf("part-%d-%s", i, strings.Repeat("x", i)), Every: schedule.Duration(time.Second), Shards: 1 + i%4}
		entries[spec.Name] = entry(t, spec, t0)
		shards += spec.Shards
	}
	p := newPlanner(entries, nil, 0)
	var b batch
	seen := 0
	for now := t0.Add(time.Second); now.Before(t0.Add(4 * time.Second)); now = now.Add(time.Second) {
		ems := p.collect(&b, now, 1000)
		for _, r := range appendRecords(&b, ems, recordTopics{work: "w", ticker: "t"}, parts, term{1, 1, 0}, now, now.Add(time.Millisecond)) {
			if !r.Timestamp.Equal(now.Add(time.Millisecond)) {
				t.Fatalf("%s: timestamp %v, want the batch's %v", r.Key, r.Timestamp, now.Add(time.Millisecond))
			}
			if r.Topic != "w" {
				continue
			}
			tk, err := tick.Decode(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			if want := tick.Partition(tk.Schedule, tk.Shard, parts); r.Partition != want {
				t.Errorf("%s: partition %d, want %d", r.Key, r.Partition, want)
			}
			seen++
		}
	}
	if want := 3 * shards; seen != want {
		t.Errorf("%d ticks over three slots, want %d", seen, want)
	}
}

// BenchmarkEmissionLoop measures the leader's work per due instant without a broker: 100,000 schedules due
// at the same second, planned and turned into records (ticks and state), as one term does each second.
func BenchmarkEmissionLoop(b *testing.B) { benchmarkEmissionLoop(b, 100_000) }

// BenchmarkEmissionLoop1M is BenchmarkEmissionLoop at a million schedules, whose items, definitions and names no
// longer fit the processor's caches: a one-slot burst at 1M waits on memory more than the 100,000 above.
func BenchmarkEmissionLoop1M(b *testing.B) { benchmarkEmissionLoop(b, 1_000_000) }

func benchmarkEmissionLoop(b *testing.B, n int) {
	entries := make(map[string]store.Entry, n)
	for i := range n {
		name := fmt.Sprintf("sched-%06d", i)
		entries[name] = entry(b, schedule.Spec{Name: name, Every: schedule.Duration(time.Second)}, t0)
	}
	p := newPlanner(entries, nil, 0)
	topics := recordTopics{work: "w", ticker: "t"}
	now := t0
	var buf batch
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		now = now.Add(time.Second)
		total := 0
		for {
			ems := p.collect(&buf, now, 5000)
			if len(ems) == 0 {
				break
			}
			total += len(appendRecords(&buf, ems, topics, 12, term{1, 1, 0}, now, now))
		}
		if total != 2*n {
			b.Fatalf("%d records, want %d", total, 2*n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/schedule")
}

// BenchmarkPlannerBuild: a term's planner from a million schedules without state (a cold start), the part of
// the term start that grows with the schedules.
func BenchmarkPlannerBuild(b *testing.B) {
	const n = 1_000_000
	entries := make(map[string]store.Entry, n)
	for i := range n {
		name := fmt.Sprintf("load-%07d", i)
		entries[name] = entry(b, schedule.Spec{Name: name, Every: schedule.Duration(time.Minute), Offset: schedule.Duration(time.Duration(i%60) * time.Second)}, t0)
	}
	b.ReportAllocs()
	for b.Loop() {
		p := newPlanner(entries, nil, 10*time.Second)
		if p.len() != n {
			b.Fatal(p.len())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/schedule")
}

// BenchmarkPlannerBuildWithState: the same with a state for every schedule, as a takeover starts (the state
// read from the ticker topic).
func BenchmarkPlannerBuildWithState(b *testing.B) {
	const n = 1_000_000
	entries := make(map[string]store.Entry, n)
	state := make(map[string]stored, n)
	for i := range n {
		name := fmt.Sprintf("load-%07d", i)
		entries[name] = entry(b, schedule.Spec{Name: name, Every: schedule.Duration(time.Minute), Offset: schedule.Duration(time.Duration(i%60) * time.Second)}, t0)
		state[name] = stored{LastSlot: t0.Add(time.Duration(i%60) * time.Second), ScheduleVersion: 1}
	}
	b.ReportAllocs()
	for b.Loop() {
		p := newPlannerFrom(n, maps.All(entries), state, 10*time.Second, nil)
		if p.len() != n {
			b.Fatal(p.len())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/schedule")
}

// The term start's checks get, from the planner built from a state, what they would find by looking every
// schedule and every state up again: the schedules without a state, and the states of schedules it does not
// hold or that are paused. Also after checkState's recoveries add states.
func TestPlannerStartChecks(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name              string
		orphans, recovers int
	}{
		{"every state has its schedule", 0, 0},
		{"states of deleted schedules", 3, 0},
		{"recovered states added", 0, 2},
		{"both", 2, 2},
		{"no state at all", -1, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			entries := map[string]store.Entry{}
			state := map[string]stored{}
			for i := range 40 {
				name := fmt.Sprintf("s%02d", i)
				entries[name] = entry(t, schedule.Spec{Name: name, Every: schedule.Duration(time.Minute), Paused: i%5 == 0}, t0)
				if i%3 != 0 && tt.orphans >= 0 {
					state[name] = stored{LastSlot: t0.Add(time.Minute), ScheduleVersion: 1}
				}
			}
			for i := range max(tt.orphans, 0) {
				state[fmt.Sprintf("gone-%d", i)] = stored{LastSlot: t0, ScheduleVersion: 1}
			}
			p := newPlanner(entries, state, 0)
			added := 0
			for name, e := range entries { // checkState's recoveries: running schedules without a state get one
				if _, ok := state[name]; !ok && !e.Schedule.Paused() && added < tt.recovers {
					state[name] = stored{LastSlot: t0, ScheduleVersion: 1}
					added++
				}
			}
			var without, wantWithout []string
			for name := range p.withoutState(state) {
				without = append(without, name)
			}
			for name := range entries {
				if _, ok := state[name]; !ok {
					wantWithout = append(wantWithout, name)
				}
			}
			slices.Sort(without)
			slices.Sort(wantWithout)
			if !slices.Equal(without, wantWithout) {
				t.Errorf("withoutState = %v, want %v", without, wantWithout)
			}
			checked := map[string]bool{}
			for name, st := range p.stateToCheck(state, added) {
				if st != state[name] {
					t.Errorf("stateToCheck: %s = %+v, want %+v", name, st, state[name])
				}
				checked[name] = true
			}
			for name := range state {
				e, ok := entries[name]
				if need := !ok || e.Schedule.Paused(); need && !checked[name] {
					t.Errorf("stateToCheck left out %s (a schedule held: %v)", name, ok)
				}
			}
			if tt.orphans == 0 {
				for name := range checked {
					if !entries[name].Schedule.Paused() {
						t.Errorf("stateToCheck yielded %s, a running schedule, with every state's schedule held", name)
					}
				}
			}
		})
	}
}
