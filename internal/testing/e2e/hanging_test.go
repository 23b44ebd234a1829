package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestE2EHangingTransactionsSettled: what Kafka 4.4 can leave after an unclean restart (kafka/hanging.go), made
// on purpose: transactions open on partitions while no coordinator knows them, first on every work partition
// under a running fleet, then on the ticker topic while its leader is dead. A broker of its own, with partition
// verification off, takes records for partitions outside their transaction. The fleet settles both: the
// leader's sweep aborts those on the work partitions, so the worker runs the ticks behind them; the replica that
// leads next aborts the one on the ticker topic, which held its state read. Every slot is emitted once and its
// tick run once.
func TestE2EHangingTransactionsSettled(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test")
	}
	own := kafkatest.OwnBroker(t, "19492", "transaction.partition.verification.enable=false")
	f, e := privateFleet(t, own.Addr)
	f.cli("init", "--work-partitions", "4")
	f.cli("schedule", "put", "beat", "--every", "1s", "--catchup", "all")
	ticks := f.collect()
	tickers := []*proc{f.ticker("a"), f.ticker("b"), f.ticker("c")}
	e.start(nil, "--exec", handlerBin)
	lead := leaderOf(t, 30*time.Second, tickers...)
	kafkatest.Eventually(t, 30*time.Second, "3 ticks run", func() bool { return len(e.executions()) >= 3 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	kafkatest.HangTransaction(t, ctx, own.Addr, f.ns+".intruder", f.ns+".work", 0, 1, 2, 3)
	const aborted = `tickgroup_hanging_transactions_total{outcome="aborted"}`
	kafkatest.Eventually(t, 30*time.Second, "the leader to abort the work partitions' hanging transaction", func() bool {
		return lead.metric(aborted) >= 4
	})
	ran := len(e.executions())
	kafkatest.Eventually(t, 30*time.Second, "3 more ticks run", func() bool { return len(e.executions()) >= ran+3 })

	lead.signal(syscall.SIGKILL)
	kafkatest.HangTransaction(t, ctx, own.Addr, f.ns+".intruder", f.ns+".ticker", 0)
	next := leaderOf(t, 40*time.Second, without(tickers, lead)...)
	kafkatest.Eventually(t, 30*time.Second, "the next leader to abort the ticker topic's hanging transaction", func() bool {
		return next.metric(aborted) >= 1
	})
	settleAndCheck(t, ticks)
	ran = len(e.executions())
	kafkatest.Eventually(t, 30*time.Second, "3 more ticks run", func() bool { return len(e.executions()) >= ran+3 })
	for id, xs := range e.executions() {
		if len(xs) != 1 {
			t.Errorf("tick %s ran %d times, want once", id, len(xs))
		}
	}
}
