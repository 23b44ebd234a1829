// Package cancel writes and recognises the cancel records of the work topic (tick.Cancel): how a pause or a
// deletion reaches the ticks a leader emitted ahead of their slot.
package cancel

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Records returns c as one record per work partition (partitions of them): a cancel must reach every partition
// that may hold one of the schedule's ticks, whatever its shard count was when they were emitted.
func Records(c tick.Cancel, topic string, partitions int) []*kgo.Record {
	v := tick.EncodeCancel(c)
	key := []byte(tick.CancelKeyPrefix + c.Schedule)
	recs := make([]*kgo.Record, 0, partitions)
	for p := range partitions {
		recs = append(recs, &kgo.Record{
			Topic: topic, Partition: int32(p), Key: key, Value: v,
			Headers: []kgo.RecordHeader{{Key: tick.HeaderKind, Value: []byte(tick.KindCancel)}},
		})
	}
	return recs
}

// Is reports whether r is a cancel record (by its header; its value may still be unreadable).
func Is(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == tick.HeaderKind && string(h.Value) == tick.KindCancel {
			return true
		}
	}
	return false
}

// Write writes cancels to every partition of the work topic (partitions of them) and waits for them. cl must
// use the manual partitioner.
func Write(ctx context.Context, cl *kgo.Client, topic string, partitions int, cancels ...tick.Cancel) error {
	var recs []*kgo.Record
	for _, c := range cancels {
		recs = append(recs, Records(c, topic, partitions)...)
	}
	if len(recs) == 0 {
		return nil
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("writing %d cancellation(s) to %s: %w", len(cancels), topic, err)
	}
	return nil
}

// Announce writes cancels to the work topic of names (all its partitions) right after the pauses or deletions
// they describe were written, so that ticks already emitted ahead of their slot do not run. The leader writes
// them as well once it sees the change; this write makes them take effect without waiting for it (during a
// leader failover too). cl must use the manual partitioner.
func Announce(ctx context.Context, cl *kgo.Client, work string, cancels []tick.Cancel) error {
	if len(cancels) == 0 {
		return nil
	}
	partitions, err := kafka.WorkPartitions(ctx, kadm.NewClient(cl), work)
	if err != nil {
		return err
	}
	return Write(ctx, cl, work, partitions, cancels...)
}
