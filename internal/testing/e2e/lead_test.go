package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// slotOf returns the slot in a scheduled tick ID (<schedule>@<RFC 3339>[#shard]); ok is false for a trigger.
func slotOf(id string) (time.Time, bool) {
	_, rest, ok := strings.Cut(id, "@")
	if !ok || strings.Contains(rest, "~trigger-") {
		return time.Time{}, false
	}
	rest, _, _ = strings.Cut(rest, "#")
	t, err := time.Parse(time.RFC3339Nano, rest)
	return t, err == nil
}

// TestE2ELeadWindow: the real ticker emits every slot --lead (8 s) ahead, the real worker starts each tick on
// its instant (never before it), and changes inside the window behave as the README says:
//   - pause and delete: no slot due more than 1 s after the command returned runs, although its ticks were
//     emitted before the command;
//   - change: every slot runs once, under one version; the new version applies after the emitted window;
//   - a manual trigger runs at once, not behind the held ticks of its partition;
//   - the untouched schedule runs every slot once.
func TestE2ELeadWindow(t *testing.T) {
	e := setup(t)
	f := e.f
	const lead = 8 * time.Second
	for _, name := range []string{"keep", "pausee", "deletee", "changee"} {
		f.cli("schedule", "put", name, "--every", "1s", "--catchup", "all", "--payload", "v1")
	}
	ticks := f.collect()
	f.ticker("a", "--lead", lead.String())
	e.start(nil, "--exec", handlerBin)

	// Ticks flow and are held: wait until a few have run and the window is full.
	waitFor(t, 60*time.Second, "keep running", func() (bool, string) {
		n := len(e.executions())
		return n >= 12, ""
	})
	time.Sleep(2 * time.Second)

	f.cli("schedule", "pause", "pausee")
	pausedAt := time.Now()
	f.cli("schedule", "delete", "deletee")
	deletedAt := time.Now()
	f.cli("schedule", "put", "changee", "--every", "1s", "--catchup", "all", "--payload", "v2")
	changedAt := time.Now()
	out := f.cli("schedule", "trigger", "keep")
	triggeredAt := time.Now()
	trigID := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out), "triggered "))

	// The window passes, and some more.
	time.Sleep(lead + 4*time.Second)
	end := time.Now()

	ex := e.executions()
	emitted := map[string]map[string]int{} // schedule -> tick ID -> records
	versions := map[string]map[time.Time]map[int64]bool{}
	ticks.mu.Lock()
	all := append([]seen(nil), ticks.ticks...)
	ticks.mu.Unlock()
	for _, s := range all {
		tk := s.tick
		if emitted[tk.Schedule] == nil {
			emitted[tk.Schedule] = map[string]int{}
			versions[tk.Schedule] = map[time.Time]map[int64]bool{}
		}
		emitted[tk.Schedule][tk.ID]++
		if versions[tk.Schedule][tk.Slot] == nil {
			versions[tk.Schedule][tk.Slot] = map[int64]bool{}
		}
		versions[tk.Schedule][tk.Slot][tk.ScheduleVersion] = true
		if tk.NotBefore == nil && !tk.Trigger {
			t.Errorf("tick %s has no not_before", tk.ID)
		}
	}

	// Every execution: at most one per tick, never before its instant, close after it.
	late := 0
	for id, xs := range ex {
		if len(xs) != 1 {
			t.Errorf("tick %s ran %d times", id, len(xs))
		}
		slot, ok := slotOf(id)
		if !ok {
			continue
		}
		if d := xs[0].start.Sub(slot); d < -5*time.Millisecond {
			t.Errorf("tick %s started %v before its slot", id, -d)
		} else if d > 2*time.Second {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d ticks started more than 2 s after their slot (no faults)", late)
	}

	// Pause and delete: ticks were emitted for slots after the command, and none of those 1 s later ran.
	for _, c := range []struct {
		name string
		at   time.Time
	}{{"pausee", pausedAt}, {"deletee", deletedAt}} {
		ahead := 0
		for id := range emitted[c.name] {
			if slot, ok := slotOf(id); ok && slot.After(c.at.Add(time.Second)) {
				ahead++
			}
		}
		if ahead == 0 {
			t.Errorf("%s: no tick was emitted ahead of the command: the test did not exercise the window", c.name)
		}
		ran := 0
		for id := range ex {
			if !strings.HasPrefix(id, c.name+"@") {
				continue
			}
			if slot, ok := slotOf(id); ok && slot.After(c.at.Add(time.Second)) {
				t.Errorf("%s: slot %s ran, due more than 1 s after the command returned at %s", c.name, slot.Format(time.TimeOnly), c.at.Format("15:04:05.000"))
			} else {
				ran++
			}
		}
		t.Logf("%s: %d slots ran before the command; %d ticks emitted ahead for slots more than 1 s after it, none ran", c.name, ran, ahead)
	}

	// Change: one version per slot, every slot once from the first to the last that ran, the new version last.
	var first, last time.Time
	for id := range ex {
		if slot, ok := slotOf(id); ok && strings.HasPrefix(id, "changee@") {
			if first.IsZero() || slot.Before(first) {
				first = slot
			}
			if slot.After(last) {
				last = slot
			}
		}
	}
	for slot := first; !slot.After(last); slot = slot.Add(time.Second) {
		id := tick.ID("changee", slot, 0, 1)
		if len(ex[id]) != 1 {
			t.Errorf("changee: slot %s ran %d times, want once", slot.Format(time.TimeOnly), len(ex[id]))
		}
		if n := len(versions["changee"][slot]); n > 1 {
			t.Errorf("changee: slot %s emitted under %d versions", slot.Format(time.TimeOnly), n)
		}
	}
	if !last.After(changedAt.Add(lead)) {
		t.Errorf("changee: last slot run %s, want slots after the window (change at %s)", last.Format(time.TimeOnly), changedAt.Format(time.TimeOnly))
	}
	vs := versions["changee"][last]
	vfirst := versions["changee"][first]
	for v := range vs {
		if vfirst[v] {
			t.Errorf("changee: the last slot %s has the first slot's version %d: the change never applied", last.Format(time.TimeOnly), v)
		}
	}

	// Keep: every slot once, in the work topic and in the handler log.
	var keepTicks []seen
	for _, s := range ticks.of("keep") {
		if !s.tick.Trigger {
			keepTicks = append(keepTicks, s)
		}
	}
	checkSequence(t, keepTicks, time.Second)
	keepRan := 0
	for id := range ex {
		if slot, ok := slotOf(id); ok && strings.HasPrefix(id, "keep@") && slot.Before(end.Add(-2*time.Second)) {
			keepRan++
		}
	}
	t.Logf("keep: %d slots ran", keepRan)

	// The trigger ran at once, not behind the held ticks of its partition.
	xs := ex[trigID]
	if len(xs) != 1 {
		t.Fatalf("trigger %s ran %d times, want once (output %q)", trigID, len(xs), out)
	}
	if d := xs[0].start.Sub(triggeredAt); d > 3*time.Second {
		t.Errorf("trigger started %v after the command returned, want well under the %v lead", d, lead)
	} else {
		t.Logf("trigger started %v after the command returned", d.Round(time.Millisecond))
	}
}
