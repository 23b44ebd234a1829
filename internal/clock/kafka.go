package clock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Kafka is the Source of a real cluster: it writes marks to partition 0 of a topic stamped with LogAppendTime.
//
// It sends its own produce requests, straight to the partition's leader, instead of using the client's
// producer: franz-go's produce promise gives the record back with the timestamp the client chose, not the
// LogAppendTime of the produce response, and its batching would add its linger to the round trip. A mark is a
// non-idempotent single-record batch, so it needs Write on the topic and nothing on the cluster.
type Kafka struct {
	cl    *kgo.Client
	adm   *kadm.Client
	topic string
	mark  []byte

	mu     sync.Mutex
	leader int32 // -1: look it up
	id     [16]byte
	// last is the value of the next mark: the mark and the last reading (Report), once there is one.
	last []byte
}

// NewKafka returns the Source that writes mark (for example the instance name, to tell whose record it is) to
// topic. cl must keep the default RequiredAcks (all in-sync replicas), which the requests use too.
func NewKafka(cl *kgo.Client, topic string, mark string) *Kafka {
	return &Kafka{cl: cl, adm: kadm.NewClient(cl), topic: topic, mark: []byte(mark), leader: -1}
}

// Sample writes one mark and returns its times.
func (k *Kafka) Sample(ctx context.Context, now func() time.Time) (Sample, error) {
	leader, id, err := k.partition(ctx)
	if err != nil {
		return Sample{}, err
	}
	sent := now()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 5000
	topic := kmsg.NewProduceRequestTopic()
	topic.Topic, topic.TopicID = k.topic, id // the name up to v12, the ID from v13
	part := kmsg.NewProduceRequestTopicPartition()
	part.Records = markBatch(sent, k.value())
	topic.Partitions = append(topic.Partitions, part)
	req.Topics = append(req.Topics, topic)
	resp, err := req.RequestWith(ctx, k.cl.Broker(int(leader)))
	acked := now()
	if err != nil {
		k.forget()
		return Sample{}, fmt.Errorf("writing a mark to %s: %w", k.topic, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		k.forget()
		return Sample{}, fmt.Errorf("writing a mark to %s: the broker answered for %d topics", k.topic, len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		k.forget()
		switch {
		case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.UnknownTopicID):
			return Sample{}, k.missing(err)
		case kafka.Denied(err):
			return Sample{}, fmt.Errorf("writing a mark to %s: %w", k.topic, kafka.NeedACL(err, "Write", "topic", k.topic))
		}
		return Sample{}, fmt.Errorf("writing a mark to %s: %w", k.topic, err)
	}
	if p.LogAppendTime < 0 {
		return Sample{}, fmt.Errorf("%w: topic %s keeps the writer's timestamps (CreateTime): set its message.timestamp.type to LogAppendTime", ErrUnmeasurable, k.topic)
	}
	return Sample{Sent: sent, Acked: acked, Broker: time.UnixMilli(p.LogAppendTime)}, nil
}

// partition returns the leader and ID of partition 0, from metadata when not known.
func (k *Kafka) partition(ctx context.Context) (int32, [16]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.leader >= 0 {
		return k.leader, k.id, nil
	}
	tds, err := kafka.ListFresh(ctx, k.adm, k.topic)
	if err != nil {
		return 0, [16]byte{}, fmt.Errorf("describing topic %s: %w", k.topic, kafka.NeedACL(err, "Write", "topic", k.topic))
	}
	td, ok := tds[k.topic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return 0, [16]byte{}, k.missing(kerr.UnknownTopicOrPartition)
	case kafka.Denied(td.Err):
		return 0, [16]byte{}, fmt.Errorf("describing topic %s: %w", k.topic, kafka.NeedACL(td.Err, "Write", "topic", k.topic))
	case td.Err != nil:
		return 0, [16]byte{}, fmt.Errorf("describing topic %s: %w", k.topic, td.Err)
	}
	p, ok := td.Partitions[0]
	if !ok || p.Leader < 0 {
		return 0, [16]byte{}, fmt.Errorf("topic %s: partition 0 has no leader", k.topic)
	}
	k.leader, k.id = p.Leader, td.ID
	return k.leader, k.id, nil
}

func (k *Kafka) missing(err error) error {
	return fmt.Errorf("%w: topic %s: %w (a namespace made before clocks were measured: run `ticker init` again)", ErrUnmeasurable, k.topic, err)
}

// value is the next mark's value: the last reading (a Mark), or the bare mark before the first.
func (k *Kafka) value() []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.last != nil {
		return k.last
	}
	return k.mark
}

// Report makes the next marks carry r, for a reader of the topic (ticker console) to see this process's offset.
func (k *Kafka) Report(r Reading) {
	v := EncodeMark(Mark{Who: string(k.mark), OffsetMS: ms(r.Offset), UncertaintyMS: ms(r.Uncertainty)})
	k.mu.Lock()
	k.last = v
	k.mu.Unlock()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// forget drops the partition's leader, to be looked up again before the next mark.
func (k *Kafka) forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.leader = -1
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// markBatch returns a record batch (magic 2, uncompressed, no producer ID) of one record with value v, stamped
// at ts (the broker replaces the stamp with its own on a LogAppendTime topic).
func markBatch(ts time.Time, v []byte) []byte {
	rec := kmsg.Record{Value: v}
	body := rec.AppendTo(nil)[1:] // everything after the length, encoded as 0 (one byte)
	records := binary.AppendVarint(nil, int64(len(body)))
	records = append(records, body...)
	ms := ts.UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		FirstTimestamp:       ms,
		MaxTimestamp:         ms,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              records,
	}
	out := b.AppendTo(nil)
	// Length counts what follows it (offset 12 on); the CRC covers everything from the attributes (offset 21).
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32c))
	return out
}
