package dispatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Hanging transactions (kafka/hanging.go): Kafka 4.4, completing after an unclean broker restart a transaction
// whose markers were not yet written, may skip them for partitions it finds leaderless, and the transaction hangs
// there for good. A leader's own transactions are the ones this concerns: one open on the ticker topic holds a
// new leader's state read (waitStable), one open on a work partition holds the workers of that partition back
// while the leader goes on emitting. So a term settles what hangs on what its leader writes:
//
//   - its ticker-topic partition, while waitStable waits on it, every hangingRetry;
//   - while it runs, every hangingSweep: its ticker-topic partition and, for leader 0 alone (one sweeper is
//     enough, and two would race to write the same markers), the work topics of the pools it knows at its start.
//
// The decision the coordinator took is kept when known: fence reads the transactional ID's state before its
// InitProducerID moves it on (term.before), so that a transaction the previous term committed and whose markers
// were skipped is committed, not aborted. An abort is safe otherwise: nobody read a record of a transaction that
// is still open, and a leader's state and ticks of one transaction are aborted together (the next term emits
// those slots again from the state before it).
const (
	hangingRetry = 2 * time.Second
	hangingSweep = 5 * time.Second
)

// settleHanging finds and settles the hanging transactions on parts, says what it did and counts it. It returns
// how many it settled.
func (t *leaderTerm) settleHanging(ctx context.Context, adm *kadm.Client, parts kadm.TopicsSet) int {
	hs, err := kafka.FindHanging(ctx, adm, parts, t.before)
	if err != nil {
		if ctx.Err() == nil {
			t.logger.Debug("looking for hanging transactions", "err", err)
		}
		return 0
	}
	if len(hs) == 0 {
		return 0
	}
	for _, h := range hs {
		t.logger.Warn("a transaction no coordinator holds open hangs on a partition this leader writes: settling it (Kafka skips the markers of a transaction it completes while the partition has no leader, after an unclean restart)",
			"partition", fmt.Sprintf("%s[%d]", h.Topic, h.Partition), "hanging_producer_id", h.ProducerID, "hanging_epoch", h.ProducerEpoch,
			"from_offset", h.StartOffset, "commit", h.Commit, "decided_by_coordinator", h.Decided)
	}
	if err := kafka.Settle(ctx, adm, hs); err != nil {
		t.d.metrics.hanging.WithLabelValues("failed").Add(float64(len(hs)))
		t.logger.Error("settling hanging transactions failed; the partitions stay held until an administrator aborts them (kafka-transactions.sh abort)",
			"err", err, "count", len(hs))
		return 0
	}
	for _, h := range hs {
		outcome := "aborted"
		if h.Commit {
			outcome = "committed"
		}
		t.d.metrics.hanging.WithLabelValues(outcome).Inc()
	}
	return len(hs)
}

// sweepHanging settles, every hangingSweep until the returned function is called, what hangs on the ticker-topic
// partition of the term and, for leader 0, on the work topics. It takes its own admin client's calls off the
// term's loop.
func (t *leaderTerm) sweepHanging(ctx context.Context) func() {
	parts := kadm.TopicsSet{}
	parts.Add(t.d.cfg.Names.Ticker, t.k)
	if t.k == 0 {
		for _, p := range t.pools {
			ps := make([]int32, p.partitions)
			for i := range ps {
				ps[i] = int32(i)
			}
			parts.Add(p.work, ps...)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(hangingSweep)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				t.settleHanging(ctx, t.adm, parts)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
