package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestTickerKillLeaderDefaultCatchup: a schedule put without --catchup (the default, all) loses no slot when
// the leader is killed with -9: the slots that fell due during the failover are emitted late by the new leader,
// each exactly once, and none is counted as missed. The tickers emit when due (--lead 0), so that the failover
// spans slots; TestTickerKillLeaderLeadHidesFailover is the same kill with the default lead.
func TestTickerKillLeaderDefaultCatchup(t *testing.T) {
	f := newFleet(t)
	f.cli("init")
	f.cli("schedule", "put", "beat", "--every", "1s", "--metrics") // no --catchup: the default
	ticks := f.collect()
	replicas := []*proc{f.ticker("a", "--lead", "0"), f.ticker("b", "--lead", "0"), f.ticker("c", "--lead", "0")}
	lead := leaderOf(t, 30*time.Second, replicas...)
	kafkatest.Eventually(t, 20*time.Second, "3 ticks", func() bool { return len(ticks.of("beat")) >= 3 })

	killed := time.Now()
	lead.signal(syscall.SIGKILL)
	next := leaderOf(t, 20*time.Second, without(replicas, lead)...)
	kafkatest.Eventually(t, 20*time.Second, "3 ticks emitted after the kill", func() bool { return emittedAfter(ticks.of("beat"), killed) >= 3 })
	late := time.Duration(0)
	for _, s := range ticks.of("beat") {
		if s.tick.EmittedAt.After(killed) {
			late = max(late, s.tick.EmittedAt.Sub(s.tick.Slot))
		}
	}
	t.Logf("kill -9 of %s: %s leads; the most late slot emitted after the kill was %v late", lead.name, next.name, late.Round(time.Millisecond))
	// A slot emitted a second or more late was not the newest due one when it went out: "latest" would have
	// dropped it.
	if late < time.Second {
		t.Errorf("no slot was emitted late after the kill (%v): the failover did not span a slot, so the test shows nothing", late)
	}
	settleAndCheck(t, ticks)
	if m := next.metric("tickgroup_slots_missed_total"); m != 0 {
		t.Errorf("new leader: tickgroup_slots_missed_total = %v, want 0", m)
	}

	// The per-schedule absence alert's inputs (metrics: true): from the leader only, the period and a next due
	// time within a period of now.
	period, due := next.series("tickgroup_schedule_period_seconds")["beat"], next.series("tickgroup_schedule_next_due_timestamp_seconds")["beat"]
	ahead := due - float64(time.Now().UnixMilli())/1e3
	t.Logf("new leader: period %vs, next due in %.3fs", period, ahead)
	if period != 1 || ahead < -1 || ahead > 2 {
		t.Errorf("new leader: tickgroup_schedule_period_seconds{beat} = %v, next due in %.3fs; want 1 and within a period", period, ahead)
	}
	for _, p := range without(without(replicas, lead), next) {
		if n := len(p.series("tickgroup_schedule_next_due_timestamp_seconds")); n != 0 {
			t.Errorf("%s, not leading, exports %d next-due series", p.name, n)
		}
	}
}

// TestTickerKillLeaderLeadHidesFailover: with the default --lead (10 s), kill -9 of the leader (the tests'
// 3 s session) delays no slot: every tick of the run, those around the kill included, was committed before its
// instant, and every slot is there once.
func TestTickerKillLeaderLeadHidesFailover(t *testing.T) {
	f := newFleet(t)
	f.cli("init")
	f.cli("schedule", "put", "beat", "--every", "1s")
	ticks := f.collect()
	replicas := []*proc{f.ticker("a"), f.ticker("b"), f.ticker("c")}
	lead := leaderOf(t, 30*time.Second, replicas...)
	kafkatest.Eventually(t, 20*time.Second, "3 ticks", func() bool { return len(ticks.of("beat")) >= 3 })
	killed := time.Now()
	lead.signal(syscall.SIGKILL)
	next := leaderOf(t, 20*time.Second, without(replicas, lead)...)
	kafkatest.Eventually(t, 20*time.Second, "3 ticks emitted after the kill", func() bool { return emittedAfter(ticks.of("beat"), killed) >= 3 })
	// Every slot due in the 10 s after the kill: its tick was visible before its instant.
	waitUntil(killed.Add(12 * time.Second))
	worst, n := -time.Hour, 0
	for _, s := range ticks.of("beat") {
		if s.tick.Slot.After(killed) && s.tick.Slot.Before(killed.Add(10*time.Second)) {
			n++
			worst = max(worst, s.committed.Sub(s.tick.StartAt()))
		}
	}
	t.Logf("kill -9 of %s: %s leads; %d slots due in the 10 s after the kill, the latest visible %v after its instant (negative: before)", lead.name, next.name, n, worst.Round(time.Millisecond))
	if n < 9 {
		t.Errorf("only %d slots due in the 10 s after the kill were emitted", n)
	}
	if worst > 250*time.Millisecond {
		t.Errorf("a slot due after the kill became visible %v after its instant: the failover delayed it", worst)
	}
	settleAndCheck(t, ticks)
}

// series returns the values of a metric with one label (partition, schedule, ...) from p's /metrics, by label
// value; empty when p is unreachable or does not export it.
func (p *proc) series(name string) map[string]float64 {
	m, err := p.scrape()
	if err != nil {
		return map[string]float64{}
	}
	for k, v := range m {
		if k == name { // a series without labels: nothing to key it by
			return map[string]float64{"": v}
		}
	}
	return firstLabel(m, name)
}

// firstLabel returns the series of name by the value of their only label.
func firstLabel(m admin.Samples, name string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, name+"{")
		if !ok {
			continue
		}
		_, val, _ := strings.Cut(strings.TrimSuffix(rest, "}"), "=")
		out[strings.Trim(val, `"`)] = v
	}
	return out
}
