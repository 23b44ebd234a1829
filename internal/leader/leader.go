package leader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Config configures an Elector.
type Config struct {
	// Topic is the single-partition ticker topic. Required.
	Topic string
	// Group is the consumer group of the ticker replicas. Required.
	Group string
	// SessionTimeout is how long the coordinator waits for a silent member before handing partition 0 on: the
	// crash failover time. It must be within the broker's group.min/max.session.timeout.ms. Defaults to 10s.
	SessionTimeout time.Duration
	// HeartbeatInterval is how often members heartbeat; a graceful handoff takes about one. Defaults to 1s.
	HeartbeatInterval time.Duration
	// RebalanceTimeout bounds how long a rebalance waits for members to rejoin. Defaults to 30s.
	RebalanceTimeout time.Duration
	// RejoinBackoff is the first pause before rejoining after a failed term; it doubles up to 10s. Defaults to 1s.
	RejoinBackoff time.Duration
	// InstanceName identifies this replica in logs. Defaults to the kgo member ID.
	InstanceName string
}

// Term is one uninterrupted period of leadership of this process.
type Term struct {
	// Number counts the terms of this process, from 1.
	Number int64
	// MemberID and Generation are the group membership under which partition 0 was assigned.
	MemberID   string
	Generation int32
}

// LeadFunc runs one term. It must return soon after ctx is done. A non-nil error ends the term and makes the
// Elector leave the group and rejoin.
type LeadFunc func(ctx context.Context, term Term) error

// ErrPartitionRevoked and ErrPartitionLost are the causes of a term's context when partition 0 goes.
var (
	ErrPartitionRevoked = errors.New("partition 0 revoked")
	ErrPartitionLost    = errors.New("partition 0 lost")
)

// Elector runs LeadFunc while this process owns partition 0 of the ticker topic.
type Elector struct {
	cfg     Config
	opts    []kgo.Opt
	lead    LeadFunc
	logger  *slog.Logger
	metrics *metrics

	mu      sync.Mutex
	terms   int64
	current *running
	failed  chan error // a term's failure, to the Run loop

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
	return &Elector{
		cfg:     cfg,
		opts:    opts,
		lead:    lead,
		logger:  logger.With("component", "leader"),
		metrics: newMetrics(reg),
		failed:  make(chan error, 1),
		joined:  make(chan struct{}),
	}, nil
}

// Joined is closed once this process has been in the group once (its first assignment arrived).
func (e *Elector) Joined() <-chan struct{} { return e.joined }

// Leading reports whether a term runs now.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current != nil
}

// Run takes part in the election until ctx ends. On return this process has left the group and no term runs.
func (e *Elector) Run(ctx context.Context) error {
	backoff := e.cfg.RejoinBackoff
	for {
		err := e.member(ctx)
		if ctx.Err() != nil {
			return nil
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

// member is one group membership: join, lead while assigned, leave when ctx ends or a term fails.
func (e *Elector) member(ctx context.Context) error {
	cl, err := kgo.NewClient(append(e.opts[:len(e.opts):len(e.opts)],
		kgo.ConsumerGroup(e.cfg.Group),
		kgo.ConsumeTopics(e.cfg.Topic),
		// The default, and the only sane choice: eager balancers would move partition 0 on every membership
		// change. Cooperative-sticky leaves it with its owner when standbys come and go.
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(e.cfg.SessionTimeout),
		kgo.HeartbeatInterval(e.cfg.HeartbeatInterval),
		kgo.RebalanceTimeout(e.cfg.RebalanceTimeout),
		// Membership is all we want from this group: no offsets, no records.
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
			e.markJoined()
			if owns(assigned, e.cfg.Topic) {
				e.start(cl)
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
			e.markJoined()
			if owns(revoked, e.cfg.Topic) {
				e.stop(ErrPartitionRevoked, true)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			if owns(lost, e.cfg.Topic) {
				e.stop(ErrPartitionLost, false)
			}
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
				e.logger.Debug("group client poll error", "topic", t, "partition", p, "err", err)
				if errors.Is(err, kerr.GroupAuthorizationFailed) {
					select {
					case e.failed <- kafka.NeedACL(err, "Read", "group", e.cfg.Group):
					default:
					}
				}
			})
		}
	}()

	var termErr error
	select {
	case <-ctx.Done():
	case termErr = <-e.failed:
	}
	// Close revokes partition 0 first (our callback stops the term and waits for it), then leaves the group,
	// so a graceful stop hands leadership over in about one heartbeat.
	e.logger.Info("leaving the ticker group")
	cl.Close()
	<-pollDone
	e.stop(errors.New("left the group"), true)
	return termErr
}

func (e *Elector) markJoined() { e.joinMu.Do(func() { close(e.joined) }) }

func owns(parts map[string][]int32, topic string) bool {
	for _, p := range parts[topic] {
		if p == 0 {
			return true
		}
	}
	return false
}

// start begins a new term. It runs inside OnPartitionsAssigned and must not block.
func (e *Elector) start(cl *kgo.Client) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.current != nil {
		return // already leading: a cooperative rebalance re-confirmed our ownership
	}
	e.terms++
	member, gen := cl.GroupMetadata()
	term := Term{Number: e.terms, MemberID: member, Generation: gen}
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &running{term: term, cancel: cancel, done: make(chan struct{})}
	e.current = r
	e.metrics.leader.Set(1)
	e.metrics.changes.Inc()
	e.logger.Info("leading", "term", term.Number, "generation", gen, "member_id", member)
	go func() {
		defer close(r.done)
		err := e.lead(ctx, term)
		if ctx.Err() == nil {
			// The term ended on its own: fenced, or a commit that cannot be confirmed. Give up partition 0.
			if err == nil {
				err = errors.New("term ended")
			}
			e.logger.Error("term failed; stepping down", "term", term.Number, "err", err)
			e.mu.Lock()
			if e.current == r {
				e.current = nil
				e.metrics.leader.Set(0)
			}
			e.mu.Unlock()
			select {
			case e.failed <- err:
			default:
			}
		}
	}()
}

// stop ends the current term with cause. With wait it blocks until the term's function returned (its
// transaction aborted, its producer closed); it is used on revocation so the next leader never overlaps.
func (e *Elector) stop(cause error, wait bool) {
	e.mu.Lock()
	r := e.current
	e.current = nil
	e.mu.Unlock()
	if r == nil {
		return
	}
	e.metrics.leader.Set(0)
	e.logger.Info("stepping down", "term", r.term.Number, "cause", cause)
	r.cancel(cause)
	if wait {
		<-r.done
		e.logger.Info("term stopped", "term", r.term.Number)
	}
}
