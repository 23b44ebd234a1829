package dispatch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Hanging transactions (kafka/hanging.go): Kafka 4.4, completing after an unclean broker restart a transaction
// whose markers were not yet written, may skip them for partitions it finds leaderless, and the transaction hangs
// there for good, on the leader's ticker-topic partition and on the work partitions it wrote alike. One on the
// ticker topic holds a new leader's state read (waitStable); one on a work partition holds the workers of that
// partition back while the leader goes on emitting.
//
// The marker to write is the one the coordinator decided, and once it has completed the transaction its state
// no longer says which. An abort of a transaction its leader saw commit loses its ticks for good while that
// leader's term runs on (its planner has moved past their slots). So a leader settles only what it can decide:
//
//   - At a term's start, while a hanging transaction holds its ticker partition (waitStable, every
//     hangingRetry): each such transaction, on every partition it hangs on (the ticker partition and the work
//     topics), with the coordinator's decision when known (its state now, or the transactional ID's state read
//     before the fencing: the previous term's last transaction), an abort otherwise. The abort is safe then: the
//     leader that wrote it is fenced, its state and its ticks share the one marker, and this term reads the
//     state after, so it emits those slots again, once.
//   - While a term runs, every hangingSweep: the transactions of its own producer that it saw commit (commits)
//     are committed; leader 0 aborts those of a producer that no leader of the namespace holds (a foreign
//     writer's, which would hold the workers back for ever). Any other is left, and logged once two sweeps in a
//     row have seen it: another leader's, or one whose decision nobody knows, which the next term of its leader
//     settles.
const (
	hangingRetry = 2 * time.Second
	hangingSweep = 5 * time.Second
)

// commits are the producer IDs and epochs of a term's last transactions that committed. Transaction version 2
// ends each transaction with the epoch bumped, so each of them has an epoch of its own; under version 1 they
// share one, and a hanging transaction at that epoch is one of them all the same (the term's transactions
// before the current one all committed: a failed one ends the term).
type commits struct {
	mu   sync.Mutex
	ring [64]commit
	n    int
}

type commit struct {
	pid   int64
	epoch int16
}

func (c *commits) note(pid int64, epoch int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ring[c.n%len(c.ring)] = commit{pid, epoch}
	c.n++
}

// has reports whether pid committed a transaction at epoch (among the last 64).
func (c *commits) has(pid int64, epoch int16) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range min(c.n, len(c.ring)) {
		if c.ring[i] == (commit{pid, epoch}) {
			return true
		}
	}
	return false
}

// hangingParts are the partitions a leader writes: its ticker-topic partition and every partition of the work
// topics (the default pool's and the named pools').
func (t *leaderTerm) hangingParts(ctx context.Context, adm *kadm.Client) (kadm.TopicsSet, error) {
	names := t.d.cfg.Names
	tds, err := kafka.ListFresh(ctx, adm)
	if err != nil {
		return nil, fmt.Errorf("listing the work topics: %w", err)
	}
	parts := kadm.TopicsSet{}
	parts.Add(names.Ticker, t.k)
	for topic, td := range tds {
		if _, ok := names.PoolOfWork(topic); (ok || topic == names.Work) && td.Err == nil {
			for p := range td.Partitions {
				parts.Add(topic, p)
			}
		}
	}
	return parts, nil
}

// settleAtStart settles, at a term's start, every hanging transaction on the term's ticker partition, on every
// partition it hangs on: the coordinator's decision when known, an abort otherwise (see above).
func (t *leaderTerm) settleAtStart(ctx context.Context, adm *kadm.Client) {
	parts, err := t.hangingParts(ctx, adm)
	if err != nil {
		t.logger.Debug("looking for hanging transactions", "err", err)
		return
	}
	hs, err := kafka.FindHanging(ctx, adm, parts, t.before)
	if err != nil {
		t.logger.Debug("looking for hanging transactions", "err", err)
		return
	}
	held := map[commit]bool{}
	for _, h := range hs {
		if h.Topic == t.d.cfg.Names.Ticker && h.Partition == t.k {
			held[commit{h.ProducerID, h.ProducerEpoch}] = true
		}
	}
	var settle []kafka.Hanging
	for _, h := range hs {
		if held[commit{h.ProducerID, h.ProducerEpoch}] {
			settle = append(settle, h) // undecided: Commit is false, an abort
		}
	}
	t.settleHanging(ctx, adm, settle)
}

// sweep settles, while the term runs, what it can decide (see above).
func (t *leaderTerm) sweep(ctx context.Context) {
	parts, err := t.hangingParts(ctx, t.adm)
	if err != nil {
		t.logger.Debug("looking for hanging transactions", "err", err)
		return
	}
	hs, err := kafka.FindHanging(ctx, t.adm, parts, t.before)
	if err != nil {
		t.logger.Debug("looking for hanging transactions", "err", err)
		return
	}
	var settle []kafka.Hanging
	left := map[hangingKey]bool{}
	for _, h := range hs {
		switch {
		case t.producer().committed.has(h.ProducerID, h.ProducerEpoch):
			h.Commit, h.Decided = true, true
		case h.Decided && h.TxnID == t.txnID:
		case t.k == 0 && h.TxnID != "" && !t.d.leaderTxnID(h.TxnID):
			h.Commit = false // a foreign writer's
		default:
			// Left, and said only when the last sweep saw it too: under load a coordinator may have ended a
			// transaction some seconds before its markers reach every partition, which looks the same for a
			// moment.
			k := hangingKey{h.Topic, h.Partition, h.ProducerID, h.StartOffset}
			if left[k] = true; t.left[k] {
				t.logger.Warn("a transaction no coordinator holds open hangs on a partition this leader writes, and it is not this term's to decide: left to the next term of its leader",
					"partition", fmt.Sprintf("%s[%d]", h.Topic, h.Partition), "hanging_producer_id", h.ProducerID,
					"hanging_epoch", h.ProducerEpoch, "transactional_id", h.TxnID, "from_offset", h.StartOffset)
			}
			continue
		}
		settle = append(settle, h)
	}
	t.left = left
	t.settleHanging(ctx, t.adm, settle)
}

// hangingKey is one transaction hanging on one partition.
type hangingKey struct {
	topic     string
	partition int32
	pid       int64
	start     int64
}

// leaderTxnID reports whether id is the transactional ID of a leader of the namespace.
func (d *Dispatcher) leaderTxnID(id string) bool {
	base := d.cfg.Names.TransactionalID
	if id == base {
		return true
	}
	k, ok := strings.CutPrefix(id, base+"-")
	_, err := strconv.Atoi(k)
	return ok && err == nil
}

// settleHanging writes the markers of hs, says what it did and counts it.
func (t *leaderTerm) settleHanging(ctx context.Context, adm *kadm.Client, hs []kafka.Hanging) {
	if len(hs) == 0 {
		return
	}
	for _, h := range hs {
		t.logger.Warn("a transaction no coordinator holds open hangs on a partition this leader writes: settling it (Kafka skips the markers of a transaction it completes while the partition has no leader, after an unclean restart)",
			"partition", fmt.Sprintf("%s[%d]", h.Topic, h.Partition), "hanging_producer_id", h.ProducerID, "hanging_epoch", h.ProducerEpoch,
			"transactional_id", h.TxnID, "from_offset", h.StartOffset, "commit", h.Commit, "decided", h.Decided)
	}
	if err := kafka.Settle(ctx, adm, hs); err != nil {
		t.d.metrics.hanging.WithLabelValues("failed").Add(float64(len(hs)))
		t.logger.Error("settling hanging transactions failed; the partitions stay held until an administrator aborts them (kafka-transactions.sh abort)",
			"err", err, "count", len(hs))
		return
	}
	for _, h := range hs {
		outcome := "aborted"
		if h.Commit {
			outcome = "committed"
		}
		t.d.metrics.hanging.WithLabelValues(outcome).Inc()
	}
}

// sweepHanging runs sweep every hangingSweep until the returned function is called.
func (t *leaderTerm) sweepHanging(ctx context.Context) func() {
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
				t.sweep(ctx)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
