package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/kafkatest"
)

// TestDescribeGroupEitherProtocol: against a real broker, a group of each protocol is described with its state
// and its member's assignment. Kafka 4 answers the classic DescribeGroups for a consumer-protocol group as if it
// did not exist; a worker asking whether the group assigns it a partition (a foreign claim) waited forever on
// that answer, and ticker status showed no leader.
func TestDescribeGroupEitherProtocol(t *testing.T) {
	seeds := kafkatest.Brokers(t)
	adm := kafkatest.Admin(t)
	for _, protocol := range []kafka.GroupProtocol{kafka.GroupProtocolClassic, kafka.GroupProtocolConsumer} {
		t.Run(string(protocol), func(t *testing.T) {
			topic := kafkatest.NewTopic(t, 3, nil)
			group := kafkatest.NewGroup(t)
			cl, err := kgo.NewClient(append(protocol.Opts(), kgo.SeedBrokers(seeds...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
				kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			go func() {
				for !cl.PollFetches(context.Background()).IsClientClosed() {
				}
			}()
			var g kafka.Group
			kafkatest.Eventually(t, 30*time.Second, "the group stable with its member holding 3 partitions", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if g, err = kafka.DescribeGroup(ctx, adm, group); err != nil {
					t.Logf("describing: %v", err)
					return false
				}
				return g.Stable() && len(g.Members) == 1 && len(g.Members[0].Assigned[topic]) == 3
			})
			member, _ := cl.GroupMetadata()
			if g.Members[0].MemberID != member {
				t.Errorf("member %q described, the client is %q", g.Members[0].MemberID, member)
			}
			missing, err := kafka.DescribeGroup(context.Background(), adm, kafkatest.Unique("nogroup"))
			if err != nil || !errors.Is(missing.Err, kerr.GroupIDNotFound) && missing.State != "Dead" {
				t.Errorf("a group that does not exist: %+v, %v; want GROUP_ID_NOT_FOUND or Dead", missing, err)
			}
		})
	}
}
