package kafkatest

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CheckApacheKafka4 returns nil when seeds reach a real Apache Kafka 4.x cluster in KRaft mode, and an error
// saying what is missing otherwise. It asks two things that a stand-in broker (kfake) does not answer:
//   - DescribeQuorum on __cluster_metadata: a KRaft quorum with a leader, a voter and a metadata log;
//   - the finalized metadata.version feature at a 4.x level (Kafka 4.0 is the first release at level 22 or more,
//     and the first without ZooKeeper).
func CheckApacheKafka4(ctx context.Context, seeds []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()

	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "tickgroup-kafkatest", "1"
	avr, err := av.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("api versions: %w", err)
	}
	level := int16(-1)
	for _, f := range avr.FinalizedFeatures {
		if f.Name == "metadata.version" {
			level = f.MaxVersionLevel
		}
	}
	if level < 22 {
		return fmt.Errorf("metadata.version %d: not a Kafka 4.x cluster", level)
	}

	dq := kmsg.NewPtrDescribeQuorumRequest()
	topic := kmsg.NewDescribeQuorumRequestTopic()
	topic.Topic = "__cluster_metadata"
	topic.Partitions = append(topic.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	dq.Topics = append(dq.Topics, topic)
	dqr, err := dq.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe quorum: %w", err)
	}
	if len(dqr.Topics) != 1 || len(dqr.Topics[0].Partitions) != 1 {
		return errors.New("describe quorum: no __cluster_metadata partition")
	}
	p := dqr.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID < 0 || len(p.CurrentVoters) == 0 || p.HighWatermark <= 0 {
		return fmt.Errorf("describe quorum: error %d, leader %d, %d voters, metadata log end %d", p.ErrorCode, p.LeaderID, len(p.CurrentVoters), p.HighWatermark)
	}
	return nil
}
