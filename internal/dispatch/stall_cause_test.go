package dispatch

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tickgroup/tickgroup/internal/kafkatest"
	"github.com/tickgroup/tickgroup/internal/leader"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// The tests of this file turn the cause that 80d4675 inferred for issue 45 (a leader silent for 90 s after a
// broker restart on Kafka 4.4.0, its group membership alive) into a reproduction on kfake: a transaction
// coordinator that keeps answering the leader's transactional requests with CONCURRENT_TRANSACTIONS (error 51),
// as a KIP-890 (transactions v2) coordinator does while it still completes an earlier transaction of the same
// transactional ID. What franz-go v1.22.3 does with that answer, from its source:
//
//   - Produce: sink.go handleReqRespBatch retries a partition answered CONCURRENT_TRANSACTIONS by a fallthrough
//     that skips even the record-retries check; handleRetryBatches fails the batch only once its first record's
//     context ends, RecordDeliveryTimeout passes (unset for the leader) or RecordRetries (unbounded by default) are
//     spent. Each retry first waits for a metadata refresh (handleRetryBatches' updateMeta), which the 500 ms
//     MetadataMinAge of kafka.Config.Opts paces: about one produce every 400 ms here. So Flush waits for the
//     term's context.
//   - EndTxn and InitProducerID: txn.go doWithConcurrentTransactions retries with no bound on tries or time,
//     backing off 20 ms, then 200 ms after 1 s, 500 ms after 2.5 s, 1 s after 5 s, until the context it was given
//     (EndTransaction's, ProducerID's: the term's) or the client's ends; ended between tries, it returns
//     CONCURRENT_TRANSACTIONS, not the context's error.
//   - AddPartitionsToTxn (sink.go doTxnReq) would retry under the client's context alone, but under transactions
//     v2 (kfake's default, and the KIP-890 coordinator the inference is about) franz-go sends none: a produce
//     (v12+) adds its partitions itself. The tests check that none was sent.

// ctBundle is a stall bundle whose kfake cluster the test can answer requests on.
type ctBundle struct {
	*stallBundle
	c *kfake.Cluster
}

func setupCT(t *testing.T) *ctBundle {
	t.Helper()
	c, names, opts, cl := kfakeCluster(t, "ct")
	return &ctBundle{stallBundle: &stallBundle{names: names, opts: opts, cl: cl}, c: c}
}

// ctHold answers the requests of some keys that the leader's transactional ID sends with CONCURRENT_TRANSACTIONS
// while it is on, and counts them. It also counts the AddPartitionsToTxn requests the cluster sees, answered or
// not (none under transactions v2).
type ctHold struct {
	txnID string
	on    atomic.Bool
	adds  atomic.Int64

	mu       sync.Mutex
	first    time.Time // the first answer since start
	answered map[kmsg.Key]int
	versions map[kmsg.Key]int16 // the version of the last request answered, by key
}

// hold installs a ctHold of keys on b's cluster, off until start.
func (b *ctBundle) hold(keys ...kmsg.Key) *ctHold {
	h := &ctHold{txnID: b.names.LeaderTransactionalID(0), answered: map[kmsg.Key]int{}, versions: map[kmsg.Key]int16{}}
	for _, key := range keys {
		b.c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			b.c.KeepControl()
			if !h.on.Load() || transactionalID(req) != h.txnID {
				return nil, nil, false // kfake answers it
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if h.first.IsZero() {
				h.first = time.Now()
			}
			h.answered[key]++
			h.versions[key] = req.GetVersion()
			return concurrentTransactions(req), nil, true
		})
	}
	b.c.ControlKey(int16(kmsg.AddPartitionsToTxn), func(kmsg.Request) (kmsg.Response, error, bool) {
		b.c.KeepControl()
		h.adds.Add(1)
		return nil, nil, false
	})
	return h
}

// start makes the broker answer CONCURRENT_TRANSACTIONS from now on, and counts anew.
func (h *ctHold) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.first, h.answered = time.Time{}, map[kmsg.Key]int{}
	h.on.Store(true)
}

// lift makes the broker answer normally again.
func (h *ctHold) lift() { h.on.Store(false) }

// count is how many requests of keys (all held keys: none given) were answered CONCURRENT_TRANSACTIONS since start.
func (h *ctHold) count(keys ...kmsg.Key) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for k, c := range h.answered {
		if len(keys) == 0 || slices.Contains(keys, k) {
			n += c
		}
	}
	return n
}

// heldFor is how long since the first answer (0: none yet).
func (h *ctHold) heldFor() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.first.IsZero() {
		return 0
	}
	return time.Since(h.first)
}

func (h *ctHold) version(key kmsg.Key) int16 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.versions[key]
}

// transactionalID is the transactional ID a request is sent for ("" for none, or a request of another kind).
func transactionalID(req kmsg.Request) string {
	var id *string
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		id = req.TransactionID
	case *kmsg.EndTxnRequest:
		id = &req.TransactionalID
	case *kmsg.InitProducerIDRequest:
		id = req.TransactionalID
	}
	if id == nil {
		return ""
	}
	return *id
}

// concurrentTransactions is the answer of a coordinator still completing an earlier transaction to req (a
// Produce, EndTxn or InitProducerID): CONCURRENT_TRANSACTIONS, for every partition of a produce, at the request's
// version (kfake writes the response at the version it carries).
func concurrentTransactions(req kmsg.Request) kmsg.Response {
	code := kerr.ConcurrentTransactions.Code
	switch req := req.(type) {
	case *kmsg.ProduceRequest:
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = req.Version
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID // by name up to v12, by ID from v13
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = code
				sp.BaseOffset = -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.EndTxnRequest:
		resp := kmsg.NewPtrEndTxnResponse()
		resp.Version = req.Version
		resp.ErrorCode = code
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := kmsg.NewPtrInitProducerIDResponse()
		resp.Version = req.Version
		resp.ErrorCode = code
		resp.ProducerEpoch = -1
		return resp
	}
	panic("concurrentTransactions: unexpected request " + kmsg.NameForKey(req.Key()))
}

// termRun is one term of a replica, run on its own goroutine.
type termRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// lead starts term n of r; the test's end stops it, if nothing did before.
func (r *stallReplica) lead(t *testing.T, n int64) *termRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	u := &termRun{cancel: cancel, done: make(chan struct{})}
	go func() { defer close(u.done); u.err = r.d.Lead(ctx, leader.Term{Number: n}) }()
	t.Cleanup(func() { cancel(); <-u.done })
	return u
}

// ended reports whether the term returned.
func (u *termRun) ended() bool {
	select {
	case <-u.done:
		return true
	default:
		return false
	}
}

// wait returns the term's result, once it ends on its own within d.
func (u *termRun) wait(t *testing.T, d time.Duration, what string) error {
	t.Helper()
	select {
	case <-u.done:
		return u.err
	case <-time.After(d):
		t.Fatalf("%s: the term did not end within %v", what, d)
		return nil
	}
}

// stop ends the term and returns its result.
func (u *termRun) stop() error {
	u.cancel()
	<-u.done
	return u.err
}

// eachSlotOnce checks that every slot of schedule name (one every period) from the first committed to the last
// is committed once: none lost, none doubled.
func (b *stallBundle) eachSlotOnce(t *testing.T, name string, every time.Duration) {
	t.Helper()
	var first, last time.Time
	for _, tk := range b.tickList(t) {
		if first.IsZero() || tk.Slot.Before(first) {
			first = tk.Slot
		}
		if tk.Slot.After(last) {
			last = tk.Slot
		}
	}
	ticks, n := b.ticks(t), 0
	for s := first; !s.After(last); s = s.Add(every) {
		n++
		if id := tick.ID(name, s, 0, 1); ticks[id] != 1 {
			t.Errorf("slot %s committed %d times, want 1", id, ticks[id])
		}
	}
	if n == 0 {
		t.Error("no slot committed")
	}
	t.Logf("%d slots, each committed once", n)
}

// silentFor is how long TestConcurrentTransactionsLeaveATermSilent holds a term: three times the stall timeout
// of the stall bundle's dispatcher, which TestConcurrentTransactionsStallATerm ends the same hold within.
const silentFor = 3 * time.Second

// TestConcurrentTransactionsLeaveATermSilent shows the failure mode without the stall watchdog (a stall timeout of
// an hour): a term whose transactional requests the broker answers with CONCURRENT_TRANSACTIONS waits as long as
// the broker answers so. franz-go v1.22.3 retries the request again and again and returns no error, so the term
// neither commits nor ends, while its context, the group membership in production, is alive: silence, not an
// error. Three requests are held, each on its own: the produce of a transaction's records (v12+, transactions
// v2: no AddPartitionsToTxn is sent), its EndTxn, and the InitProducerID that fences earlier leaders at the term's
// start. Held for silentFor (three times the bundle's 1 s stall timeout), each is answered so at least 10 times,
// and the term is still waiting, with no error logged and nothing committed. Once the broker answers normally
// again, the same term goes on, and every slot is committed once.
//
// What it shows: franz-go v1.22.3's behaviour, in the leader's call sequence, against a broker that keeps
// answering CONCURRENT_TRANSACTIONS; that 80d4675's inferred cause, a term waiting without bound on such a
// broker, holds for each of the three requests. What it does not show: that Kafka 4.4.0 answered
// CONCURRENT_TRANSACTIONS for 90 s in issue 45's broker-restart failure. That remains an inference.
func TestConcurrentTransactionsLeaveATermSilent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		key  kmsg.Key
		// fencing holds the term's first request, its fencing; otherwise the hold starts once ticks flow.
		fencing bool
	}{
		{name: "produce", key: kmsg.Produce},
		{name: "end txn", key: kmsg.EndTxn},
		{name: "init producer id", key: kmsg.InitProducerID, fencing: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupCT(t)
			h := b.hold(tt.key)
			r := b.dispatcher(t, nil)
			r.d.cfg.StallTimeout = time.Hour // the watchdog is out of the way
			if _, err := store.Put(t.Context(), b.cl, b.names.Schedules, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)}); err != nil {
				t.Fatal(err)
			}
			if tt.fencing {
				h.start()
			}
			u := r.lead(t, 1)
			if !tt.fencing {
				kafkatest.Eventually(t, 20*time.Second, "ticks of beat", func() bool { return len(b.ticks(t)) >= 3 })
				h.start()
			}
			kafkatest.Eventually(t, 20*time.Second, "a first CONCURRENT_TRANSACTIONS answer", func() bool { return h.count() > 0 })
			// The term's transaction before the held one was counted before the held one began.
			emitted, committed := counter(t, r.reg, "tickgroup_ticks_emitted_total"), len(b.ticks(t))

			kafkatest.Eventually(t, 30*time.Second, "10 answers over "+silentFor.String(), func() bool {
				return h.count() >= 10 && h.heldFor() >= silentFor
			})
			held, n := h.heldFor(), h.count()
			if u.ended() {
				t.Fatalf("the term ended while its %s was answered CONCURRENT_TRANSACTIONS: %v; want it still waiting", tt.name, u.err)
			}
			if got := counter(t, r.reg, "tickgroup_ticks_emitted_total"); got != emitted {
				t.Errorf("tickgroup_ticks_emitted_total went from %v to %v while held, want no commit", emitted, got)
			}
			if got := len(b.ticks(t)); got != committed {
				t.Errorf("%d ticks committed while held, want none", got-committed)
			}
			if strings.Contains(r.logs.String(), "level=ERROR") {
				t.Errorf("an error was logged while held, want silence:\n%s", r.logs.String())
			}
			if tt.fencing && strings.Contains(r.logs.String(), "leader term ready") {
				t.Error("the term got ready while its fencing was answered CONCURRENT_TRANSACTIONS")
			}
			if adds := h.adds.Load(); adds != 0 {
				t.Errorf("%d AddPartitionsToTxn requests, want none under transactions v2", adds)
			}
			t.Logf("%s (v%d) answered CONCURRENT_TRANSACTIONS %d times over %v; the term still waits, with no error",
				kmsg.NameForKey(int16(tt.key)), h.version(tt.key), n, held.Round(time.Millisecond))

			h.lift()
			lifted := time.Now()
			kafkatest.Eventually(t, 20*time.Second, "the term to commit again", func() bool {
				return counter(t, r.reg, "tickgroup_ticks_emitted_total") > emitted && len(b.ticks(t)) >= committed+3
			})
			t.Logf("the same term committed again %v after the broker answered normally", time.Since(lifted).Round(time.Millisecond))
			if err := u.stop(); err != nil {
				t.Errorf("Lead: %v", err)
			}
			if got := counter(t, r.reg, "tickgroup_leader_stalled_total"); got != 0 {
				t.Errorf("tickgroup_leader_stalled_total = %v, want 0", got)
			}
			b.eachSlotOnce(t, "beat", time.Second)
		})
	}
}

// TestConcurrentTransactionsStallATerm shows the stall watchdog ending what TestConcurrentTransactionsLeaveATermSilent
// shows lasting: with the bundle's 1 s stall timeout, a term whose transactional requests the broker answers
// with CONCURRENT_TRANSACTIONS ends with ErrStalled within the stall timeout, its quarter and the abort's second of
// the first such answer, and counts it. "produce": a transaction's produce is held. "end txn, then the fencing": its
// EndTxn is, and the next term, started while the broker still answers so, stalls in its fencing (InitProducerID)
// as well. In both, every call that franz-go kept retrying ended on the term's context: the watchdog never had to
// close a producer (its fallback for a call on the client's context alone). Once the broker answers normally, a
// new term emits, and every slot is committed once: none lost, none doubled.
//
// What it shows: that the watchdog bounds the silence franz-go v1.22.3 leaves a term in against a broker that
// keeps answering CONCURRENT_TRANSACTIONS, for these requests, and that the next term after the broker recovers
// loses and doubles nothing. What it does not show: that Kafka 4.4.0 answered so in issue 45, nor the path of
// 80d4675's inference in which BeginTransaction re-initialises a failed producer ID on context.Background: a term
// does not reach it, since a transaction that fails ends the term and its producer, and a term's first producer ID
// comes from its fencing, under the term's context. (franz-go's one other way there, an EndTxn below v5 that finds
// the cluster moved to transactions v2 since the transaction began, needs the feature level to rise under a
// running term.)
func TestConcurrentTransactionsStallATerm(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		keys []kmsg.Key
		// terms is how many terms stall while held: the one whose transaction is held, and, with InitProducerID
		// held, the next, in its fencing.
		terms int
	}{
		{name: "produce", keys: []kmsg.Key{kmsg.Produce}, terms: 1},
		{name: "end txn, then the fencing", keys: []kmsg.Key{kmsg.EndTxn, kmsg.InitProducerID}, terms: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupCT(t)
			h := b.hold(tt.keys...)
			r := b.dispatcher(t, nil)
			stall := r.d.cfg.StallTimeout
			limit := stall + stall/4 + closeAbortTimeout + time.Second // as TestTermGivesUpWhenCommitsHang allows
			if _, err := store.Put(t.Context(), b.cl, b.names.Schedules, schedule.Spec{Name: "beat", Every: schedule.Duration(time.Second)}); err != nil {
				t.Fatal(err)
			}
			u := r.lead(t, 1)
			kafkatest.Eventually(t, 20*time.Second, "ticks of beat", func() bool { return len(b.ticks(t)) >= 3 })
			h.start()

			for n := range int64(tt.terms) {
				if n > 0 {
					h.start() // counts the next term's answers alone
					u = r.lead(t, n+1)
				}
				err := u.wait(t, 20*time.Second, "held")
				took, answered := h.heldFor(), h.count()
				if !errors.Is(err, ErrStalled) {
					t.Fatalf("term %d: Lead returned %v, want ErrStalled", n+1, err)
				}
				if took > limit {
					t.Errorf("term %d ended %v after the first CONCURRENT_TRANSACTIONS answer, want at most %v", n+1, took, limit)
				}
				// franz-go retried before the watchdog ended the term: more than one answer.
				if answered < 2 {
					t.Errorf("term %d: %d requests answered CONCURRENT_TRANSACTIONS, want at least 2", n+1, answered)
				}
				var by []string
				for _, k := range tt.keys {
					if c := h.count(k); c > 0 {
						by = append(by, kmsg.NameForKey(int16(k))+" "+strconv.Itoa(c))
					}
				}
				t.Logf("term %d: %s answered CONCURRENT_TRANSACTIONS; ErrStalled %v after the first answer: %v",
					n+1, strings.Join(by, ", "), took.Round(time.Millisecond), err)
			}
			if tt.terms > 1 && strings.Count(r.logs.String(), "leader term ready") != 1 {
				t.Error("a term after the first got ready while its fencing was answered CONCURRENT_TRANSACTIONS")
			}
			if n := counter(t, r.reg, "tickgroup_leader_stalled_total"); n != float64(tt.terms) {
				t.Errorf("tickgroup_leader_stalled_total = %v, want %d", n, tt.terms)
			}
			if strings.Contains(r.logs.String(), "closing its producer") {
				t.Errorf("a stalled term did not stop on its context: the watchdog closed its producer\n%s", r.logs.String())
			}
			if n := h.adds.Load(); n != 0 {
				t.Errorf("%d AddPartitionsToTxn requests, want none under transactions v2", n)
			}

			h.lift()
			before, lifted := len(b.ticks(t)), time.Now()
			u = r.lead(t, int64(tt.terms)+1)
			kafkatest.Eventually(t, 20*time.Second, "a new term to emit", func() bool { return len(b.ticks(t)) >= before+3 })
			t.Logf("term %d emitted %v after the broker answered normally", tt.terms+1, time.Since(lifted).Round(time.Millisecond))
			if err := u.stop(); err != nil {
				t.Errorf("Lead: %v", err)
			}
			b.eachSlotOnce(t, "beat", time.Second)
		})
	}
}
