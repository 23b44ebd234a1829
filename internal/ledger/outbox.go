package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// outbox writes a Log's entries (all but claims), at most maxInflight records in flight per partition: entries
// that arrive while that many are in flight wait, and go together in the next record, a batch (KindBatch). A
// worker under load so pays one produce and one read-back for many starts and outcomes; an idle one writes each
// entry at once, as a record of its own. The entries that depend on one another (a start, then its renewals,
// its release or its outcome) are added only once the one before is acknowledged and read back, so they reach
// the log in that order.
type outbox struct {
	lg    *Log
	nonce string // this process's part of its batch keys

	mu    sync.Mutex
	parts map[int32]*outQueue
	seq   uint64
	idle  *sync.Cond // signalled when a partition's queue empties
}

// outQueue is one results partition's records in flight and the entries waiting for a place.
type outQueue struct {
	inflight int
	queue    []*outEntry
}

// ErrInBatch marks the error of an entry written in a batch record with others: the record as a whole failed
// (too large for the topic, perhaps), and the entry alone may pass (Log.Append with alone).
var ErrInBatch = errors.New("written in a batch record with other entries")

// maxInflight is how many records of one partition may be in flight: two, so that a start need not wait for a
// whole round trip of the record before it (the idempotent producer keeps them in order).
const maxInflight = 2

// outEntry is one entry to write: value is its record value on its own (a worker's outcome record, or
// Encode), key its record key on its own. Its result (the record's offset, or the error) goes once to done, or
// to result when done is nil (a writer waiting in write).
type outEntry struct {
	key    []byte
	value  []byte
	e      Entry
	done   func(offset int64, err error)
	result chan outResult

	// alone makes it a record of its own, never in a batch (an entry whose batch was refused as a whole).
	alone bool

	mu        sync.Mutex
	abandoned bool // its writer stopped waiting before it was sent: it is not sent
	sent      bool
}

// Bounds of one batch: entries (MaxBatch) and bytes (well below Kafka's default 1 MB record).
const maxBatchBytes = 256 << 10

func newOutbox(lg *Log) *outbox {
	o := &outbox{lg: lg, nonce: strconv.FormatInt(time.Now().UnixNano(), 36), parts: map[int32]*outQueue{}}
	o.idle = sync.NewCond(&o.mu)
	return o
}

// add queues x for results partition p, and sends it at once when nothing is in flight there.
func (o *outbox) add(p int32, x *outEntry) {
	o.mu.Lock()
	q := o.parts[p]
	if q == nil {
		q = &outQueue{}
		o.parts[p] = q
	}
	q.queue = append(q.queue, x)
	if q.inflight >= maxInflight {
		o.mu.Unlock()
		return
	}
	q.inflight++
	batch := o.takeLocked(p, q)
	o.mu.Unlock()
	o.send(p, batch)
}

// outResult is what became of an outEntry: its record's offset, or the error.
type outResult struct {
	offset int64
	err    error
}

// report hands x its record's offset, or the error.
func (x *outEntry) report(offset int64, err error) {
	switch {
	case x.done != nil:
		x.done(offset, err)
	case x.result != nil:
		x.result <- outResult{offset, err}
	}
}

// write writes e (key: its record key alone) to partition p and returns its ledger offset once acknowledged.
// When ctx ends first, the entry is not sent if it has not been already.
func (o *outbox) write(ctx context.Context, p int32, key []byte, e Entry) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err // nothing is sent for a writer that has given up
	}
	x := &outEntry{key: key, value: Encode(e), e: e, result: make(chan outResult, 1)}
	ch := x.result
	o.add(p, x)
	select {
	case r := <-ch:
		return r.offset, r.err
	case <-ctx.Done():
		x.mu.Lock()
		sent := x.sent
		x.abandoned = !sent
		x.mu.Unlock()
		if !sent {
			return 0, ctx.Err()
		}
		r := <-ch // sent: its fate is the record's, bounded by the producer's delivery timeout
		return r.offset, r.err
	}
}

// takeLocked removes from q the entries of its next record: as many as fit in a batch (an entry to be written
// alone on its own), abandoned ones dropped. Called with o.mu held.
func (o *outbox) takeLocked(p int32, q *outQueue) []*outEntry {
	var batch []*outEntry
	size := 0
	n := 0
	for ; n < len(q.queue) && len(batch) < MaxBatch && !(len(batch) == 1 && batch[0].alone); n++ {
		x := q.queue[n]
		if len(batch) > 0 && (x.alone || size+len(x.value) > maxBatchBytes) {
			break
		}
		x.mu.Lock()
		skip := x.abandoned
		x.sent = !skip
		x.mu.Unlock()
		if skip {
			continue
		}
		batch = append(batch, x)
		size += len(x.value) + 1
	}
	q.queue = q.queue[n:]
	if len(q.queue) == 0 {
		q.queue = nil
	}
	return batch
}

// send produces batch as one record (the entry's own when it is alone) and, once acknowledged, reports to each
// entry and sends what queued up meanwhile.
func (o *outbox) send(p int32, batch []*outEntry) {
	if len(batch) == 0 {
		o.next(p)
		return
	}
	lg := o.lg
	es := make([]Entry, len(batch))
	for i, x := range batch {
		es[i] = x.e
	}
	r := &kgo.Record{Topic: lg.cfg.Topic, Partition: p, Key: batch[0].key, Value: batch[0].value}
	if len(batch) > 1 {
		o.mu.Lock()
		o.seq++
		seq := o.seq
		o.mu.Unlock()
		values := make([][]byte, len(batch))
		size := 0
		for i, x := range batch {
			values[i] = x.value
			size += len(x.value) + 1
		}
		r.Key = BatchKey(p, lg.cfg.Worker, o.nonce+"-"+strconv.FormatUint(seq, 36))
		r.Value = AppendBatch(make([]byte, 0, size+200), p, lg.cfg.Worker, lg.cfg.Now(), values)
		lg.expectBatch(p, string(r.Key), es)
	}
	lg.cfg.Producer.Produce(context.Background(), r, func(r *kgo.Record, err error) {
		switch {
		case err != nil:
			err = kafka.NeedACL(err, "Write", "topic", lg.cfg.Topic)
			if len(batch) > 1 {
				lg.forgetBatch(p, string(r.Key))
				err = fmt.Errorf("%w (%d entries): %w", ErrInBatch, len(batch), err)
			}
		case len(batch) == 1:
			lg.remember(p, r.Offset, es)
		}
		if err == nil {
			lg.cfg.Metrics.BatchEntries.Observe(float64(len(batch)))
		}
		for _, x := range batch {
			x.report(r.Offset, err)
		}
		go o.next(p)
	})
}

// next sends partition p's waiting entries in the place of a record just acknowledged, or frees that place.
func (o *outbox) next(p int32) {
	o.mu.Lock()
	q := o.parts[p]
	if len(q.queue) == 0 {
		if q.inflight--; q.inflight == 0 {
			delete(o.parts, p)
			o.idle.Broadcast()
		}
		o.mu.Unlock()
		return
	}
	batch := o.takeLocked(p, q)
	o.mu.Unlock()
	o.send(p, batch)
}

// flush waits until every queued entry has been sent and acknowledged (or failed), or until ctx ends.
func (o *outbox) flush(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		o.mu.Lock()
		o.idle.Broadcast()
		o.mu.Unlock()
	})
	defer stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.parts) > 0 && ctx.Err() == nil {
		o.idle.Wait()
	}
}
