package worker

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// maxForwardFailures is how many transactions in a row may fail with an error before Run gives up.
const maxForwardFailures = 5

// forwarder is forward mode, an engine of its own beside the lanes: one transactional session, no lanes.
//
// Held ticks. Ticks arrive up to the leader's --lead before their instant (tick.NotBefore). The forwarder keeps
// them, per partition and in offset order, and forwards each on its instant. Each transaction commits, for a
// partition with records still held, the offset of the first one held (the commit request is rewritten with
// kgo.PreTxnCommitFnContext; kgo records the offsets as sent): a crash or a rebalance therefore delivers the held
// records again, and nothing is forwarded twice or skipped. When a transaction does not commit, kgo rewinds the
// session to the committed offsets.
//
// After a transaction that did not commit, kgo rewinds the session to the committed offsets and delivers the
// records from there again; hold notices the lower offsets and replaces what it held (see hold).
//
// A manual trigger behind a held tick of its partition waits for it (at most --lead): forwarding it out of order
// would forward it again after a crash, since the committed offset cannot pass the held tick.
type forwarder struct {
	w *Worker

	mu      sync.Mutex
	parts   map[int32]bool           // the work partitions assigned
	held    map[int32][]heldRecord   // records polled and not yet forwarded, per partition, in offset order
	cancels map[string][]tick.Cancel // cancellations read, by schedule
}

// run is forward mode: a consume-transform-produce loop in a kgo.GroupTransactSession. Each polled batch
// becomes one transaction holding the forwarded ticks, their outcome records, any dead letters and the batch's
// consumed offsets, so the output and the commit are atomic: a read_committed reader of the forward topic sees
// each tick exactly once, whatever crashes. A rebalance during the batch aborts the transaction and the records
// are consumed again from the last commit, by whoever owns them then (KIP-447: the commit carries the group
// generation, and a new owner's offset fetch waits for a pending transactional commit).
func (f *forwarder) run(ctx context.Context) error {
	w := f.w
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	txnID := w.names.WorkerGroup + ".forward." + hex.EncodeToString(suffix)
	w.logger.Info("starting worker in forward mode", "worker_id", w.cfg.WorkerID, "group", w.names.WorkerGroup,
		"topic", w.names.Work, "forward", w.cfg.Forward, "transactional_id", txnID, "start", w.cfg.Start.String())

	w.startAt = w.cfg.Now()
	w.start = w.cfg.Start.Offset(w.startAt)
	sess, err := kgo.NewGroupTransactSession(w.opts("forward",
		kafka.WorkerConsumerOpts(w.names, w.start, w.cfg.SessionTimeout, w.cfg.InstanceID),
		kafka.ForwardOpts(txnID),
		[]kgo.Opt{
			kgo.OnPartitionsAssigned(f.assigned),
			kgo.OnPartitionsRevoked(f.released),
			kgo.OnPartitionsLost(f.released),
			kgo.AdjustFetchOffsetsFn(w.pinStart),
		})...)
	if err != nil {
		return fmt.Errorf("worker: transactional client: %w", err)
	}
	cl := sess.Client()
	w.setClient(cl)
	var runErr error
	defer func() {
		memberID, _ := cl.GroupMetadata() // the leave below names it
		sess.Close()
		if w.cfg.InstanceID != "" && !errors.Is(runErr, ErrFencedInstance) {
			w.leaveStatic(ctx, memberID)
		}
		w.logger.Info("worker stopped")
	}()

	if w.resultParts, w.dlqParts, err = w.partitionCounts(ctx, cl); err != nil {
		return err
	}
	fwdParts, err := kafka.WorkPartitions(ctx, kadm.NewClient(cl), w.cfg.Forward)
	if err != nil {
		return fmt.Errorf("worker: forward topic: %w", err)
	}

	defer background(ctx, func(ctx context.Context) { w.summarize(ctx, time.Minute) })()

	failures := 0
	for {
		var fetches kgo.Fetches
		switch wait, any := f.nextWait(w.cfg.Now()); {
		case any && wait <= 0:
			// A nil context is kgo's documented "return what is buffered, do not wait": records are ready.
			fetches = sess.PollRecords(nil, 1000) //nolint:staticcheck // SA1012: see above
		case any:
			pctx, cancel := context.WithTimeout(ctx, wait)
			fetches = sess.PollRecords(pctx, 1000)
			cancel()
		default:
			fetches = sess.PollRecords(ctx, 1000)
		}
		if fetches.IsClientClosed() || ctx.Err() != nil {
			w.logger.Info("stopping worker")
			return nil
		}
		var denied error
		fetches.EachError(func(topic string, p int32, err error) {
			if errors.Is(err, kerr.FencedInstanceID) {
				runErr = fmt.Errorf("worker %s: instance ID %q: %w", w.cfg.WorkerID, w.cfg.InstanceID, ErrFencedInstance)
				return
			}
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				w.logger.Warn("fetch error", "topic", topic, "partition", p, "error", err)
			}
			denied = cmp.Or(denied, w.denied(topic, err))
		})
		if runErr != nil {
			w.logger.Error("fenced: another worker joined the group with this instance ID; stopping", "instance_id", w.cfg.InstanceID)
			return runErr
		}
		if denied != nil {
			return fmt.Errorf("consuming: %w", denied)
		}
		f.hold(fetches.Records())
		recs, commitAt := f.take(w.cfg.Now())
		if len(recs) == 0 {
			continue
		}
		committed, err := f.batch(ctx, sess, recs, fwdParts, commitAt)
		switch {
		case errors.Is(err, errNotBegun):
			f.restore(recs) // nothing was sent and nothing rewound: they are still to forward, first
		case !committed:
			// The session rewinds to the committed offsets and delivers everything held again: what is held now
			// must not be forwarded before that (it would be forwarded twice).
			f.dropHeld()
		}
		if err != nil {
			if errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
				return fmt.Errorf("forwarding: %w", kafka.NeedACL(err, "Write", "transactional ID", txnID+" (prefixed ACL "+w.names.WorkerGroup+".forward.)"))
			}
			if errors.Is(err, kerr.TopicAuthorizationFailed) {
				return fmt.Errorf("forwarding: %w", kafka.NeedACL(err, "Write", "topic", w.cfg.Forward))
			}
			failures++
			w.logger.Error("forwarding transaction failed", "records", len(recs), "failures_in_a_row", failures, "error", err)
			if failures >= maxForwardFailures {
				return fmt.Errorf("worker: %d forwarding transactions in a row failed: %w", failures, err)
			}
			continue
		}
		failures = 0
	}
}

// hold adds polled records to the held ones and remembers the cancellations among them. A record at or below
// one held already means the session rewound; the held records from it on are replaced.
func (f *forwarder) hold(recs []*kgo.Record) {
	if len(recs) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		if !f.parts[r.Partition] {
			continue // released meanwhile
		}
		if cancel.Is(r) && !cancel.Genuine(r) {
			f.w.refusedCancels(r.Partition, 1)
		} else if cancel.Is(r) {
			if c, err := tick.DecodeCancel(r.Value); err == nil {
				f.cancels[c.Schedule] = append(f.cancels[c.Schedule], c)
			} // an unreadable one is dead-lettered when its turn comes (batch)
		}
		rs := f.held[r.Partition]
		if n := len(rs); n > 0 && r.Offset <= rs[n-1].rec.Offset {
			// The session rewound to the committed offsets (a transaction that did not commit): it delivers
			// again what is held from here on.
			i := 0
			for i < n && rs[i].rec.Offset < r.Offset {
				i++
			}
			rs = rs[:i]
		}
		f.held[r.Partition] = append(rs, heldRecord{rec: r, at: startAt(r)})
	}
}

// heldRecord is a record polled and not yet forwarded, with the instant it is due (startAt).
type heldRecord struct {
	rec *kgo.Record
	at  time.Time
}

// startAt is when a record is due: its tick's instant, or zero (at once) for anything else.
func startAt(r *kgo.Record) time.Time {
	if cancel.Is(r) {
		return time.Time{}
	}
	t, err := tick.Decode(r.Value)
	if err != nil || t.NotBefore == nil {
		return time.Time{}
	}
	return *t.NotBefore
}

// nextWait is how long until the first held record is due (any: something is held).
func (f *forwarder) nextWait(now time.Time) (wait time.Duration, any bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := time.Time{}
	for _, rs := range f.held {
		if len(rs) == 0 {
			continue
		}
		any = true
		at := rs[0].at
		if !at.After(now) {
			return 0, true
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if !any {
		return 0, false
	}
	return first.Sub(now), true
}

// take removes and returns the held records due at now (per partition, the due prefix) and, for each partition
// that keeps records held, the offset to commit: its first held record's.
func (f *forwarder) take(now time.Time) ([]*kgo.Record, map[int32]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*kgo.Record
	commitAt := map[int32]int64{}
	for p, rs := range f.held {
		n := 0
		for n < len(rs) && !rs[n].at.After(now) {
			out = append(out, rs[n].rec)
			n++
		}
		rest := rs[n:]
		if len(rest) == 0 {
			delete(f.held, p)
			continue
		}
		f.held[p] = rest
		commitAt[p] = rest[0].rec.Offset
	}
	return out, commitAt
}

// errNotBegun is batch's error when the transaction could not begin.
var errNotBegun = errors.New("beginning the transaction")

// dropHeld forgets every held record: after a transaction that did not commit, the session rewinds to the
// committed offsets and delivers them again.
func (f *forwarder) dropHeld() {
	f.mu.Lock()
	clear(f.held)
	f.mu.Unlock()
}

// restore puts records taken for a transaction that never began back in front of the held ones.
func (f *forwarder) restore(recs []*kgo.Record) {
	f.mu.Lock()
	defer f.mu.Unlock()
	by := map[int32][]heldRecord{}
	for _, r := range recs {
		by[r.Partition] = append(by[r.Partition], heldRecord{rec: r, at: startAt(r)})
	}
	for p, rs := range by {
		if f.parts[p] {
			f.held[p] = append(rs, f.held[p]...)
		}
	}
}

// cancelled returns a cancellation that applies to t, if any.
func (f *forwarder) cancelled(t tick.Tick) *tick.Cancel {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cancels[t.Schedule] {
		if c.Applies(t) {
			return &c
		}
	}
	return nil
}

// batch forwards recs in one transaction. A nil error with nothing committed means a rebalance aborted the
// transaction; the session has rewound to the committed offsets.
//
// commitAt holds, for partitions with records still held, the offset to commit instead of the one after the last
// record polled.
//
// It reports whether the transaction committed; errNotBegun means it never began.
func (f *forwarder) batch(ctx context.Context, sess *kgo.GroupTransactSession, recs []*kgo.Record, fwdParts int, commitAt map[int32]int64) (bool, error) {
	w := f.w
	if err := sess.Begin(); err != nil {
		return false, fmt.Errorf("%w: %w", errNotBegun, err)
	}
	var (
		mu      sync.Mutex
		prodErr error
		counts  = map[string]int{}
		dlq     = map[string]int{}
	)
	produce := func(r *kgo.Record) {
		sess.Produce(context.WithoutCancel(ctx), r, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				prodErr = cmp.Or(prodErr, err)
				mu.Unlock()
			}
		})
	}
	for _, rec := range recs {
		if cancel.Is(rec) {
			if _, err := tick.DecodeCancel(rec.Value); err == nil && cancel.Genuine(rec) {
				continue // remembered when polled; nothing to forward
			}
			// Unreadable, or not the leader's (refused when polled): dead-lettered below, as an unreadable tick.
		}
		start := w.cfg.Now()
		t, err := tick.Decode(rec.Value)
		if cancel.Is(rec) && !cancel.Genuine(rec) {
			t, err = tick.Tick{}, errForgedCancel // whatever its value holds, it is not forwarded
		}
		var c *tick.Cancel
		if err == nil {
			c = f.cancelled(t)
		}
		o, dl, run := w.decide(before{rec: rec, t: t, err: err, now: start, cancelled: c})
		switch {
		case !run && dl != nil:
			produce(w.deadLetterRecord(rec, o.reason, dl, 0, w.dlqParts))
			counts[resultDeadLettered]++
			dlq[o.reason]++
		case !run:
			counts[o.Status]++ // the status is its result's name
		default:
			o.Attempts = 1
			fwd := &kgo.Record{
				Topic: w.cfg.Forward,
				// The same schedule-and-shard partitioning as the work topic keeps one schedule's ticks in
				// order in the output too.
				Partition: tick.Partition(t.Schedule, t.Shard, fwdParts),
				Key:       rec.Key,
				Value:     rec.Value,
				Headers:   rec.Headers,
			}
			if size := recordSize(fwd); size > maxCopyBytes {
				// Refused by Kafka's limits, it would abort every transaction of this batch, forever.
				err := fmt.Errorf("record of %d bytes is too large to forward", size)
				o.Status, o.Error, o.reason = StatusDeadLettered, err.Error(), reasonTooLarge
				produce(w.deadLetterRecord(rec, o.reason, err, 1, w.dlqParts))
				counts[resultDeadLettered]++
				dlq[o.reason]++
				break
			}
			o.Status = StatusOK
			produce(fwd)
			counts[resultOK]++
			w.m.startDelay.Observe(start.Sub(t.StartAt()).Seconds())
		}
		o.FinishedAt = w.cfg.Now().UTC()
		o.DurationMS = float64(o.FinishedAt.Sub(start).Microseconds()) / 1000
		produce(w.resultRecord(rec, o, w.resultParts))
	}

	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// End flushes first, so every promise above has run when it returns... but the decision to commit must be
	// made before: flush here and check.
	if err := sess.Client().Flush(endCtx); err != nil {
		mu.Lock()
		prodErr = cmp.Or(prodErr, err)
		mu.Unlock()
	}
	mu.Lock()
	try := kgo.TransactionEndTry(prodErr == nil)
	mu.Unlock()
	if len(commitAt) > 0 {
		endCtx = kgo.PreTxnCommitFnContext(endCtx, func(req *kmsg.TxnOffsetCommitRequest) error {
			for i := range req.Topics {
				if req.Topics[i].Topic != w.names.Work {
					continue
				}
				for j := range req.Topics[i].Partitions {
					pp := &req.Topics[i].Partitions[j]
					if o, ok := commitAt[pp.Partition]; ok && o < pp.Offset {
						pp.Offset, pp.LeaderEpoch = o, -1
					}
				}
			}
			return nil
		})
	}
	committed, err := sess.End(endCtx, try)
	if err != nil {
		return false, fmt.Errorf("ending transaction: %w", err)
	}
	if prodErr != nil {
		return false, fmt.Errorf("producing: %w (transaction aborted)", prodErr)
	}
	if !committed {
		w.logger.Info("transaction aborted by a rebalance; the records will be consumed again", "records", len(recs))
		return false, nil
	}
	for r, n := range counts {
		w.count(r, n)
	}
	for r, n := range dlq {
		w.m.deadLetters.WithLabelValues(r).Add(float64(n))
	}
	w.logger.Debug("forwarded batch", "records", len(recs))
	return true, nil
}

func (f *forwarder) assigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	w := f.w
	f.mu.Lock()
	for _, p := range assigned[w.names.Work] {
		f.parts[p] = true
		delete(f.held, p)
	}
	n := len(f.parts)
	f.mu.Unlock()
	w.m.partitions.Set(float64(n))
	if w.ready != nil && !w.assignedYet.Swap(true) {
		w.ready.Set(ReadinessCondition, true)
	}
	w.logger.Info("partitions assigned", "partitions", assigned[w.names.Work], "owned", n)
}

func (f *forwarder) released(_ context.Context, _ *kgo.Client, released map[string][]int32) {
	w := f.w
	f.mu.Lock()
	for _, p := range released[w.names.Work] {
		delete(f.parts, p)
		delete(f.held, p)
	}
	n := len(f.parts)
	f.mu.Unlock()
	w.m.partitions.Set(float64(n))
	if len(released[w.names.Work]) > 0 {
		w.logger.Info("partitions released", "partitions", released[w.names.Work], "owned", n)
	}
}
