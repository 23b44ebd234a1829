package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestE2ECalendarExcludesSlotAcrossFailover: two ticker replicas (the default 10 s lead) and a schedule every
// second that excludes a calendar. While the fleet runs, the calendar is changed to exclude the day under way:
// the first slot the leader had not emitted is excluded, and every slot before it was emitted once. The leader is
// killed (kill -9) at that first excluded instant; the other replica takes over (reading the calendars to their
// end first) and leads for 15 s emitting no slot of the excluded day. The calendar then stops excluding the day: the slots run
// again from that change on, each once, none caught up from before it. A schedule without calendars runs on
// throughout, each slot once, and `ticker audit` counts the excluded slots as excluded, none missing.
//
// Calendars exclude whole days, and the next local midnight of any zone may be a quarter of an hour away, so the
// test makes the excluded span begin and end with calendar changes (the day under way in UTC, with the days
// around it, so that a run across midnight changes nothing), not with a midnight.
func TestE2ECalendarExcludesSlotAcrossFailover(t *testing.T) {
	f := newFleet(t)
	f.cli("init")
	f.cli("calendar", "put", "hol", "--dates", "2020-01-01")
	f.cli("schedule", "put", "beat", "--every", "1s", "--catchup", "all", "--exclude", "hol")
	f.cli("schedule", "put", "ctl", "--every", "1s", "--catchup", "all")
	// A run moved by previous_business_day: a cron schedule (with seconds) whose one slot is tomorrow, 25 s
	// from now's time of day (UTC), and a calendar excluding tomorrow. It runs today at that time, as the tick
	// of tomorrow's slot, once, across the failover below.
	target := time.Now().UTC().Add(25 * time.Second).Truncate(time.Second)
	tomorrow := target.AddDate(0, 0, 1)
	f.cli("calendar", "put", "tomorrow", "--dates", tomorrow.Format(time.DateOnly))
	f.cli("schedule", "put", "moved", "--cron", tomorrow.Format("5 4 15 2 1 *"), "--exclude", "tomorrow", "--on-excluded", "previous_business_day")
	ticks := f.collect()
	replicas := []*proc{f.ticker("a"), f.ticker("b")}
	lead := leaderOf(t, 30*time.Second, replicas...)
	kafkatest.Eventually(t, 30*time.Second, "3 slots of beat", func() bool { return len(ticks.of("beat")) >= 3 })

	// The calendar now excludes today (UTC): the change applies from the first slot not yet emitted.
	now := time.Now().UTC()
	days := []string{now.AddDate(0, 0, -1).Format(time.DateOnly), now.Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly)}
	f.cli("calendar", "put", "hol", "--dates", "2020-01-01,"+strings.Join(days, ","), "--reason", "e2e: exclude today")
	changed := time.Now()
	lead.waitLog(t, "calendars changed", 20*time.Second)
	applied := time.Now()
	// Everything committed before the log line, beat's last slot among it, is read once ctl's slots emitted then
	// (a lead ahead) are.
	kafkatest.Eventually(t, 10*time.Second, "ctl's slots emitted when the change was applied", func() bool {
		return !lastSlot(ticks.of("ctl")).Before(applied.Add(8 * time.Second))
	})
	lastBefore := lastSlot(ticks.of("beat"))
	firstExcluded := lastBefore.Add(time.Second)
	t.Logf("calendar changed at %s; last slot emitted before it %s (%v ahead: the lead)", changed.Format(timeMs), lastBefore.Format(timeMs),
		lastBefore.Sub(changed).Round(time.Millisecond))
	if lastBefore.Before(changed.Add(-time.Second)) || lastBefore.After(changed.Add(12*time.Second)) {
		t.Fatalf("last slot before the change %s, changed at %s: want within the 10 s lead of the change", lastBefore, changed)
	}

	// kill -9 of the leader at the first excluded instant.
	waitUntil(firstExcluded)
	killed := time.Now()
	lead.signal(syscall.SIGKILL)
	next := leaderOf(t, 20*time.Second, without(replicas, lead)...)
	next.waitLog(t, "leader term ready", 20*time.Second)
	ready := time.Now()
	t.Logf("%s killed at %s (%v after the first excluded slot %s); %s ready %v later", lead.name, killed.Format(timeMs),
		killed.Sub(firstExcluded).Round(time.Millisecond), firstExcluded.Format(timeMs), next.name, ready.Sub(killed).Round(time.Millisecond))
	if killed.Sub(firstExcluded) > time.Second {
		t.Errorf("the kill came %v after the first excluded slot: the test is too slow to kill at it", killed.Sub(firstExcluded))
	}
	// The new leader leads for 15 s within the excluded day, emitting ctl's slots a lead ahead (so up to 25 s
	// after it took over), and none of beat's.
	waitUntil(ready.Add(15 * time.Second))
	kafkatest.Eventually(t, 20*time.Second, "ctl's slots emitted by the new leader 15 s into its term", func() bool {
		return !lastSlot(ticks.of("ctl")).Before(ready.Add(24 * time.Second))
	})
	if got := lastSlot(ticks.of("beat")); !got.Equal(lastBefore) {
		t.Fatalf("beat's last slot %s after the failover, want %s: an excluded slot was emitted", got.Format(timeMs), lastBefore.Format(timeMs))
	}
	if w := next.metric("tickgroup_schedules_waiting_calendar"); w != 0 {
		t.Errorf("the new leader's tickgroup_schedules_waiting_calendar = %v, want 0 (it read the calendar)", w)
	}

	// The calendar stops excluding today: beat runs again from the change on.
	f.cli("calendar", "put", "hol", "--dates", "2020-01-01", "--reason", "e2e: today runs again")
	resumedAt := time.Now()
	var resumed time.Time
	kafkatest.Eventually(t, 20*time.Second, "beat's slots after the calendar let today run", func() bool {
		for _, s := range ticks.of("beat") {
			if s.tick.Slot.After(lastBefore) && (resumed.IsZero() || s.tick.Slot.Before(resumed)) {
				resumed = s.tick.Slot
			}
		}
		return !resumed.IsZero() && !lastSlot(ticks.of("beat")).Before(resumedAt.Add(5*time.Second))
	})
	t.Logf("calendar put back at %s; first slot after it %s (%v after the change)", resumedAt.Format(timeMs), resumed.Format(timeMs),
		resumed.Sub(resumedAt).Round(time.Millisecond))
	if resumed.Before(resumedAt.Add(-2*time.Second)) || resumed.After(resumedAt.Add(2*time.Second)) {
		t.Errorf("beat resumed at slot %s, the calendar changed at %s: want the first slot after the change (none caught up from before it, none missed after it)",
			resumed.Format(timeMs), resumedAt.Format(timeMs))
	}

	// Every slot of beat once: up to the excluded span, and from its end on; none within it.
	var before, after []seen
	for _, s := range ticks.of("beat") {
		switch {
		case !s.tick.Slot.After(lastBefore):
			before = append(before, s)
		case s.tick.Slot.Before(resumed):
			t.Errorf("beat: excluded slot %s emitted", s.tick.ID)
		default:
			after = append(after, s)
		}
	}
	excluded := int(resumed.Sub(lastBefore)/time.Second) - 1
	nBefore, nAfter := checkSequence(t, before, time.Second), checkSequence(t, after, time.Second)
	nCtl := checkSequence(t, ticks.of("ctl"), time.Second)
	t.Logf("beat: %d slots before the excluded span, %d excluded (%s to %s), %d after; ctl: %d slots, each once", nBefore, excluded,
		firstExcluded.Format(timeMs), resumed.Add(-time.Second).Format(timeMs), nAfter, nCtl)

	// The audit (once the slots after the span are past) counts the span as excluded, never missing.
	waitUntil(resumed.Add(3 * time.Second))
	auditExcluded(t, f, "beat", excluded)

	// The moved run: emitted once, as tomorrow's slot, to start today at its time.
	waitUntil(target.Add(time.Second))
	id := "moved@" + tomorrow.Format(time.RFC3339)
	var got []seen
	kafkatest.Eventually(t, 10*time.Second, "the moved run emitted", func() bool { got = ticks.of("moved"); return len(got) > 0 })
	if len(got) != 1 || got[0].tick.ID != id || got[0].tick.NotBefore == nil || !got[0].tick.NotBefore.Equal(target) {
		var ids []string
		for _, s := range got {
			ids = append(ids, fmt.Sprintf("%s (not before %v)", s.tick.ID, s.tick.NotBefore))
		}
		t.Errorf("moved: emitted %v, want %s once, not before %s", ids, id, target.Format(time.RFC3339))
	}
	out, code := runTicker(t, f, "audit", "--json", "--schedule", "moved", "--from", target.Add(-time.Hour).Format(time.RFC3339),
		"--to", target.Add(time.Second).Format(time.RFC3339))
	var rep struct {
		Schedules []struct {
			Expected, Emitted, Missing, Doubled, Unexpected int
		} `json:"schedules"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Schedules) != 1 {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	if a := rep.Schedules[0]; code != 0 || a.Expected != 1 || a.Emitted != 1 || a.Missing != 0 || a.Doubled != 0 || a.Unexpected != 0 {
		t.Errorf("audit of moved: exit %d, %+v: want the one moved run expected and emitted once\n%s", code, a, out)
	}
}

// auditExcluded runs `ticker audit --json --schedule NAME` and checks that no slot of it is missing, doubled or
// unexpected, and that the excluded ones are the span's excluded slots but those within the lead (and 3 s) of
// either change that began and ended it, which are optional: about 3 after the first, 3 before the second.
func auditExcluded(t *testing.T, f *fleet, name string, excluded int) {
	t.Helper()
	out, code := runTicker(t, f, "audit", "--json", "--schedule", name)
	var rep struct {
		Schedules []struct {
			Name       string `json:"name"`
			Expected   int    `json:"expected"`
			Emitted    int    `json:"emitted"`
			Missing    int    `json:"missing"`
			Doubled    int    `json:"doubled"`
			Unexpected int    `json:"unexpected"`
			Excluded   int    `json:"excluded"`
		} `json:"schedules"`
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Schedules) != 1 {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	a := rep.Schedules[0]
	t.Logf("audit of %s: expected %d, emitted %d, missing %d, doubled %d, unexpected %d, excluded %d (exit %d)",
		name, a.Expected, a.Emitted, a.Missing, a.Doubled, a.Unexpected, a.Excluded, code)
	if code != 0 || !rep.OK || a.Missing != 0 || a.Doubled != 0 || a.Unexpected != 0 {
		t.Errorf("audit: exit %d, %+v: want every slot once, none missing or unexpected", code, a)
	}
	if a.Excluded < max(excluded-16, 5) || a.Excluded > excluded {
		t.Errorf("audit: %d excluded, want the %d slots of the span but those near a change", a.Excluded, excluded)
	}
}

// timeMs is a time of day with milliseconds, for the test's log.
const timeMs = "15:04:05.000"

// lastSlot returns the latest slot of ticks (zero for none).
func lastSlot(ticks []seen) time.Time {
	var last time.Time
	for _, s := range ticks {
		if s.tick.Slot.After(last) {
			last = s.tick.Slot
		}
	}
	return last
}
