package forward

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
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

// MaxFailures is how many transactions in a row may fail with an error before Run gives up.
const MaxFailures = 5

// MaxCopyBytes is the largest record forwarded: Kafka's default limits (the producer's batch, the broker's
// message.max.bytes) are about 1 MB, and a record they refuse would abort every transaction of its batch,
// forever. A larger one is dead-lettered (Host.Refused).
const MaxCopyBytes = 900_000

// Config is what an Engine needs besides its Host.
type Config struct {
	Work    string // the work topic
	Forward string // the topic the ticks are forwarded to
	// TxnPrefix starts the transactional ID; a random suffix makes it unique per process (forwarding workers do
	// not fence each other by ID: the group generation in each transaction's commit stops a zombie).
	TxnPrefix string
	Now       func() time.Time
	Logger    *slog.Logger
}

// Host is the worker forward mode runs in. Forward mode shares the worker's group plumbing (start offsets,
// static membership, readiness, counters) and its records (the decision before a run, outcome records, dead
// letters) with the worker's lanes; Host is that, as the worker gives it.
type Host interface {
	// SessionOpts returns the options of the session's client: connection, group membership, start offsets
	// and hooks, with the transactional ID and the rebalance callbacks given.
	SessionOpts(txnID string, assigned, released func(context.Context, *kgo.Client, map[string][]int32)) []kgo.Opt
	// Open is called once the session's client exists, before the first poll; an error stops Run.
	Open(ctx context.Context, cl *kgo.Client) error
	// Leave is called after the session is closed, with the member ID it had and the error Run returns.
	Leave(ctx context.Context, memberID string, err error)
	// FetchErrors looks at the errors of a poll; an error it returns stops Run (a fenced instance, a missing
	// ACL).
	FetchErrors(fetches kgo.Fetches) error
	// Decide decides, before anything is forwarded, what becomes of rec, read as t (or unreadable: err), at now.
	// When it is not to be forwarded, out are the records that say so (a dead letter, then its outcome), result
	// the result to count once the transaction commits, and reason the dead-letter reason (empty: none).
	Decide(rec *kgo.Record, t tick.Tick, err error, now time.Time, cancelled *tick.Cancel) (forward bool, out []*kgo.Record, result, reason string)
	// Forwarded returns the outcome record of rec, forwarded from start on, with the result to count, and
	// counts its start delay.
	Forwarded(rec *kgo.Record, t tick.Tick, start time.Time) (outcome *kgo.Record, result string)
	// Refused returns the dead letter and the outcome record of rec, which cannot be forwarded (cause), with the
	// result and reason to count.
	Refused(rec *kgo.Record, t tick.Tick, start time.Time, cause error) (out []*kgo.Record, result, reason string)
	// Committed counts the results and dead letters (by reason) of a committed transaction.
	Committed(results, deadLetters map[string]int)
	// Assigned is told how many work partitions the engine holds after partitions were assigned (the first
	// call: the engine has joined its group), Released after partitions were revoked or lost.
	Assigned(n int)
	Released(n int)
	// ForgedCancel counts a cancel record of partition p that was not written in a transaction.
	ForgedCancel(p int32)
}

// Engine is forward mode: a consume-transform-produce loop in one kgo.GroupTransactSession, without lanes.
//
// Each polled batch of due records becomes one transaction holding the forwarded ticks, their outcome records,
// any dead letters and the batch's consumed offsets, so the output and the commit are atomic: a read_committed
// reader of the forward topic sees each tick exactly once, whatever crashes. A rebalance during the batch aborts
// the transaction and the records are consumed again from the last commit, by whoever owns them then (KIP-447:
// the commit carries the group generation, and a new owner's offset fetch waits for a pending transactional
// commit).
//
// Held ticks. Ticks arrive up to the leader's --lead before their instant (tick.NotBefore). The engine keeps
// them (Held), per partition and in offset order, and forwards each on its instant. Each transaction commits,
// for a partition with records still held, the offset of the first one held (the commit request is rewritten
// with kgo.PreTxnCommitFnContext; kgo records the offsets as sent): a crash or a rebalance therefore delivers
// the held records again, and nothing is forwarded twice or skipped. After a transaction that did not commit,
// kgo rewinds the session to the committed offsets and delivers the records from there again; Held.Hold
// notices the lower offsets and replaces what it held.
//
// A manual trigger behind a held tick of its partition waits for it (at most --lead): forwarding it out of order
// would forward it again after a crash, since the committed offset cannot pass the held tick.
type Engine struct {
	cfg  Config
	host Host
	held *Held
}

// NewEngine returns forward mode for host.
func NewEngine(cfg Config, host Host) *Engine {
	return &Engine{cfg: cfg, host: host, held: New(host.ForgedCancel)}
}

// Run forwards until ctx ends (then it returns nil), or until a transaction failed MaxFailures times in a row, a
// missing ACL or the Host stops it.
func (e *Engine) Run(ctx context.Context) (runErr error) {
	cfg := &e.cfg
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	txnID := cfg.TxnPrefix + hex.EncodeToString(suffix)
	cfg.Logger.Info("forwarding", "forward", cfg.Forward, "transactional_id", txnID)
	sess, err := kgo.NewGroupTransactSession(e.host.SessionOpts(txnID, e.assigned, e.released)...)
	if err != nil {
		return fmt.Errorf("forward: transactional client: %w", err)
	}
	cl := sess.Client()
	defer func() {
		memberID, _ := cl.GroupMetadata() // Leave names it
		sess.Close()
		e.host.Leave(ctx, memberID, runErr)
	}()
	if err := e.host.Open(ctx, cl); err != nil {
		return err
	}
	fwdParts, err := kafka.WorkPartitions(ctx, kadm.NewClient(cl), cfg.Forward)
	if err != nil {
		return fmt.Errorf("forward topic: %w", err)
	}

	failures := 0
	for {
		var fetches kgo.Fetches
		switch wait, held := e.held.NextWait(cfg.Now()); {
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
			return nil
		}
		if err := e.host.FetchErrors(fetches); err != nil {
			return err
		}
		e.held.Hold(fetches.Records())
		recs, commitAt := e.held.Take(cfg.Now())
		if len(recs) == 0 {
			continue
		}
		committed, err := e.batch(ctx, sess, recs, fwdParts, commitAt)
		switch {
		case errors.Is(err, errNotBegun):
			e.held.Restore(recs) // nothing was sent and nothing rewound: they are still to forward, first
		case !committed:
			// The session rewinds to the committed offsets and delivers everything held again: what is held now
			// must not be forwarded before that (it would be forwarded twice).
			e.held.Drop()
		}
		if err != nil {
			if errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
				return fmt.Errorf("forwarding: %w", kafka.NeedACL(err, "Write", "transactional ID", txnID+" (prefixed ACL "+cfg.TxnPrefix+")"))
			}
			if errors.Is(err, kerr.TopicAuthorizationFailed) {
				return fmt.Errorf("forwarding: %w", kafka.NeedACL(err, "Write", "topic", cfg.Forward))
			}
			failures++
			cfg.Logger.Error("forwarding transaction failed", "records", len(recs), "failures_in_a_row", failures, "error", err)
			if failures >= MaxFailures {
				return fmt.Errorf("%d forwarding transactions in a row failed: %w", failures, err)
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
func (e *Engine) batch(ctx context.Context, sess *kgo.GroupTransactSession, recs []*kgo.Record, fwdParts int, commitAt map[int32]int64) (bool, error) {
	if err := sess.Begin(); err != nil {
		return false, fmt.Errorf("%w: %w", errNotBegun, err)
	}
	b := &txnBatch{ctx: ctx, sess: sess, results: map[string]int{}, dlq: map[string]int{}}
	for _, rec := range recs {
		e.take(b, rec, fwdParts)
	}
	committed, err := e.end(ctx, b, commitAt)
	if err != nil || !committed {
		if err == nil {
			e.cfg.Logger.Info("transaction aborted by a rebalance; the records will be consumed again", "records", len(recs))
		}
		return false, err
	}
	e.host.Committed(b.results, b.dlq)
	e.cfg.Logger.Debug("forwarded batch", "records", len(recs))
	return true, nil
}

// txnBatch is what one transaction of batch produces and counts.
type txnBatch struct {
	ctx     context.Context
	sess    *kgo.GroupTransactSession
	mu      sync.Mutex
	prodErr error          // the first produce error: the transaction aborts
	results map[string]int // by result
	dlq     map[string]int // by dead-letter reason
}

// produce produces rs in the transaction.
func (b *txnBatch) produce(rs ...*kgo.Record) {
	for _, r := range rs {
		b.sess.Produce(context.WithoutCancel(b.ctx), r, func(_ *kgo.Record, err error) {
			if err != nil {
				b.failed(err)
			}
		})
	}
}

func (b *txnBatch) failed(err error) {
	b.mu.Lock()
	b.prodErr = cmp.Or(b.prodErr, err)
	b.mu.Unlock()
}

func (b *txnBatch) count(result, reason string) {
	b.results[result]++
	if reason != "" {
		b.dlq[reason]++
	}
}

// take decides one polled record: a genuine cancel is passed over (remembered when polled); a tick is forwarded
// with its outcome, or refused (too large, unreadable, forged, cancelled) with what the host writes for it.
func (e *Engine) take(b *txnBatch, rec *kgo.Record, fwdParts int) {
	cfg := &e.cfg
	if cancel.Is(rec) {
		if _, err := tick.DecodeCancel(rec.Value); err == nil && cancel.Genuine(rec) {
			return // remembered when polled; nothing to forward
		}
		// Unreadable, or not the leader's (refused when polled): dead-lettered below, as an unreadable tick.
	}
	start := cfg.Now()
	t, err := tick.Decode(rec.Value)
	if cancel.Is(rec) && !cancel.Genuine(rec) {
		t, err = tick.Tick{}, cancel.ErrForged // whatever its value holds, it is not forwarded
	}
	var c *tick.Cancel
	if err == nil {
		c = e.held.Cancelled(t)
	}
	forward, out, result, reason := e.host.Decide(rec, t, err, start, c)
	if !forward {
		b.produce(out...)
		b.count(result, reason)
		return
	}
	fwd := &kgo.Record{
		Topic: cfg.Forward,
		// The same schedule-and-shard partitioning as the work topic keeps one schedule's ticks in order in
		// the output too.
		Partition: tick.Partition(t.Schedule, t.Shard, fwdParts),
		Key:       rec.Key,
		Value:     rec.Value,
		Headers:   rec.Headers,
	}
	if size := kafka.RecordSize(fwd); size > MaxCopyBytes {
		out, result, reason := e.host.Refused(rec, t, start, fmt.Errorf("record of %d bytes is too large to forward", size))
		b.produce(out...)
		b.count(result, reason)
		return
	}
	outcome, result := e.host.Forwarded(rec, t, start)
	b.produce(fwd, outcome)
	b.count(result, "")
}

// end ends b's transaction: committed with the offsets (none past commitAt's) when every record was produced,
// aborted otherwise. committed is false, with no error, when a rebalance aborted it.
func (e *Engine) end(ctx context.Context, b *txnBatch, commitAt map[int32]int64) (bool, error) {
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	// End flushes first, so every promise above has run when it returns... but the decision to commit must be
	// made before: flush here and check.
	if err := b.sess.Client().Flush(endCtx); err != nil {
		b.failed(err)
	}
	b.mu.Lock()
	prodErr := b.prodErr
	b.mu.Unlock()
	try := kgo.TransactionEndTry(prodErr == nil)
	if len(commitAt) > 0 {
		endCtx = kgo.PreTxnCommitFnContext(endCtx, e.capOffsets(commitAt))
	}
	committed, err := b.sess.End(endCtx, try)
	if err != nil {
		return false, fmt.Errorf("ending transaction: %w", err)
	}
	if prodErr != nil {
		return false, fmt.Errorf("producing: %w (transaction aborted)", prodErr)
	}
	return committed, nil
}

// capOffsets returns the hook that keeps the transaction's offset commit of the work topic at or below commitAt.
func (e *Engine) capOffsets(commitAt map[int32]int64) func(*kmsg.TxnOffsetCommitRequest) error {
	return func(req *kmsg.TxnOffsetCommitRequest) error {
		for i := range req.Topics {
			if req.Topics[i].Topic != e.cfg.Work {
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
	}
}

func (e *Engine) assigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	n := e.held.Assign(assigned[e.cfg.Work])
	e.host.Assigned(n)
	e.cfg.Logger.Info("partitions assigned", "partitions", assigned[e.cfg.Work], "owned", n)
}

func (e *Engine) released(_ context.Context, _ *kgo.Client, released map[string][]int32) {
	n := e.held.Release(released[e.cfg.Work])
	e.host.Released(n)
	if len(released[e.cfg.Work]) > 0 {
		e.cfg.Logger.Info("partitions released", "partitions", released[e.cfg.Work], "owned", n)
	}
}
