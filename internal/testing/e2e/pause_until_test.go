package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// TestE2EPauseUntilAcrossFailover: a schedule every second is paused until an instant 6 s ahead, inside the
// leader's 10 s lead (its slots up to then were emitted before the pause), with a reason; 2 s later the leader
// is killed with kill -9. No slot between the pause and its end runs; from the end on, every slot runs once, the
// first within 2 s of its slot, as a resume at that instant would run them; the slots emitted before the pause
// for after its end were not cancelled. The change log and the schedule show the reason.
func TestE2EPauseUntilAcrossFailover(t *testing.T) {
	e := setup(t)
	f := e.f
	f.cli("schedule", "put", "beat", "--every", "1s")
	a, b := f.ticker("a"), f.ticker("b")
	e.start(nil, "--exec", handlerBin)
	waitFor(t, 60*time.Second, "beat running", func() (bool, string) {
		n := 0
		for id := range e.executions() {
			if strings.HasPrefix(id, "beat@") {
				n++
			}
		}
		return n >= 12, ""
	})
	leader := leaderOf(t, 30*time.Second, a, b)

	until := time.Now().Add(6 * time.Second).Truncate(time.Second).Add(time.Second)
	out := f.cli("schedule", "pause", "beat", "--until", until.Format(time.RFC3339), "--reason", "nightly DB vacuum")
	pausedAt := time.Now()
	if !strings.Contains(out, "paused until "+until.UTC().Format(time.RFC3339)) {
		t.Fatalf("pause printed %q", out)
	}
	time.Sleep(2 * time.Second) // the fault's timing, not a wait for a condition
	leader.signal(syscall.SIGKILL)
	t.Logf("paused at %s until %s; killed leader %s", pausedAt.Format("15:04:05.000"), until.Format(time.TimeOnly), leader.name)

	check := until.Add(6 * time.Second)
	waitFor(t, 60*time.Second, "the slots after the pause's end", func() (bool, string) {
		return len(e.executions()[tick.ID("beat", check, 0, 1)]) > 0, ""
	})
	ex := e.executions()
	for id, xs := range ex {
		slot, ok := slotOf(id)
		if !ok || !strings.HasPrefix(id, "beat@") {
			continue
		}
		if slot.After(pausedAt.Add(time.Second)) && slot.Before(until) {
			t.Errorf("slot %s ran, inside the pause (%s to %s)", slot.Format(time.TimeOnly), pausedAt.Format("15:04:05.000"), until.Format(time.TimeOnly))
		}
		if len(xs) != 1 {
			t.Errorf("slot %s ran %d times", slot.Format(time.TimeOnly), len(xs))
		}
	}
	for s := until; !s.After(check); s = s.Add(time.Second) {
		xs := ex[tick.ID("beat", s, 0, 1)]
		if len(xs) != 1 {
			t.Errorf("slot %s, at or after the pause's end, ran %d times, want once", s.Format(time.TimeOnly), len(xs))
			continue
		}
		if s.Equal(until) {
			d := xs[0].start.Sub(s)
			t.Logf("the first slot after the pause started %v after it", d.Round(time.Millisecond))
			if d > 2*time.Second {
				t.Errorf("the first slot after the pause started %v late, want within 2s", d)
			}
		}
	}
	if out := f.cli("schedule", "log", "beat"); !strings.Contains(out, `"nightly DB vacuum"`) || !strings.Contains(out, "pause") {
		t.Errorf("the change log lacks the pause and its reason:\n%s", out)
	}
	// The end has passed: list says the pause ended, with its reason.
	if out := f.cli("schedule", "list"); !strings.Contains(out, `ended `+until.UTC().Format(time.RFC3339)+` (running again): "nightly DB vacuum"`) {
		t.Errorf("list lacks the pause's end and reason:\n%s", out)
	}
}
