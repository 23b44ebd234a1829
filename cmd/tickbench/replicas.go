package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/admin"
)

// startReplicas starts the run's ticker processes: one named leader, or with --replicas R the processes
// replica-1 to replica-R at once, which share the namespace's leaders among them. On an error the processes
// started so far are returned with it, for the caller to stop.
func startReplicas(bin string, o emitOptions, ns string, extra []string, stderr io.Writer) ([]*tickerProc, error) {
	n := max(o.replicas, 1)
	var ps []*tickerProc
	for i := range n {
		name := "replica-" + strconv.Itoa(i+1)
		if n == 1 {
			name = "leader"
		}
		p, err := startTicker(bin, o.brokers, ns, name, extra, o.tickerEnv(), o.logDir, stderr)
		if err != nil {
			return ps, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// killOne, with --kill-one, kills the replica that leads the most leaders once half of the want ticks are seen
// and every replica is ready (its schedules loaded, in the group).
func (r *emitRun) killOne(got, want int) {
	if !r.o.killOne || r.victim != nil || got < want/2 {
		return
	}
	var victim *tickerProc
	most := -1.0
	for _, p := range r.replicas {
		if !p.ready() {
			return
		}
		if n, _ := p.scrape().Get("tickgroup_leader"); n > most {
			victim, most = p, n
		}
	}
	r.victim, r.victimLed, r.victimAt = victim, int(most), time.Now()
	victim.kill()
	fmt.Fprintf(r.stdout, "kill-one: SIGKILL to %s, which led %d of %d leaders, at %s (%d of %d ticks seen)\n",
		victim.name, r.victimLed, r.o.leaders, r.victimAt.Format("15:04:05.000"), got, want)
}

// reportReplicas prints, with --replicas, each replica's peak memory and last term start, the counters of the
// live replicas and, with --kill-one, the ticks the takeover made late and the slots missing or doubled.
func (r *emitRun) reportReplicas(final admin.Samples, arrivals []arrival) {
	w := r.stdout
	for _, p := range r.replicas {
		state := "live"
		if p == r.victim {
			state = "killed"
		}
		fmt.Fprintf(w, "%s: peak RSS %.0f MiB (%s; %.0f B a schedule of the namespace), peak Go heap in use %.0f MiB; last term start: %s\n",
			p.name, p.peakRSS/(1<<20), state, p.peakRSS/float64(r.o.n), p.peakHeap/(1<<20), orNone(p.termStart()))
	}
	fmt.Fprintf(w, "live replicas' counters: transactions committed %.0f, ticks emitted %.0f\n",
		final[`tickgroup_transactions_total{result="committed"}`], final["tickgroup_ticks_emitted_total"])
	if !r.o.killOne {
		return
	}
	if r.victim == nil {
		fmt.Fprintln(w, "kill-one: no replica was killed (not every replica was ready before the run ended)")
		return
	}
	kill := r.victimAt.UnixNano()
	late, after := 0, 0
	var worst time.Duration
	for _, a := range arrivals {
		if a.slot*int64(time.Second) < kill {
			continue
		}
		after++
		if d := a.lag(); d > 0 {
			late++
			worst = max(worst, d)
		}
	}
	missing, doubled, schedules := gaps(arrivals, r.o.every)
	fmt.Fprintf(w, "%d ticks late after the takeover (of %d ticks of the slots from the kill on, every leader's; the latest %v after its slot)\n",
		late, after, worst.Round(time.Millisecond))
	fmt.Fprintf(w, "kill-one: %d slots missing, %d doubled, over %d schedules\n", missing, doubled, schedules)
}

// liveCounters sums the emission counters of the replicas not killed.
func liveCounters(ps []*tickerProc) admin.Samples {
	sum := admin.Samples{}
	for _, p := range ps {
		m := p.scrape() // empty for a killed one
		for _, k := range []string{`tickgroup_transactions_total{result="committed"}`, "tickgroup_ticks_emitted_total"} {
			sum[k] += m[k]
		}
	}
	return sum
}

// orNone is s, or "none" when it is empty.
func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return s
}
