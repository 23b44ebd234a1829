package status

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/audit"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestTimeline: each pool's minutes count the ticks that started in them (triggers too), the start delay p99 of
// the scheduled ones, and the slots missed; a pool with nothing has its minutes all zero, and nothing before the
// timeline's span counts.
func TestTimeline(t *testing.T) {
	now := at(600) // 10:10:00
	o := Options{Now: now, Window: time.Hour, Grace: 30 * time.Second, Timeline: 5 * time.Minute}.withDefaults()
	f := newLogFixture(t)
	f.put(every("a", 10*time.Second), at(0))
	f.put(schedule.Spec{Name: "b", Every: schedule.Duration(20 * time.Second), Pool: "p2"}, at(0))
	for s := 10; s <= 580; s += 10 {
		delay := 0.5
		switch s {
		case 500:
			continue // never emitted: missed, in 10:08
		case 450:
			delay = 3 // the slowest of 10:07
		}
		start := at(float64(s) + delay)
		record(f.emit("a", at(float64(s)), 0, 1, at(float64(s)), 1), startedAt("w1", 1, start), outcome(ledger.StatusOK, "w1", 1, start.Add(time.Second)))
	}
	// b's slots before 10:05 were missed: before the timeline, they are not in it.
	for s := 300; s <= 580; s += 20 {
		tk := f.emit("b", at(float64(s)), 0, 1, at(float64(s)), 1)
		tk.Pool = "p2"
		record(tk, startedAt("w2", 1, at(float64(s)+0.1)), outcome(ledger.StatusOK, "w2", 1, at(float64(s)+1)))
	}
	// A trigger started in 10:09: a run, with no start delay of a slot.
	trig := &audit.Tick{ID: tick.ID("a", at(545), 0, 1) + "~trigger-x", Schedule: "a", Slot: at(545), Shards: 1, Trigger: true,
		Emissions: []audit.Emission{{EmittedAt: at(545)}}}
	f.l.Ticks[trig.ID] = trig
	record(trig, startedAt("w1", 1, at(546)))

	rep := &Report{Pools: []Pool{{Name: "default"}, {Name: "idle"}, {Name: "p2"}},
		Schedules: []Schedule{{Name: "a", Pool: "default"}, {Name: "b", Pool: "p2"}}}
	runFacts(f.l, f.entries, rep, o)
	got := timeline(f.l, f.entries, rep, o)
	if b := rep.Schedules[1]; len(b.MissedSlots) == 0 || !b.MissedSlots[len(b.MissedSlots)-1].Before(at(300)) {
		t.Fatalf("b's missed slots %v: want some, all before 10:05", b.MissedSlots)
	}

	if len(got) != 3 || got[0].Pool != "default" || got[1].Pool != "idle" || got[2].Pool != "p2" {
		t.Fatalf("pools %+v, want default, idle, p2", got)
	}
	type minute struct {
		runs, missed int
		p99          float64 // -1: none
	}
	want := map[string][]minute{ // 10:05 .. 10:10
		"default": {{6, 0, 0.5}, {6, 0, 0.5}, {6, 0, 3}, {5, 1, 0.5}, {6, 0, 0.5}, {0, 0, -1}},
		"idle":    {{0, 0, -1}, {0, 0, -1}, {0, 0, -1}, {0, 0, -1}, {0, 0, -1}, {0, 0, -1}},
		"p2":      {{3, 0, 0.1}, {3, 0, 0.1}, {3, 0, 0.1}, {3, 0, 0.1}, {3, 0, 0.1}, {0, 0, -1}},
	}
	for _, p := range got {
		if len(p.Minutes) != 6 {
			t.Fatalf("%s: %d minutes, want 6 (10:05 to 10:10)", p.Pool, len(p.Minutes))
		}
		for i, m := range p.Minutes {
			w := want[p.Pool][i]
			p99 := -1.0
			if m.StartDelayP99Seconds != nil {
				p99 = *m.StartDelayP99Seconds
			}
			if !m.At.Equal(at(300+60*float64(i))) || m.Runs != w.runs || m.Missed != w.missed || (p99 < 0) != (w.p99 < 0) || p99-w.p99 > 1e-6 || w.p99-p99 > 1e-6 {
				t.Errorf("%s %s: runs %d missed %d p99 %v, want %+v", p.Pool, m.At.Format(time.TimeOnly), m.Runs, m.Missed, p99, w)
			}
		}
	}
}

// TestTimelineOnlyWhenAsked: ticker status --json carries no timeline unless Options.Timeline asks for one, and
// a timeline is at most MaxTimeline long.
func TestTimelineOnlyWhenAsked(t *testing.T) {
	b, err := json.Marshal(Report{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "timeline") {
		t.Errorf("a report without a timeline has one in its JSON: %s", b)
	}
	f := newLogFixture(t)
	o := Options{Now: at(86400), Window: 24 * time.Hour, Timeline: 24 * time.Hour}.withDefaults()
	got := timeline(f.l, f.entries, &Report{Pools: []Pool{{Name: "default"}}}, o)
	if n := len(got[0].Minutes); n != int(MaxTimeline/time.Minute)+1 {
		t.Errorf("a timeline of a day asked: %d minutes, want %d", n, int(MaxTimeline/time.Minute)+1)
	}
}
