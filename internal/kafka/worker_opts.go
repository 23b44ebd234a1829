package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// WorkerConsumerOpts is WorkerGroupOpts under the classic protocol: what package worker calls until its Config
// carries a GroupProtocol.
func WorkerConsumerOpts(n Names, start kgo.Offset, session time.Duration, instanceID string) []kgo.Opt {
	return WorkerGroupOpts(n, start, session, instanceID, GroupProtocolClassic)
}

// WorkerGroupOpts returns the role options of a worker's group consumer on the work topic, to append to Opts:
//   - group <ns>.workers on <ns>.work under protocol: classic with the cooperative-sticky balancer, or consumer
//     (KIP-848) with the broker's assignment; under both, members that keep their partitions are never
//     interrupted by a rebalance (see GroupProtocol.Opts);
//   - read_committed: a tick from an aborted transaction (a fenced leader) is never seen; kgo's default is
//     read_uncommitted;
//   - manual commits: the worker commits a record's offset only once it has finished it;
//   - start is the position of a partition without a committed offset; an offset that fell out of the log
//     (retention) resumes at the log start, so nothing still retained is skipped;
//   - session timeout session, heartbeats every session/10: a crashed worker's partitions move after about
//     session. Classic only: under the consumer protocol the broker decides both
//     (group.consumer.session.timeout.ms, group.consumer.heartbeat.interval.ms) and kgo sends neither;
//   - instanceID, when set, makes the worker a static member (KIP-345): a worker restarted with the same
//     instance ID within the session timeout takes its partitions back at once, with no rebalance.
func WorkerGroupOpts(n Names, start kgo.Offset, session time.Duration, instanceID string, protocol GroupProtocol) []kgo.Opt {
	opts := append(protocol.Opts(),
		kgo.ConsumerGroup(n.WorkerGroup),
		kgo.ConsumeTopics(n.Work),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.DisableAutoCommit(),
		kgo.ConsumeStartOffset(start),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(session),
		kgo.HeartbeatInterval(max(session/10, 100*time.Millisecond)),
		// Under the consumer protocol too: how long the broker waits for a revoked partition to be released.
		kgo.RebalanceTimeout(time.Minute),
		// Pausing and resuming partitions is how workers bound memory; a short fetch wait makes a resumed
		// partition flow again quickly.
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	if instanceID != "" {
		opts = append(opts, kgo.InstanceID(instanceID))
	}
	return opts
}

// WorkerProducerOpts returns the role options of a worker's producer of outcome and dead-letter records: the
// caller picks every partition (ManualPartitioner), all in-sync replicas acknowledge, and a record that cannot be
// delivered in a minute fails instead of blocking the worker forever.
func WorkerProducerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(time.Minute),
		kgo.ProducerLinger(0),
	}
}

// ForwardOpts returns the transactional options of a forwarding worker, to append to Opts and
// WorkerConsumerOpts. txnID must be unique per process: forwarding workers do not fence each other by ID; the
// group generation carried by each transaction's offset commit (KIP-447) is what stops a zombie.
func ForwardOpts(txnID string) []kgo.Opt {
	return []kgo.Opt{
		kgo.TransactionalID(txnID),
		// Short, so that the open transaction of a killed worker (whose ID nobody reuses) is aborted soon and
		// stops holding back the last stable offset and its partitions' next owner.
		kgo.TransactionTimeout(10 * time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	}
}

// RecordSize is the bytes of r that count against Kafka's record size limits: its key, value and headers.
func RecordSize(r *kgo.Record) int {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}
