package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leaderstate"
)

// TestTickerOutageCatchup: every replica down for more than 10 s; on restart each catch-up policy does what it
// says. all: every slot of the outage is emitted, once. latest: only the newest missed slot is emitted (late).
// skip: missed slots are dropped. The tickers run with --lead 0: the policies decide about slots that fell due
// while no leader ran, and with a lead the outage would have to outlast it first.
func TestTickerOutageCatchup(t *testing.T) {
	f := newFleet(t)
	f.cli("init")
	f.cli("schedule", "put", "all1", "--every", "1s", "--catchup", "all")
	f.cli("schedule", "put", "latest1", "--every", "1s", "--catchup", "latest")
	f.cli("schedule", "put", "latest10", "--every", "10s", "--catchup", "latest")
	f.cli("schedule", "put", "skip10", "--every", "10s", "--catchup", "skip")
	ticks := f.collect()
	fleet := []*proc{f.ticker("a", "--lead", "0"), f.ticker("b", "--lead", "0"), f.ticker("c", "--lead", "0")}
	leaderOf(t, 30*time.Second, fleet...)

	// Stop the fleet just after a 10 s slot B was emitted, restart it at B+13 s: slot B+10 falls in the outage
	// and is at least 3 s late when the new leader plans it (more than skip's 2 s grace).
	var b time.Time
	kafkatest.Eventually(t, 30*time.Second, "a 10 s slot", func() bool {
		s := ticks.of("skip10")
		if len(s) == 0 {
			return false
		}
		b = s[len(s)-1].tick.Slot
		return time.Since(b) < 2*time.Second
	})
	kafkatest.Eventually(t, 5*time.Second, "slot B of latest10", func() bool { return len(ticks.of("latest10")) > 0 })
	for _, p := range fleet {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range fleet {
		if err := p.wait(t, 30*time.Second); err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
	}
	down := time.Now()
	waitUntil(b.Add(13 * time.Second))
	t.Logf("fleet down from %s to %s (slot B = %s)", down.Format(time.TimeOnly), time.Now().Format(time.TimeOnly), b.Format(time.TimeOnly))
	fleet = []*proc{f.ticker("a2", "--lead", "0"), f.ticker("b2", "--lead", "0"), f.ticker("c2", "--lead", "0")}
	leaderOf(t, 30*time.Second, fleet...)
	kafkatest.Eventually(t, 30*time.Second, "slot B+20 of both 10 s schedules", func() bool {
		return hasSlot(ticks.of("skip10"), b.Add(20*time.Second)) && hasSlot(ticks.of("latest10"), b.Add(20*time.Second))
	})

	// all: nothing lost, nothing doubled, outage included.
	checkSequence(t, ticks.of("all1"), time.Second)

	// latest: B, B+10 (caught up, late) and B+20, once each.
	for _, slot := range []time.Time{b, b.Add(10 * time.Second), b.Add(20 * time.Second)} {
		if n := countSlot(ticks.of("latest10"), slot); n != 1 {
			t.Errorf("latest10: slot %s emitted %d times, want 1", slot.Format(time.TimeOnly), n)
		}
	}
	for _, s := range ticks.of("latest10") {
		if s.tick.Slot.Equal(b.Add(10 * time.Second)) {
			late := s.tick.EmittedAt.Sub(s.tick.Slot)
			t.Logf("latest10: missed slot B+10 caught up %v late", late.Round(time.Millisecond))
			if late < 2*time.Second {
				t.Errorf("latest10: slot B+10 emitted only %v late; the outage did not cover it", late)
			}
		}
	}
	// latest with a 1 s schedule: of the ~12 slots of the outage only the newest due one is emitted.
	missing, dups := gaps(ticks.of("latest1"), time.Second)
	t.Logf("latest1: %d slots of the outage passed over, %d duplicated", missing, dups)
	if missing < 8 || dups != 0 {
		t.Errorf("latest1: %d missing, %d duplicated; want at least 8 passed over and none doubled", missing, dups)
	}

	// skip: B and B+20 once, B+10 never.
	if n := countSlot(ticks.of("skip10"), b.Add(10*time.Second)); n != 0 {
		t.Errorf("skip10: missed slot B+10 emitted %d times, want 0", n)
	}
	for _, slot := range []time.Time{b, b.Add(20 * time.Second)} {
		if n := countSlot(ticks.of("skip10"), slot); n != 1 {
			t.Errorf("skip10: slot %s emitted %d times, want 1", slot.Format(time.TimeOnly), n)
		}
	}
}

// TestTickerFollowsScheduleChanges: a schedule changed, paused, resumed and deleted while the fleet runs; the
// leader follows each change within a second, without a restart.
func TestTickerFollowsScheduleChanges(t *testing.T) {
	f := newFleet(t)
	f.cli("init")
	f.cli("schedule", "put", "chg", "--every", "1s")
	ticks := f.collect()
	fleet := []*proc{f.ticker("a"), f.ticker("b")}
	leaderOf(t, 30*time.Second, fleet...)
	kafkatest.Eventually(t, 20*time.Second, "3 ticks", func() bool { return len(ticks.of("chg")) >= 3 })

	// Change: every 1s -> every 2s with a payload.
	f.cli("schedule", "put", "chg", "--every", "2s", "--payload", "v2")
	changed := time.Now()
	version := scheduleVersion(t, f, "chg")
	kafkatest.Eventually(t, 10*time.Second, "a tick of the new version", func() bool {
		for _, s := range ticks.of("chg") {
			if s.tick.ScheduleVersion == version {
				return true
			}
		}
		return false
	})
	time.Sleep(3 * time.Second) // let a few 2 s slots pass
	for _, s := range ticks.of("chg") {
		if s.tick.EmittedAt.After(changed.Add(time.Second)) {
			if s.tick.ScheduleVersion != version || s.tick.Payload != "v2" || s.tick.Slot.Unix()%2 != 0 {
				t.Errorf("tick %s emitted %v after the change still follows the old definition", s.tick.ID, s.tick.EmittedAt.Sub(changed))
			}
		}
	}

	// Pause: nothing emitted a second after it.
	f.cli("schedule", "pause", "chg")
	paused := time.Now()
	time.Sleep(4 * time.Second)
	// The resume takes effect once its schedule record is written, before the command returns (it then writes
	// the change log): the pause ends when the command starts.
	resuming := time.Now()
	f.cli("schedule", "resume", "chg")
	resumed := time.Now()
	for _, s := range ticks.of("chg") {
		if s.tick.EmittedAt.After(paused.Add(time.Second)) && s.tick.EmittedAt.Before(resuming) {
			t.Errorf("tick %s emitted %v after the pause", s.tick.ID, s.tick.EmittedAt.Sub(paused))
		}
	}
	// Resume: ticks again, and none for the slots of the pause.
	kafkatest.Eventually(t, 10*time.Second, "a tick after the resume", func() bool {
		for _, s := range ticks.of("chg") {
			if s.tick.EmittedAt.After(resumed) {
				return true
			}
		}
		return false
	})
	for _, s := range ticks.of("chg") {
		if s.tick.EmittedAt.After(resumed) && s.tick.Slot.Before(resumed) {
			t.Errorf("slot %s of the pause was caught up after the resume", s.tick.ID)
		}
	}

	// Delete: nothing a second after it.
	f.cli("schedule", "delete", "chg")
	deleted := time.Now()
	time.Sleep(4 * time.Second)
	for _, s := range ticks.of("chg") {
		if s.tick.EmittedAt.After(deleted.Add(time.Second)) {
			t.Errorf("tick %s emitted %v after the delete", s.tick.ID, s.tick.EmittedAt.Sub(deleted))
		}
	}
	// The leader also deleted the schedule's state from the ticker topic (a tombstone), so compaction drops it.
	kafkatest.Eventually(t, 10*time.Second, "the state of chg to be tombstoned", func() bool { return !tickerStateHas(t, f, "chg") })
	for id, n := range slotCounts(ticks.of("chg")) {
		if n != 1 {
			t.Errorf("%s emitted %d times", id, n)
		}
	}
	t.Logf("chg: %d ticks across change, pause, resume and delete", len(ticks.of("chg")))
}

// TestScheduleValidation: invalid schedules are refused with exit status 2 and a message saying what is
// wrong, and nothing is written.
func TestScheduleValidation(t *testing.T) {
	f := newFleet(t)
	f.cli("init")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"put", "x", "--cron", "61 * * * *"}, "61"},
		{[]string{"put", "x", "--cron", "0 * * * *", "--tz", "Mars/Olympus"}, "Mars/Olympus"},
		{[]string{"put", "Bad Name", "--every", "1s"}, "name"},
		{[]string{"put", "x", "--every", "500ms"}, "every"},
		{[]string{"put", "x"}, "every"},
		{[]string{"put", "x", "--every", "1s", "--catchup", "sometimes"}, "catchup"},
		{[]string{"put", "x", "--every", "1x"}, "duration"},
	} {
		out, err := f.cliErr(append([]string{"schedule"}, tc.args...)...)
		if code := exitCode(err); code != 2 {
			t.Errorf("schedule %v: exit status %d, want 2\n%s", tc.args, code, out)
		}
		if !containsFold(out, tc.want) {
			t.Errorf("schedule %v: message %q does not mention %q", tc.args, out, tc.want)
		}
	}
	if out := f.cli("schedule", "list", "--json"); out != "[]\n" {
		t.Errorf("invalid schedules were written: %s", out)
	}
}

// tickerStateHas reports whether the ticker topic (read to its LSO) holds live state for schedule.
func tickerStateHas(t *testing.T, f *fleet, schedule string) bool {
	t.Helper()
	opts, err := kafka.Config{Brokers: strings.Split(f.brokers, ","), Namespace: f.ns}.Opts(nil)
	if err != nil {
		t.Fatal(err)
	}
	state, err := leaderstate.Read(context.Background(), opts, f.ns+".ticker", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, live := state[schedule]
	return live
}

func scheduleVersion(t *testing.T, f *fleet, name string) int64 {
	t.Helper()
	var got struct {
		Version int64 `json:"version"`
	}
	if err := json.Unmarshal([]byte(f.cli("schedule", "get", name)), &got); err != nil {
		t.Fatal(err)
	}
	return got.Version
}

func hasSlot(ticks []seen, slot time.Time) bool { return countSlot(ticks, slot) > 0 }

func countSlot(ticks []seen, slot time.Time) int {
	n := 0
	for _, s := range ticks {
		if s.tick.Slot.Equal(slot) {
			n++
		}
	}
	return n
}

// gaps counts the slots missing between the first and last tick, and the slots seen more than once.
func gaps(ticks []seen, every time.Duration) (missing, dups int) {
	counts := map[int64]int{}
	var first, last int64
	for i, s := range ticks {
		u := s.tick.Slot.Unix()
		counts[u]++
		if i == 0 || u < first {
			first = u
		}
		if u > last {
			last = u
		}
	}
	step := int64(every / time.Second)
	for u := first; u <= last; u += step {
		switch c := counts[u]; {
		case c == 0:
			missing++
		case c > 1:
			dups++
		}
	}
	return missing, dups
}
