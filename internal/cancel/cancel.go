// Package cancel builds and recognises the cancel records of the work topic (tick.Cancel): how a pause or a
// deletion reaches the ticks a leader emitted ahead of their slot. The leader writes them, in a transaction of
// its term; a worker takes only such records (Genuine), and remembers what it read in a Set.
package cancel

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kgo"

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

// ErrForged is the error of a cancel record that was not written in a transaction (Genuine): it is not the
// leader's, and is refused (dead-lettered as forged_cancel).
var ErrForged = errors.New("cancel record not written in a transaction (not the leader's): refused")

// Genuine reports whether the cancel record r may take effect: it was written in a transaction, as the leader
// writes its cancels, in the same lineage of transactional producers as the ticks. Write on the work topic is
// also held by operators (for `ticker schedule trigger`), whose records are never transactional: a forged cancel
// must not silently suppress a live schedule. Only a principal with a transactional ID on the work topic (the
// ticker role) can write a genuine one.
func Genuine(r *kgo.Record) bool { return r.Attrs.IsTransactional() && r.ProducerID >= 0 }

// Is reports whether r is a cancel record (by its header; its value may still be unreadable).
func Is(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == tick.HeaderKind && string(h.Value) == tick.KindCancel {
			return true
		}
	}
	return false
}
