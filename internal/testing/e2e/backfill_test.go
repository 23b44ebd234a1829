package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// backfillRuns returns, per slot, the executions of backfill id's ticks in ex.
func backfillRuns(ex map[string][]*execution, schedule, id string) map[time.Time][]*execution {
	out := map[time.Time][]*execution{}
	prefix, suffix := schedule+"@", "~backfill-"+id
	for tid, xs := range ex {
		rest, ok := strings.CutPrefix(tid, prefix)
		if !ok || !strings.HasSuffix(rest, suffix) {
			continue
		}
		slot, err := time.Parse(time.RFC3339Nano, strings.TrimSuffix(rest, suffix))
		if err == nil {
			out[slot.UTC()] = append(out[slot.UTC()], xs...)
		}
	}
	return out
}

// dryRunSlots parses the output of schedule backfill --dry-run into the slots it says run and those it skips.
func dryRunSlots(t *testing.T, out string) (run, skip []time.Time) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			continue
		}
		slot, err := time.Parse(time.RFC3339, f[0])
		if err != nil {
			t.Fatalf("dry run line %q: %v", line, err)
		}
		if f[1] == "run" {
			run = append(run, slot.UTC())
		} else {
			skip = append(skip, slot.UTC())
		}
	}
	return run, skip
}

var backfillIDRe = regexp.MustCompile(`backfill (\S+) requested`)

// requestBackfill runs schedule backfill with args and returns the backfill's ID.
func requestBackfill(t *testing.T, f *fleet, args ...string) string {
	t.Helper()
	out := f.cli(append([]string{"schedule", "backfill"}, args...)...)
	m := backfillIDRe.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("schedule backfill printed %q", out)
	}
	return m[1]
}

// sameWorkPartition returns a schedule name whose ticks share the work partition of schedule's.
func sameWorkPartition(schedule string, parts int) string {
	want := tick.Partition(schedule, 0, parts)
	for i := 0; ; i++ {
		if n := fmt.Sprintf("nb-%d", i); tick.Partition(n, 0, parts) == want && n != schedule {
			return n
		}
	}
}

// TestE2EBackfillAcrossFailover: a schedule every second (bf) gets a backfill of the 100 slots before it was
// created; its leader is killed with kill -9 once a third of them ran. Every run takes 100 ms. Every slot of the backfill runs exactly
// once, exactly the slots its dry run listed, one at a time (max-running 1), and the list says it is done.
// Meanwhile bf's live slots, a control schedule's and a neighbour's on the same work partition each run once,
// and bf's and the neighbour's start within 0.3 s of the control's start delay, slot by slot.
func TestE2EBackfillAcrossFailover(t *testing.T) {
	e := setup(t)
	f := e.f
	nb := sameWorkPartition("bf", e.parts)
	for _, name := range []string{"bf", "ctl", nb} {
		f.cli("schedule", "put", name, "--every", "1s")
	}
	created := time.Now().Truncate(time.Second)
	a, b := f.ticker("a"), f.ticker("b")
	e.start([]string{"HANDLER_SLEEP=100ms"}, "--exec", handlerBin)
	waitFor(t, 60*time.Second, "bf running", func() (bool, string) {
		return len(e.executions()[tick.ID("bf", created.Add(5*time.Second), 0, 1)]) > 0, ""
	})
	leader := leaderOf(t, 30*time.Second, a, b)

	from, to := created.Add(-110*time.Second), created.Add(-10*time.Second)
	args := []string{"bf", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}
	planned, skipped := dryRunSlots(t, f.cli(append([]string{"schedule", "backfill", "--dry-run"}, args...)...))
	if len(planned) != 100 || len(skipped) != 0 {
		t.Fatalf("dry run: %d slots to run, %d skipped; want the 100 slots before the schedule, none skipped", len(planned), len(skipped))
	}
	id := requestBackfill(t, f, append(args, "--reason", "e2e")...)
	started := time.Now()
	if out := f.cli("status", "bf"); !strings.Contains(out, id+" of bf") {
		t.Errorf("status bf does not show the backfill under way:\n%s", out)
	}

	waitFor(t, 60*time.Second, "a third of the backfill", func() (bool, string) {
		n := len(backfillRuns(e.executions(), "bf", id))
		return n >= 33, fmt.Sprintf("%d slots ran", n)
	})
	leader.signal(syscall.SIGKILL)
	killed := time.Now()
	waitFor(t, 120*time.Second, "the whole backfill", func() (bool, string) {
		n := len(backfillRuns(e.executions(), "bf", id))
		return n >= 100, fmt.Sprintf("%d slots ran", n)
	})
	waitFor(t, 30*time.Second, "the backfill listed as done", func() (bool, string) {
		out := f.cli("schedule", "backfill", "--list")
		return strings.Contains(out, id) && strings.Contains(out, " done "), out
	})
	finished := time.Now()
	t.Logf("backfill %s: 100 slots in %v, leader %s killed after %v", id, finished.Sub(started).Round(time.Millisecond), leader.name,
		killed.Sub(started).Round(time.Millisecond))

	ex := e.executions()
	runs := backfillRuns(ex, "bf", id)
	var ran []time.Time
	for slot, xs := range runs {
		ran = append(ran, slot)
		if len(xs) != 1 {
			t.Errorf("backfill slot %s ran %d times, want once", slot.Format(time.TimeOnly), len(xs))
		}
	}
	slices.SortFunc(ran, time.Time.Compare)
	if !slices.EqualFunc(ran, planned, time.Time.Equal) {
		t.Errorf("the backfill ran %d slots, not the %d its dry run listed", len(ran), len(planned))
	}
	// max-running 1: no two runs of the backfill overlapped, and they ran in slot order.
	var prev *execution
	for _, slot := range ran {
		x := runs[slot][0]
		if prev != nil && x.start.Before(prev.last) {
			t.Errorf("backfill slot %s started before the run of the slot before it ended", slot.Format(time.TimeOnly))
		}
		prev = x
	}

	// The live slots during the backfill: each once, within 0.3 s of the control's delay.
	worst := map[string]time.Duration{}
	for s := started.Truncate(time.Second).Add(time.Second); s.Before(finished); s = s.Add(time.Second) {
		ctl := ex[tick.ID("ctl", s, 0, 1)]
		for _, name := range []string{"bf", "ctl", nb} {
			xs := ex[tick.ID(name, s, 0, 1)]
			if len(xs) != 1 {
				t.Errorf("live slot %s of %s ran %d times, want once", s.Format(time.TimeOnly), name, len(xs))
				continue
			}
			if len(ctl) != 1 {
				continue
			}
			d := xs[0].start.Sub(s) - ctl[0].start.Sub(s)
			worst[name] = max(worst[name], d)
			if d > 300*time.Millisecond {
				t.Errorf("live slot %s of %s started %v later than the control's", s.Format(time.TimeOnly), name, d.Round(time.Millisecond))
			}
		}
	}
	t.Logf("live slots during the backfill, worst start delay beyond the control's: bf %v, neighbour %s %v", worst["bf"].Round(time.Millisecond), nb,
		worst[nb].Round(time.Millisecond))
	// The audit counts the backfill's ticks apart from the schedules' slots, and finds nothing missing or doubled.
	rep, code := runAudit(t, f, "--to", finished.Add(-5*time.Second).Format(time.RFC3339))
	bfTicks := 0
	for _, x := range rep.Backfills {
		if strings.HasSuffix(x.ID, "~backfill-"+id) {
			bfTicks++
		}
	}
	if code != 0 || !rep.OK || bfTicks != 100 {
		t.Errorf("audit: exit %d, ok %v, %d ticks of the backfill (want 0, true, 100)", code, rep.OK, bfTicks)
	}
	if out := f.cli("schedule", "log", "bf"); !strings.Contains(out, "backfill "+id) || !strings.Contains(out, `"e2e"`) {
		t.Errorf("the change log lacks the backfill:\n%s", out)
	}
}

// TestE2EBackfillReprocess: a schedule whose handler always fails (broken*, one attempt) has failed slots, and
// slots before it was created that never ran. Over a range holding both, the dry run of --reprocess none lists
// only the slots that never ran, failed those and the failed ones, all every slot; a backfill with --reprocess
// failed then runs exactly the slots its dry run listed, each once. A cancelled backfill emits nothing more.
func TestE2EBackfillReprocess(t *testing.T) {
	e := setup(t)
	f := e.f
	f.cli("schedule", "put", "broken-bf", "--every", "1s")
	created := time.Now().Truncate(time.Second)
	f.ticker("a")
	e.start(nil, "--exec", handlerBin, "--max-attempts", "1")
	waitFor(t, 60*time.Second, "failed slots", func() (bool, string) {
		return len(e.executions()[tick.ID("broken-bf", created.Add(6*time.Second), 0, 1)]) > 0, ""
	})
	// The slots that failed must have their outcome written: the one after them has run.
	waitFor(t, 30*time.Second, "outcomes", func() (bool, string) {
		return len(e.executions()[tick.ID("broken-bf", created.Add(8*time.Second), 0, 1)]) > 0, ""
	})
	from, to := created.Add(-5*time.Second), created.Add(6*time.Second)
	args := []string{"schedule", "backfill", "broken-bf", "--from", from.Format(time.RFC3339), "--to", to.Format(time.RFC3339)}
	ex := e.executions()
	var never, failed []time.Time
	for s := from; s.Before(to); s = s.Add(time.Second) {
		if len(ex[tick.ID("broken-bf", s, 0, 1)]) == 0 {
			never = append(never, s.UTC())
		} else {
			failed = append(failed, s.UTC())
		}
	}
	if len(never) < 5 || len(failed) < 5 {
		t.Fatalf("want both slots that never ran and failed ones in the range: %d and %d", len(never), len(failed))
	}
	for _, tc := range []struct {
		reprocess string
		want      []time.Time
	}{
		{"none", never},
		{"failed", append(slices.Clone(never), failed...)},
		{"all", append(slices.Clone(never), failed...)},
	} {
		run, _ := dryRunSlots(t, f.cli(append(args, "--dry-run", "--reprocess", tc.reprocess)...))
		want := slices.SortedFunc(slices.Values(tc.want), time.Time.Compare)
		if !slices.EqualFunc(run, want, time.Time.Equal) {
			t.Errorf("--reprocess %s: the dry run lists %v, want %v", tc.reprocess, run, want)
		}
	}
	id := requestBackfill(t, f, append(args[2:], "--reprocess", "failed", "--max-running", "3")...)
	waitFor(t, 60*time.Second, "the backfill", func() (bool, string) {
		n := len(backfillRuns(e.executions(), "broken-bf", id))
		return n >= len(never)+len(failed), fmt.Sprintf("%d slots ran", n)
	})
	waitFor(t, 30*time.Second, "the backfill listed as done", func() (bool, string) {
		out := f.cli("schedule", "backfill", "--list")
		return strings.Contains(out, id) && strings.Contains(out, " done "), out
	})
	for slot, xs := range backfillRuns(e.executions(), "broken-bf", id) {
		if len(xs) != 1 {
			t.Errorf("backfill slot %s ran %d times, want once", slot.Format(time.TimeOnly), len(xs))
		}
	}

	// A cancelled backfill emits no slot after its cancellation is taken: at most the one running then runs.
	f.cli("schedule", "put", "cancel-bf", "--every", "1s")
	id = requestBackfill(t, f, "cancel-bf", "--from", "10m", "--to", "5m")
	f.cli("schedule", "backfill", "--cancel", id, "--reason", "wrong range")
	var ended time.Time
	waitFor(t, 30*time.Second, "the backfill listed as cancelled", func() (bool, string) {
		out := f.cli("schedule", "backfill", "--list")
		ended = time.Now()
		return strings.Contains(out, id) && strings.Contains(out, " cancelled "), out
	})
	n := len(backfillRuns(e.executions(), "cancel-bf", id))
	later := ended.Truncate(time.Second).Add(3 * time.Second)
	waitFor(t, 30*time.Second, "live slots after the cancellation", func() (bool, string) {
		return len(e.executions()[tick.ID("cancel-bf", later, 0, 1)]) > 0, ""
	})
	if m := len(backfillRuns(e.executions(), "cancel-bf", id)); m > n+1 || n >= 300 {
		t.Errorf("the cancelled backfill ran %d slots when listed as cancelled, %d three slots later (of 300)", n, m)
	}
	t.Logf("the cancelled backfill ran %d of its 300 slots", n)
}
