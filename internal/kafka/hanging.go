package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Hanging transactions. A transaction is open on a partition from its producer's first record there until the
// coordinator's marker; while open, it holds back the partition's last stable offset, and every read_committed
// reader with it. A transaction that no coordinator holds open any more will never get its marker: it hangs, and
// with it the partition, for good (no timeout aborts it, since to the coordinator it is over).
//
// Kafka 4.4 leaves such transactions after a broker's unclean restart: the transaction coordinator, completing a
// transaction it reloaded in PrepareAbort or PrepareCommit, may find no leader yet for its partitions (they are
// leaderless until their eligible replica has registered again, KIP-966), takes them for deleted ("Couldn't find
// leader endpoint ... these partitions are likely deleted already and hence can be skipped") and completes the
// transaction without their markers.
//
// FindHanging finds them and Settle writes their markers (WriteTxnMarkers, KIP-664, what kafka-transactions.sh
// abort does). Which marker is the caller's to choose (see package dispatch): the coordinator's decision is
// gone once it has completed the transaction, and an abort of a transaction its producer saw commit loses
// what it wrote. Proof that a transaction hangs, rather than being in flight:
//
//  1. DescribeProducers shows it open on the partition (producer ID, epoch, first offset);
//  2. then no coordinator holds a transaction of that producer ID open (Ongoing or Prepare*) with that partition
//     among its partitions still waiting for a marker (ListTransactions by producer ID, DescribeTransactions);
//  3. then DescribeProducers shows the same transaction still open.
//
// A transaction in flight is known to its coordinator from before its first record is appended (the partition
// is added to it first, or verified: transaction.partition.verification.enable) until its marker is written on
// every partition. So a transaction open at 1 and 3, which the coordinator did not hold open at 2 in between,
// was open while its coordinator had done with it: no marker will come. FindHanging reports the coordinator's
// decision when its state still says it (CompleteCommit or CompleteAbort of that transaction's epoch, or of the
// next under transaction version 2).

// Hanging is an open transaction on one partition that no coordinator holds open.
type Hanging struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	// StartOffset is the transaction's first offset on the partition: the last stable offset it holds.
	StartOffset int64
	// TxnID is the transactional ID that holds the producer ID now, "" when no coordinator lists one.
	TxnID string
	// Commit is the coordinator's decision, when known (Decided).
	Commit  bool
	Decided bool
}

func (h Hanging) String() string {
	return fmt.Sprintf("%s[%d] producer %d epoch %d from offset %d", h.Topic, h.Partition, h.ProducerID, h.ProducerEpoch, h.StartOffset)
}

// openStates are the transaction states in which a coordinator still writes markers for some partitions.
var openStates = []string{"Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence"}

type openKey struct {
	topic     string
	partition int32
	pid       int64
}

// FindHanging returns the hanging transactions on parts (see above). known may hold what a caller learnt of
// transactions before it changed them (a leader's DescribeTransactions before its fencing): it decides the
// outcome of a hanging transaction when the coordinator's present state no longer says it.
func FindHanging(ctx context.Context, adm *kadm.Client, parts kadm.TopicsSet, known kadm.DescribedTransactions) ([]Hanging, error) {
	first, err := openTransactions(ctx, adm, parts)
	if err != nil || len(first) == 0 {
		return nil, err
	}
	var pids []int64
	for k := range first {
		if !slices.Contains(pids, k.pid) {
			pids = append(pids, k.pid)
		}
	}
	listed, err := adm.ListTransactions(ctx, pids, nil)
	if err != nil {
		return nil, fmt.Errorf("listing the transactions of producers %v: %w", pids, err)
	}
	var described kadm.DescribedTransactions
	if ids := listed.TransactionalIDs(); len(ids) > 0 {
		if described, err = adm.DescribeTransactions(ctx, ids...); err != nil {
			return nil, fmt.Errorf("describing transactions %v: %w", ids, err)
		}
	}
	candidates := kadm.TopicsSet{}
	for k := range first {
		if !heldOpen(described, k) {
			candidates.Add(k.topic, k.partition)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	second, err := openTransactions(ctx, adm, candidates)
	if err != nil {
		return nil, err
	}
	var hs []Hanging
	for k, p := range first {
		q, ok := second[k]
		if !ok || !candidates.Lookup(k.topic, k.partition) || q.ProducerEpoch != p.ProducerEpoch || q.CurrentTxnStartOffset != p.CurrentTxnStartOffset {
			continue
		}
		h := Hanging{Topic: k.topic, Partition: k.partition, ProducerID: k.pid, ProducerEpoch: p.ProducerEpoch,
			CoordinatorEpoch: q.CoordinatorEpoch, StartOffset: p.CurrentTxnStartOffset}
		for id, l := range listed {
			if l.ProducerID == k.pid {
				h.TxnID = id
			}
		}
		h.Commit, h.Decided = decided(described, h)
		if !h.Decided {
			h.Commit, h.Decided = decided(known, h)
		}
		hs = append(hs, h)
	}
	slices.SortFunc(hs, func(a, b Hanging) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return hs, nil
}

// openTransactions describes the producers of parts: those with a transaction open, by partition and producer.
func openTransactions(ctx context.Context, adm *kadm.Client, parts kadm.TopicsSet) (map[openKey]kadm.DescribedProducer, error) {
	ds, err := adm.DescribeProducers(ctx, parts)
	if err != nil {
		return nil, fmt.Errorf("describing the producers of %v: %w", parts.Topics(), err)
	}
	open := map[openKey]kadm.DescribedProducer{}
	var perr error
	ds.EachPartition(func(p kadm.DescribedProducersPartition) {
		if p.Err != nil {
			perr = errors.Join(perr, fmt.Errorf("describing the producers of %s[%d]: %w", p.Topic, p.Partition, p.Err))
		}
	})
	if perr != nil {
		return nil, perr
	}
	ds.EachProducer(func(p kadm.DescribedProducer) {
		if p.CurrentTxnStartOffset >= 0 {
			open[openKey{p.Topic, p.Partition, p.ProducerID}] = p
		}
	})
	return open, nil
}

// heldOpen reports whether a coordinator holds a transaction of k's producer open with k's partition still to
// be marked.
func heldOpen(described kadm.DescribedTransactions, k openKey) bool {
	for _, t := range described {
		if t.ProducerID == k.pid && slices.Contains(openStates, t.State) && t.Topics.Lookup(k.topic, k.partition) {
			return true
		}
	}
	return false
}

// decided returns the coordinator's decision on h, when ts holds it: the producer's transactional ID completed
// the transaction of h's epoch (transaction version 2 ends each transaction with the epoch bumped by one).
func decided(ts kadm.DescribedTransactions, h Hanging) (commit, ok bool) {
	for _, t := range ts {
		if t.ProducerID != h.ProducerID || (t.ProducerEpoch != h.ProducerEpoch && t.ProducerEpoch != h.ProducerEpoch+1) {
			continue
		}
		switch t.State {
		case "CompleteCommit":
			return true, true
		case "CompleteAbort":
			return false, true
		}
	}
	return false, false
}

// Settle writes the markers of hs, a commit where Commit is set, an abort elsewhere. Writing markers needs the
// ClusterAction permission on the cluster; without it the error says so.
func Settle(ctx context.Context, adm *kadm.Client, hs []Hanging) error {
	type markerKey struct {
		pid        int64
		epoch      int16
		coordEpoch int32
		commit     bool
	}
	byKey := map[markerKey]kadm.TopicsSet{}
	for _, h := range hs {
		k := markerKey{h.ProducerID, h.ProducerEpoch, h.CoordinatorEpoch, h.Commit}
		ts := byKey[k]
		ts.Add(h.Topic, h.Partition)
		byKey[k] = ts
	}
	var markers []kadm.TxnMarkers
	for k, ts := range byKey {
		markers = append(markers, kadm.TxnMarkers{ProducerID: k.pid, ProducerEpoch: k.epoch, CoordinatorEpoch: k.coordEpoch, Commit: k.commit, Topics: ts})
	}
	rs, err := adm.WriteTxnMarkers(ctx, markers...)
	if err != nil {
		return NeedACL(fmt.Errorf("writing the markers of hanging transactions: %w", err), "ClusterAction", "cluster", "kafka-cluster")
	}
	var errs error
	rs.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
		if p.Err != nil {
			errs = errors.Join(errs, NeedACL(fmt.Errorf("writing the marker of producer %d on %s[%d]: %w", p.ProducerID, p.Topic, p.Partition, p.Err),
				"ClusterAction", "cluster", "kafka-cluster"))
		}
	})
	return errs
}
