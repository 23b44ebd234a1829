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
	"github.com/tickgroup/tickgroup/internal/forward"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// maxForwardFailures is how many transactions in a row may fail with an error before Run gives up.
const maxForwardFailures = 5

// forwarder is forward mode, an engine of its own beside the lanes: one transactional session, no lanes.
//
// Held ticks. Ticks arrive up to the leader's --lead before their instant (tick.NotBefore). The forwarder keeps
// them (internal/forward), per partition and in offset order, and forwards each on its instant. Each transaction
// commits, for a partition with records still held, the offset of the first one held (the commit request is
// rewritten with kgo.PreTxnCommitFnContext; kgo records the offsets as sent): a crash or a rebalance therefore
// delivers the held records again, and nothing is forwarded twice or skipped. After a transaction that did not
// commit, kgo rewinds the session to the committed offsets and delivers the records from there again;
// forward.Held.Hold notices the lower offsets and replaces what it held.
//
// A manual trigger behind a held tick of its partition waits for it (at most --lead): forwarding it out of order
// would forward it again after a crash, since the committed offset cannot pass the held tick.
type forwarder struct {
	w    *Worker
	held *forward.Held // records polled and not yet forwarded, and the cancellations read
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
		switch wait, held := f.held.NextWait(w.cfg.Now()); {
		case held && wait <= 0:
			// A nil context is kgo's documented "return what is buffered, do not wait": records are ready.
			fetches = sess.PollRecords(nil, 1000) //nolint:staticcheck // SA1012: see above
		case held:
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
		f.held.Hold(fetches.Records())
		recs, commitAt := f.held.Take(w.cfg.Now())
		if len(recs) == 0 {
			continue
		}
		committed, err := f.batch(ctx, sess, recs, fwdParts, commitAt)
		switch {
		case errors.Is(err, errNotBegun):
			f.held.Restore(recs) // nothing was sent and nothing rewound: they are still to forward, first
		case !committed:
			// The session rewinds to the committed offsets and delivers everything held again: what is held now
			// must not be forwarded before that (it would be forwarded twice).
			f.held.Drop()
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

// errNotBegun is batch's error when the transaction could not begin.
var errNotBegun = errors.New("beginning the transaction")

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
			c = f.held.Cancelled(t)
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
	n := f.held.Assign(assigned[w.names.Work])
	w.m.partitions.Set(float64(n))
	if w.ready != nil && !w.assignedYet.Swap(true) {
		w.ready.Set(ReadinessCondition, true)
	}
	w.logger.Info("partitions assigned", "partitions", assigned[w.names.Work], "owned", n)
}

func (f *forwarder) released(_ context.Context, _ *kgo.Client, released map[string][]int32) {
	w := f.w
	n := f.held.Release(released[w.names.Work])
	w.m.partitions.Set(float64(n))
	if len(released[w.names.Work]) > 0 {
		w.logger.Info("partitions released", "partitions", released[w.names.Work], "owned", n)
	}
}
