package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// GroupProtocol is the consumer group protocol a ticker's election client or a worker's consumer speaks.
//
// Under the classic protocol (the default) the members agree on an assignment among themselves: the client sends
// its session timeout and heartbeat interval, and cooperative-sticky rebalancing leaves a partition with its owner
// while other members come and go.
//
// Under the consumer protocol (KIP-848, Kafka 4.0 and later) the broker's group coordinator assigns partitions and
// reconciles them through heartbeats: there is no group-wide rebalance barrier. The broker decides the session
// timeout and heartbeat interval of such a group (group.consumer.session.timeout.ms, 45s by default, and
// group.consumer.heartbeat.interval.ms, 5s by default, or the group's own consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms); franz-go sends neither and follows the interval the broker returns. The client's
// rebalance timeout still applies: it is how long the broker waits for a member to release a revoked partition.
type GroupProtocol string

// The group protocols. The zero value of a config's field means GroupProtocolClassic.
const (
	GroupProtocolClassic  GroupProtocol = "classic"
	GroupProtocolConsumer GroupProtocol = "consumer"
)

// ParseGroupProtocol returns the protocol named s, classic or consumer; anything else, the empty string included,
// is an error.
func ParseGroupProtocol(s string) (GroupProtocol, error) {
	switch p := GroupProtocol(s); p {
	case GroupProtocolClassic, GroupProtocolConsumer:
		return p, nil
	}
	return "", fmt.Errorf("group protocol %q: want %s or %s", s, GroupProtocolClassic, GroupProtocolConsumer)
}

// Validate checks a config's protocol: empty (the default, classic), classic or consumer.
func (p GroupProtocol) Validate() error {
	if p == "" {
		return nil
	}
	_, err := ParseGroupProtocol(string(p))
	return err
}

// Opts returns the group options the protocol implies, for a group client that sets no balancer of its own:
//   - classic (or empty): the cooperative-sticky balancer;
//   - consumer: the server-side protocol with the broker's "uniform" assignor. franz-go speaks KIP-848 only when
//     its first balancer is the sticky or the range one (sticky asks the broker for "uniform", which also keeps
//     partitions with their owners), and only with a broker that serves ConsumerGroupHeartbeat v1 (Kafka 4.0+).
//     Against an older broker it falls back to the classic protocol with that first balancer, eager sticky, whose
//     every rebalance revokes all partitions before handing them back: so choose consumer only where every broker
//     of the cluster runs Kafka 4.0 or later (franz-go recommends 4.3+).
func (p GroupProtocol) Opts() []kgo.Opt {
	if p == GroupProtocolConsumer {
		return []kgo.Opt{kgo.Balancers(kgo.StickyBalancer()), kgo.ServerSideBalancer()}
	}
	return []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}
}

// String is the protocol's name, classic for the empty default.
func (p GroupProtocol) String() string {
	if p == "" {
		return string(GroupProtocolClassic)
	}
	return string(p)
}
