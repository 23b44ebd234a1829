package leader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Config configures an Elector.
type Config struct {
	// Topic is the single-partition ticker topic. Required.
	Topic string
	// Group is the consumer group of the ticker replicas. Required.
	Group string
	// GroupProtocol is the group protocol of the election: classic (the default, also for "") or consumer
	// (KIP-848, Kafka 4.0+), where the broker assigns partition 0 and decides the session timeout and heartbeat
	// interval itself (group.consumer.session.timeout.ms and group.consumer.heartbeat.interval.ms), so
	// SessionTimeout and HeartbeatInterval below apply only to the classic protocol.
	GroupProtocol kafka.GroupProtocol
	// SessionTimeout is how long the coordinator waits for a silent member before handing partition 0 on: the
	// crash failover time. It must be within the broker's group.min/max.session.timeout.ms. Defaults to 10s.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often members heartbeat; a graceful handoff takes about one. Defaults to 1s.
	HeartbeatInterval time.Duration
	// RebalanceTimeout bounds how long a rebalance waits for members to rejoin. Defaults to 30s.
	RebalanceTimeout time.Duration
	// RejoinBackoff is the first pause before rejoining after a failed term; it doubles up to 10s, and starts
	// again from here after a membership of a minute or more. Defaults to 1s.
	RejoinBackoff time.Duration
	// InstanceName identifies this replica in logs. Defaults to the kgo member ID.
	InstanceName string
	// InstanceID, when set, makes this replica a static group member (KIP-345): restarted with the same ID
	// within the session timeout, it takes its assignment (and leadership, if it led) back at once, without a
	// rebalance. A graceful stop leaves the group explicitly by instance ID (a static member's Close does
	// not), so leadership still moves within a heartbeat. Two running replicas must never share an ID: the
	// group fences the older one, and its Run returns ErrFencedInstance. Off by default.
	InstanceID string
	// Leaders is the number of leaders of the namespace (the ticker topic's partitions), exported as
	// tickgroup_leaders for the alert that finds a partition nobody leads. Zero exports nothing.
	Leaders int
	// Readiness, when set, gets the condition ReadinessCondition: false from New, true once the first
	// assignment arrived (as Joined), false again as soon as Run's context ends (shutdown began), so a replica
	// that is handing over is taken out of service before it has left the group. Nil sets nothing.
	Readiness *admin.Readiness
	// Gate, when set, must be open for this replica to take part in the election: while it refuses, the
	// Elector stays out of the ticker group, and a refusal that comes while in the group makes it leave (ending
	// a term as a graceful stop does), so partition 0 goes to a replica that may lead. It joins again when the
	// gate opens. Nil is always open.
	Gate Gate
}

// A Gate says whether this replica may lead now. package clock's Monitor is one: a replica whose clock is off
// must not decide when ticks start.
type Gate interface {
	// Refusal says why this replica must not lead now, or "" when it may.
	Refusal() string
	// Changed returns a channel that is closed when Refusal next changes between empty and not.
	Changed() <-chan struct{}
}

// open is the Gate of a Config without one.
type open struct{}

func (open) Refusal() string          { return "" }
func (open) Changed() <-chan struct{} { return nil }

// ReadinessCondition is the name of the readiness condition the Elector sets (the worker's has the same name).
const ReadinessCondition = "group"

// Term is one uninterrupted period of leadership of this process, of one partition of the ticker topic.
type Term struct {
	// Number counts the terms of this process, from 1.
	Number int64
	// Partition is the ticker-topic partition led: the leader (0 in a namespace with one leader).
	Partition int32
	// MemberID and Generation are the group membership under which partition 0 was assigned.
	MemberID   string
	Generation int32
	// Unreachable returns when the membership's group client last failed to reach its group coordinator (a
	// failed dial, or a group request cut off), the zero time if it never did: a term's stall watchdog counts a stall only from then on
	// (see reach). Nil in a Term made by hand: never.
	Unreachable func() time.Time
}

// LeadFunc runs one term. It must return soon after ctx is done. A non-nil error ends the term and makes the
// Elector leave the group and rejoin.
type LeadFunc func(ctx context.Context, term Term) error

// ErrFencedInstance is returned by Run when another replica joined the group with this one's instance ID.
var ErrFencedInstance = errors.New("another replica joined the ticker group with this instance ID (fenced)")

// ErrPartitionRevoked and ErrPartitionLost are the causes of a term's context when partition 0 goes.
var (
	ErrPartitionRevoked = errors.New("partition revoked")
	ErrPartitionLost    = errors.New("partition lost")
)

// Elector runs LeadFunc while this process owns partition 0 of the ticker topic.
type Elector struct {
	cfg     Config
	opts    []kgo.Opt
	lead    LeadFunc
	logger  *slog.Logger
	metrics *metrics

	mu        sync.Mutex
	terms     int64
	current   map[int32]*running // by ticker-topic partition
	abandoned []*running         // lost terms, for the log of awaitTerms; pruned as they finish
	stopping  bool               // Run's context ended: readiness stays false

	// live counts every term's goroutine, current or abandoned; Run waits for it before returning. Add happens
	// only in the rebalance callbacks, which never run once the member's client is closed, so Add never races
	// with Wait.
	live sync.WaitGroup

	joined chan struct{} // closed once the first assignment (of anything, even nothing) arrived
	joinMu sync.Once
}

type running struct {
	term   Term
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// New returns an Elector. opts are the connection options (kafka.Config.Opts).
func New(cfg Config, opts []kgo.Opt, lead LeadFunc, logger *slog.Logger, reg prometheus.Registerer) (*Elector, error) {
	if cfg.Topic == "" || cfg.Group == "" {
		return nil, errors.New("leader: topic and group are required")
	}
	if lead == nil {
		return nil, errors.New("leader: a LeadFunc is required")
	}
	cfg.SessionTimeout = cmp.Or(cfg.SessionTimeout, 10*time.Second)
	cfg.HeartbeatInterval = cmp.Or(cfg.HeartbeatInterval, time.Second)
	cfg.RebalanceTimeout = cmp.Or(cfg.RebalanceTimeout, 30*time.Second)
	cfg.RejoinBackoff = cmp.Or(cfg.RejoinBackoff, time.Second)
	if cfg.HeartbeatInterval >= cfg.SessionTimeout {
		return nil, fmt.Errorf("leader: heartbeat interval %v must be shorter than the session timeout %v", cfg.HeartbeatInterval, cfg.SessionTimeout)
	}
	if cfg.Readiness != nil {
		cfg.Readiness.Set(ReadinessCondition, false)
	}
	if cfg.Gate == nil {
		cfg.Gate = open{}
	}
	m := newMetrics(reg)
	if cfg.Leaders > 0 {
		m.leaders.Set(float64(cfg.Leaders))
	}
	return &Elector{
		cfg:     cfg,
		opts:    opts,
		lead:    lead,
		logger:  logger.With("component", "leader"),
		metrics: m,
		current: map[int32]*running{},
		joined:  make(chan struct{}),
	}, nil
}

// Joined is closed once this process has been in the group once (its first assignment arrived).
func (e *Elector) Joined() <-chan struct{} { return e.joined }

// Leading reports whether this process holds a term now: a partition is assigned and its term has not ended.
// A lost term that has not returned yet does not count.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.current) > 0
}

// Led returns the partitions this process leads now, in order.
func (e *Elector) Led() []int32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]int32, 0, len(e.current))
	for p := range e.current {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Run takes part in the election until ctx ends. On return this process has left the group and no term runs:
// Run waits for every term it started, including those abandoned when partition 0 was lost.
func (e *Elector) Run(ctx context.Context) error {
	// Readiness goes first, the moment shutdown begins: the handover below takes a heartbeat or more.
	stopReady := context.AfterFunc(ctx, func() { e.setReady(false, true) })
	defer stopReady()
	defer e.awaitTerms()
	backoff := e.cfg.RejoinBackoff
	for {
		if !e.waitGate(ctx) {
			return nil
		}
		joined := time.Now()
		err := e.member(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if time.Since(joined) >= healthyMembership {
			backoff = e.cfg.RejoinBackoff // the failures before a long healthy membership are forgotten
		}
		if errors.Is(err, errGateClosed) {
			continue // no backoff: nothing failed, and the gate decides when to rejoin
		}
		if errors.Is(err, ErrFencedInstance) {
			e.logger.Error("fenced: another replica joined the group with this instance ID; stopping", "instance_id", e.cfg.InstanceID)
			return err
		}
		if kafka.IsACLError(err) {
			return fmt.Errorf("leader: %w", err) // rejoining will be refused again
		}
		e.logger.Warn("left the group after a failed term; rejoining", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// healthyMembership is how long a membership must have lasted for the rejoin backoff to start again from
// Config.RejoinBackoff: a term that fails after a minute of healthy membership repeats no failure before it.
const healthyMembership = time.Minute

// errGateClosed ends a membership whose gate closed.
var errGateClosed = errors.New("the gate closed")

// waitGate returns once the gate is open (true), or when ctx ends (false). A refusal is logged once per wait.
func (e *Elector) waitGate(ctx context.Context) bool {
	logged := false
	for {
		changed := e.cfg.Gate.Changed()
		why := e.cfg.Gate.Refusal()
		if why == "" {
			if logged {
				e.logger.Debug("the gate opened")
			}
			return true
		}
		if !logged {
			// Debug only: the gate's owner logs its own state (package clock warns once on a skewed clock).
			e.logger.Debug("not taking part in the election", "reason", why)
			logged = true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// member is one group membership: join, lead while assigned, leave when ctx ends, a term fails or the gate
// closes.
func (e *Elector) member(ctx context.Context) error {
	gate := e.cfg.Gate.Changed()
	if e.cfg.Gate.Refusal() != "" {
		return errGateClosed // it closed since waitGate looked
	}
	// The failures of this membership's terms. Each membership has its own channel, so a late failure of an
	// earlier membership's term (one that began between the first failure and the client's close) cannot end
	// this one.
	failed := make(chan error, 1)
	// The protocol's balancer: eager balancers would move partition 0 on every membership change. Classic's
	// cooperative-sticky and the consumer protocol's server-side assignment leave it with its owner when
	// standbys come and go.
	role := e.cfg.GroupProtocol.Opts()
	if e.cfg.InstanceID != "" {
		role = append(role, kgo.InstanceID(e.cfg.InstanceID))
	}
	r := newReach()
	cl, err := kgo.NewClient(append(append(e.opts[:len(e.opts):len(e.opts)], role...),
		kgo.WithHooks(r),
		kgo.ConsumerGroup(e.cfg.Group),
		kgo.ConsumeTopics(e.cfg.Topic),
		// Under the consumer protocol the broker decides the session timeout and heartbeat interval, and kgo
		// ignores these two; the rebalance timeout bounds the revocation of partition 0 under both.
		kgo.SessionTimeout(e.cfg.SessionTimeout),
		kgo.HeartbeatInterval(e.cfg.HeartbeatInterval),
		kgo.RebalanceTimeout(e.cfg.RebalanceTimeout),
		// Membership is all we want from this group: no offsets, no records.
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
			e.markJoined()
			parts := assigned[e.cfg.Topic]
			if len(parts) == 0 {
				return
			}
			if e.cfg.Gate.Refusal() != "" {
				// The gate closed a moment ago: no term, and end this membership, so partition 0 is not held
				// without a term even if the gate opens again before member looks.
				select {
				case failed <- errGateClosed:
				default:
				}
				return
			}
			for _, p := range parts {
				e.start(cl, p, r.last, failed)
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
			e.markJoined()
			e.endTerms(revoked[e.cfg.Topic], ErrPartitionRevoked)
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			e.abandonTerms(lost[e.cfg.Topic], ErrPartitionLost)
		}),
	)...)
	if err != nil {
		return fmt.Errorf("leader: creating group client: %w", err)
	}
	// The election client never reads the ticker topic (the leader reads its state with its own client).
	cl.PauseFetchTopics(e.cfg.Topic)
	e.logger.Info("joining the ticker group", "group", e.cfg.Group, "topic", e.cfg.Topic)

	// Group management runs in the client's goroutines; polling keeps the client alive and surfaces fatal errors.
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		for {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() || ctx.Err() != nil {
				return
			}
			fs.EachError(func(t string, p int32, err error) {
				if errors.Is(err, kerr.FencedInstanceID) {
					select {
					case failed <- ErrFencedInstance:
					default:
					}
					return
				}
				e.logger.Debug("group client poll error", "topic", t, "partition", p, "err", err)
				if errors.Is(err, kerr.GroupAuthorizationFailed) {
					select {
					case failed <- kafka.NeedACL(err, "Read", "group", e.cfg.Group):
					default:
					}
				}
			})
		}
	}()

	var termErr error
wait:
	for {
		select {
		case <-ctx.Done():
		case termErr = <-failed:
		case <-gate:
			gate = e.cfg.Gate.Changed()
			why := e.cfg.Gate.Refusal()
			if why == "" {
				continue
			}
			e.logger.Info("may not lead now; leaving the ticker group", "reason", why)
			termErr = errGateClosed
		}
		break wait
	}
	// Close revokes partition 0 first (our callback stops the term and waits for it), then leaves the group,
	// so a graceful stop hands leadership over in about one heartbeat.
	e.logger.Info("leaving the ticker group")
	memberID, _ := cl.GroupMetadata() // the leave below names it
	cl.Close()
	<-pollDone
	e.endTerms(e.Led(), errLeftGroup)
	if e.cfg.InstanceID != "" && !errors.Is(termErr, ErrFencedInstance) {
		if err := e.leaveStatic(ctx, memberID); errors.Is(err, ErrFencedInstance) {
			return err
		}
	}
	return termErr
}

// leaveStatic removes this static member from the group: Close does not, so without it a graceful stop would
// leave partition 0 with a member that is gone until the session timeout.
//
// It leaves as memberID under the instance ID, not by the instance ID alone, because the group may have
// handed the instance ID to another replica already, and this one may not have heard of it yet. A replica
// started with the same ID takes over this one's assignment at once (no rebalance), so it leads, and its
// producer fences this one's term; that term failure can come before the heartbeat that would say
// FENCED_INSTANCE_ID. Leaving by the instance ID alone would then remove the new replica from the group, and
// the rejoin after the failed term would take the ID back and fence it: the older replica would stay and the
// newer one exit, the reverse of the rule. With the member ID the coordinator removes nothing and answers
// FENCED_INSTANCE_ID, and leaveStatic returns ErrFencedInstance. A membership that never joined has no member
// ID and leaves by the instance ID alone (a restart stopped before it joined frees the slot of the process it
// replaces).
func (e *Elector) leaveStatic(ctx context.Context, memberID string) error {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(e.opts...)
	if err != nil {
		e.logger.Warn("leaving the ticker group by instance ID", "instance_id", e.cfg.InstanceID, "err", err)
		return err
	}
	defer cl.Close()
	err = kafka.LeaveStatic(lctx, cl, e.cfg.Group, e.cfg.InstanceID, memberID, "graceful stop")
	switch {
	case errors.Is(err, kerr.FencedInstanceID):
		return ErrFencedInstance
	case err != nil:
		e.logger.Warn("leaving the ticker group by instance ID", "instance_id", e.cfg.InstanceID, "member_id", memberID, "err", err)
	}
	return err
}

func (e *Elector) markJoined() {
	e.joinMu.Do(func() {
		close(e.joined)
		e.setReady(true, false)
	})
}

// setReady sets the readiness condition, if there is one. Once stopping, it stays false: a late first
// assignment during shutdown does not make the replica ready again.
func (e *Elector) setReady(ok, stopping bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stopping = e.stopping || stopping
	if e.cfg.Readiness != nil {
		e.cfg.Readiness.Set(ReadinessCondition, ok && !e.stopping)
	}
}

// awaitTerms waits for the goroutines of all terms, so that on Run's return no term function runs. Only lost
// terms can still run here (a revoked or failed term was awaited by its callback or has returned): a lost
// term's callback could not wait for it, and Run is the owner it handed the wait to.
func (e *Elector) awaitTerms() {
	e.mu.Lock()
	n := len(e.pruneAbandoned())
	e.mu.Unlock()
	if n > 0 {
		e.logger.Info("waiting for lost terms to stop", "terms", n)
	}
	e.live.Wait()
}

// start begins a new term, which reports its failure on failed. It runs inside OnPartitionsAssigned and must
// not block.
func (e *Elector) start(cl *kgo.Client, p int32, unreachable func() time.Time, failed chan<- error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current[p] != nil {
		return // already leading: a cooperative rebalance re-confirmed our ownership
	}
	e.terms++
	member, gen := cl.GroupMetadata()
	term := Term{Number: e.terms, Partition: p, MemberID: member, Generation: gen, Unreachable: unreachable}
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &running{term: term, cancel: cancel, done: make(chan struct{})}
	e.current[p] = r
	e.metrics.set(p, true, len(e.current))
	e.metrics.changes.Inc()
	e.logger.Info("leading", "term", term.Number, "leader", p, "generation", gen, "member_id", member)
	e.live.Go(func() {
		defer close(r.done)
		err := e.lead(ctx, term)
		if errors.Is(context.Cause(ctx), ErrPartitionLost) {
			e.logger.Info("lost term stopped", "term", term.Number)
		}
		if ctx.Err() == nil {
			// The term ended on its own: fenced, or a commit that cannot be confirmed. Give up partition 0.
			if err == nil {
				err = errors.New("term ended")
			}
			e.logger.Error("term failed; stepping down", "term", term.Number, "leader", p, "err", err)
			e.mu.Lock()
			if e.current[p] == r {
				delete(e.current, p)
				e.metrics.set(p, false, len(e.current))
			}
			e.mu.Unlock()
			select {
			case failed <- err:
			default:
			}
		}
	})
}

// errLeftGroup is the cause of a term still running when the member's client has closed. The close revokes
// partition 0 first, so it is seldom seen.
var errLeftGroup = errors.New("left the group")

// take detaches the current terms of parts, so that no other callback stops them too. Abandoned ones are
// remembered until they finish.
func (e *Elector) take(parts []int32, abandon bool) []*running {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*running
	for _, p := range parts {
		r := e.current[p]
		if r == nil {
			continue
		}
		delete(e.current, p)
		e.metrics.set(p, false, len(e.current))
		out = append(out, r)
		if abandon {
			e.abandoned = append(e.pruneAbandoned(), r)
		}
	}
	return out
}

// pruneAbandoned drops the abandoned terms that have finished and returns the rest. e.mu is held.
func (e *Elector) pruneAbandoned() []*running {
	e.abandoned = slices.DeleteFunc(e.abandoned, func(r *running) bool {
		select {
		case <-r.done:
			return true
		default:
			return false
		}
	})
	return e.abandoned
}

// endTerms cancels the current terms of parts with cause and waits until their functions returned (their
// transactions aborted, their producers closed). It runs in OnPartitionsRevoked, which must block for exactly
// this long: the partitions are released only after it returns, so the next leader never overlaps this one.
func (e *Elector) endTerms(parts []int32, cause error) {
	rs := e.take(parts, false)
	for _, r := range rs {
		e.logger.Info("stepping down", "term", r.term.Number, "leader", r.term.Partition, "cause", cause)
		r.cancel(cause)
	}
	for _, r := range rs {
		<-r.done
		e.logger.Info("term stopped", "term", r.term.Number, "leader", r.term.Partition)
	}
}

// abandonTerms cancels the current terms of parts with cause and hands the wait to Run. It runs in
// OnPartitionsLost: the partitions may be someone else's already, so waiting gains nothing, and a term stuck
// on the network must not hold up the client's rejoin. Run waits for the terms before it returns.
func (e *Elector) abandonTerms(parts []int32, cause error) {
	for _, r := range e.take(parts, true) {
		e.logger.Info("stepping down without waiting", "term", r.term.Number, "leader", r.term.Partition, "cause", cause)
		r.cancel(cause)
	}
}
