package kafkatest

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// HangTransaction writes two transactional records to each of the partitions as a producer (of transactional ID txnID,
// transaction version 1) that never added them to its transaction. A broker with
// transaction.partition.verification.enable=false takes them: a transaction is open there that no coordinator
// knows, as Kafka 4.4 can leave after an unclean restart (kafka/hanging.go). It returns the producer's ID and
// epoch.
func HangTransaction(t testing.TB, ctx context.Context, addr, txnID, topic string, partitions ...int32) (int64, int16) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var resp *kmsg.InitProducerIDResponse
	Eventually(t, 30*time.Second, "InitProducerID", func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = &txnID
		req.TransactionTimeoutMillis = 60_000
		req.ProducerID, req.ProducerEpoch = -1, -1
		resp, err = req.RequestWith(ctx, cl)
		return err == nil && resp.ErrorCode == 0
	})
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = &txnID
	req.Acks = -1
	req.TimeoutMillis = 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = transactionalBatch(resp.ProducerID, resp.ProducerEpoch, "hangs-1", "hangs-2")
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	pr, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range pr.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("producing the hanging records to %s[%d]: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	return resp.ProducerID, resp.ProducerEpoch
}

// transactionalBatch encodes values as one transactional record batch (magic 2) of the producer.
func transactionalBatch(pid int64, epoch int16, values ...string) []byte {
	now := time.Now().UnixMilli()
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte(v), Value: []byte(v)} // keyed: compacted topics refuse records without a key
		r.Length = int32(len(r.AppendTo(nil)) - 1)                                // everything after the length, itself a one-byte varint 0
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, Attributes: 0x10, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: pid, ProducerEpoch: epoch, NumRecords: int32(len(values)), Records: recs}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}
