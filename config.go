package tickgroup

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// StartPosition is where a new worker group starts reading a partition that has no committed offset
// (WorkerConfig.Start): StartEarliest, StartLatest or StartAgo. Its text is what `worker run --start` takes:
// "earliest", "latest" or a Go duration ("10m"). The zero value is the default, StartAgo(10 * time.Minute): a
// fleet started all at once loses no tick (the ticks committed before the first worker joined run too), and a
// new group on an old work topic runs at most the last ten minutes of ticks, not the days the topic retains.
type StartPosition string

// Start positions other than StartAgo.
const (
	// StartEarliest runs every tick still retained in the work topic.
	StartEarliest StartPosition = "earliest"
	// StartLatest runs only the ticks written from now on.
	StartLatest StartPosition = "latest"
)

// StartAgo starts at the first tick written d ago or later. d must be positive: NewWorker refuses any other.
func StartAgo(d time.Duration) StartPosition { return StartPosition(d.String()) }

// GroupProtocol is the consumer group protocol of a ticker's election (TickerConfig.GroupProtocol) or a worker's
// consumer (WorkerConfig.GroupProtocol): GroupProtocolClassic, the default (also for ""), or
// GroupProtocolConsumer. Its text is what the commands' --group-protocol takes.
type GroupProtocol string

// The group protocols.
const (
	// GroupProtocolClassic is the client-driven protocol of every Kafka version: the members agree on the
	// assignment (cooperative-sticky), and the client's SessionTimeout and HeartbeatInterval apply.
	GroupProtocolClassic GroupProtocol = "classic"
	// GroupProtocolConsumer is KIP-848's protocol (Kafka 4.0 and later, 4.3+ advised): the broker assigns the
	// partitions through heartbeats, with no group-wide rebalance barrier. The broker decides the session
	// timeout and heartbeat interval (group.consumer.session.timeout.ms, 45s by default, and
	// group.consumer.heartbeat.interval.ms, 5s), so the config's SessionTimeout and HeartbeatInterval do not
	// apply: a crashed member's partitions move after the broker's session timeout. Static membership
	// (InstanceID) is refused with it. On a broker without KIP-848 the client falls back to the classic protocol
	// with an eager balancer: use it only on a cluster that serves it.
	GroupProtocolConsumer GroupProtocol = "consumer"
)

// internal checks p and returns it in the terms of package kafka; instanceID is the config's InstanceID.
func (p GroupProtocol) internal(instanceID string) (kafka.GroupProtocol, error) {
	gp := kafka.GroupProtocol(cmp.Or(p, GroupProtocolClassic))
	if err := gp.Validate(); err != nil {
		return "", fmt.Errorf("tickgroup: %w", err)
	}
	if gp == kafka.GroupProtocolConsumer && instanceID != "" {
		return "", errors.New("tickgroup: static membership (an instance ID) needs the classic group protocol")
	}
	return gp, nil
}

// noneAs returns d, or none when d is negative: the package's "none" (see Durations in the package
// documentation) in the terms of an internal config, whose zero is its default.
func noneAs(d, none time.Duration) time.Duration {
	if d < 0 {
		return none
	}
	return d
}
