package e2e

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// privateFleet is a fleet (and its env) on a broker of its own, for a test that stops or restarts it.
func privateFleet(t *testing.T, brokers string) (*fleet, *env) {
	t.Helper()
	f := &fleet{t: t, brokers: brokers, ns: kafkatest.Unique("tg")}
	t.Cleanup(func() {
		for _, p := range f.procs {
			p.kill()
		}
		if t.Failed() {
			dir := os.Getenv("E2E_LOG_DIR")
			for _, p := range f.procs {
				t.Logf("---- %s log (last 30 lines) ----\n%s", p.name, p.tail(30))
				if dir != "" {
					_ = os.WriteFile(filepath.Join(dir, t.Name()+"-"+p.name+".log"), p.log.Bytes(), 0o644)
				}
			}
			if dir != "" { // the broker's logs, before OwnBroker's cleanup removes its directory
				_, port, _ := strings.Cut(brokers, ":")
				dev := cmp.Or(os.Getenv("KAFKA_DEV_DIR"), filepath.Join("..", "..", "..", ".kafka-dev")) // go test runs in this directory
				logs, _ := filepath.Glob(filepath.Join(dev, "run-"+port, "kafka.log*"))
				for _, l := range logs {
					if b, err := os.ReadFile(l); err == nil {
						_ = os.WriteFile(filepath.Join(dir, t.Name()+"-broker-"+filepath.Base(l)), b, 0o644)
					}
				}
			}
		}
	})
	e := &env{t: t, f: f, ns: f.ns, brokers: []string{brokers}, names: kafka.Config{Brokers: []string{brokers}, Namespace: f.ns}.Names(),
		log: filepath.Join(t.TempDir(), "handler.log"), killed: map[string]bool{}, killAt: map[string]time.Time{}}
	built(t, "handler") // at handlerBin
	return f, e
}

// TestTickerBrokerRestart: the broker goes down under a running fleet (three tickers, two exec workers) and
// comes back on the same data. The fleet recovers on its own: with catchup all every slot of the run, outage
// included, is emitted exactly once, and, counted from the handler's own log, every tick ran to a success, any
// second run of a tick marked interrupted (a run whose outcome the outage kept from the ledger).
func TestTickerBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	own := kafkatest.OwnBroker(t, "19292")
	f, e := privateFleet(t, own.Addr)
	f.cli("init")
	f.cli("schedule", "put", "beat", "--every", "1s", "--catchup", "all")
	ticks := f.collect()
	fleet := []*proc{f.ticker("a"), f.ticker("b"), f.ticker("c")}
	e.start(nil, "--exec", handlerBin)
	e.start(nil, "--exec", handlerBin)
	leaderOf(t, 30*time.Second, fleet...)
	kafkatest.Eventually(t, 20*time.Second, "3 ticks", func() bool { return len(ticks.of("beat")) >= 3 })

	down := time.Now()
	own.Restart()
	back := time.Now()
	t.Logf("broker restarted: down for %v", back.Sub(down).Round(time.Millisecond))
	kafkatest.Eventually(t, 90*time.Second, "ticks emitted after the restart", func() bool { return emittedAfter(ticks.of("beat"), back) >= 5 })
	var resumed time.Time
	for _, s := range ticks.of("beat") {
		if s.tick.EmittedAt.After(back) && (resumed.IsZero() || s.tick.EmittedAt.Before(resumed)) {
			resumed = s.tick.EmittedAt
		}
	}
	t.Logf("first emission %v after the broker was back", resumed.Sub(back).Round(time.Millisecond))
	checkSequence(t, ticks.of("beat"), time.Second)

	var ids []string
	for _, s := range ticks.of("beat") {
		ids = append(ids, s.tick.ID)
	}
	ex := e.waitAllOK(ids, 90*time.Second)
	reruns := 0
	for _, id := range ids {
		runs := ex[id]
		for i, x := range runs[1:] {
			reruns++
			if x.interrupted != "1" {
				t.Errorf("tick %s ran again (run %d of %s) without being marked interrupted", id, i+2, attempts(runs))
			}
		}
	}
	t.Logf("%d ticks executed, %d runs again after the outage (each marked interrupted)", len(ids), reruns)
}
