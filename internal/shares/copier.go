package shares

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Config configures a Copier.
type Config struct {
	// Names are the namespace's topics: Schedules is copied into Shares. Required.
	Names kafka.Names
	// Leaders is the number of leaders: the shares topic's partition count. Required, at least 2.
	Leaders int
	// ReplicationFactor of the shares topic when the copier creates it (-1 or 0: the broker's default).
	ReplicationFactor int16
	// TransactionTimeout of the copy's transactions. Defaults to 10s.
	TransactionTimeout time.Duration
	// MaxBatch bounds the records of one transaction. Defaults to 10,000.
	MaxBatch int
}

// Copier keeps the shares topic a copy of the schedules topic. Leader 0 runs one for the length of its term.
type Copier struct {
	cfg     Config
	opts    []kgo.Opt
	logger  *slog.Logger
	metrics *metrics

	// testHold, set by this package's tests only, runs inside each copy transaction before its commit.
	testHold func()
}

// New returns a Copier; opts reach the Kafka brokers.
func New(cfg Config, opts []kgo.Opt, logger *slog.Logger, reg prometheus.Registerer) (*Copier, error) {
	if cfg.Names.Schedules == "" || cfg.Names.Shares == "" {
		return nil, errors.New("shares: the schedules and shares topics are required")
	}
	if cfg.Leaders < 2 {
		return nil, fmt.Errorf("shares: %d leaders: the shares split two or more", cfg.Leaders)
	}
	cfg.TransactionTimeout = cmp.Or(cfg.TransactionTimeout, 10*time.Second)
	cfg.MaxBatch = cmp.Or(cfg.MaxBatch, 10_000)
	return &Copier{cfg: cfg, opts: opts, logger: logger.With("component", "shares"), metrics: newMetrics(reg)}, nil
}

// Run copies until ctx ends. A failure, or a fencing by another copier, is logged and the copy starts again after
// a pause: a stopped copy holds back no tick, only the schedule changes of the replicas reading the shares.
func (c *Copier) Run(ctx context.Context) error {
	backoff := time.Second
	for {
		caughtUp, err := c.session(ctx, false)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch):
			// Another copier started: a leader 0 that lost its term, or the next one. This one's term goes on
			// (a fenced leader's ends by itself), so it starts again, and fences in turn: the progress read
			// after each fencing keeps every record copied once.
			c.metrics.fenced.Inc()
			c.logger.Info("schedule shares: another copier fenced this one; starting again", "err", err)
		case kafka.IsACLError(err):
			c.metrics.failures.Inc()
			c.logger.Error("schedule shares: the copy is refused; the replicas read the whole schedules topic until it is allowed", "err", err)
			backoff = time.Minute
		default:
			c.metrics.failures.Inc()
			c.logger.Warn("schedule shares: copying failed; starting again", "err", err, "retry_in", backoff)
		}
		if caughtUp {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// CatchUp copies until the shares hold every schedules record written before it started, then returns: a
// one-off copy, such as tickbench's of the schedules it wrote before the replicas start.
func (c *Copier) CatchUp(ctx context.Context) error {
	_, err := c.session(ctx, true)
	return err
}

// session is one copier: it fences the one before, reads the progress and copies from there, until ctx ends
// or an error (once is set: until it reached the end it listed first). It reports whether it caught up once.
func (c *Copier) session(ctx context.Context, once bool) (caughtUp bool, err error) {
	n, cfg := c.cfg.Names, c.cfg
	admCl, err := kgo.NewClient(c.opts...)
	if err != nil {
		return false, fmt.Errorf("kafka client: %w", err)
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if err := c.ensureTopic(ctx, adm); err != nil {
		return false, err
	}
	p, err := kgo.NewClient(append(c.opts[:len(c.opts):len(c.opts)],
		kgo.TransactionalID(n.SharesTransactionalID()),
		kgo.TransactionTimeout(cfg.TransactionTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)...)
	if err != nil {
		return false, fmt.Errorf("kafka client: %w", err)
	}
	defer p.Close()
	// Fence: a committed transaction of this ID ends the predecessor's open one and refuses its later commits,
	// so that the progress read next is final.
	if err := commit(ctx, p, []*kgo.Record{{Topic: n.Shares, Partition: 0, Key: []byte(FenceKey)}}, nil); err != nil {
		return false, fmt.Errorf("fencing the previous copier: %w", err)
	}
	st, err := readStatus(ctx, c.opts, adm, n.Shares, n.Schedules)
	if err != nil {
		return false, err
	}
	last, end := st.Progress, st.End
	c.metrics.progress.Set(float64(last))
	c.metrics.end.Set(float64(end))
	if last >= end-1 {
		caughtUp = true
		c.logger.Info("schedule shares complete", "progress", last)
		if once {
			return true, nil
		}
	} else {
		c.logger.Info("schedule shares: copying", "from", last+1, "to", end)
	}
	src, err := kgo.NewClient(append(c.opts[:len(c.opts):len(c.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{n.Schedules: {0: kgo.NewOffset().At(last + 1)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return caughtUp, fmt.Errorf("kafka client: %w", err)
	}
	defer src.Close()
	started := time.Now()
	for {
		fetches := src.PollRecords(ctx, cfg.MaxBatch)
		if ctx.Err() != nil {
			return caughtUp, nil
		}
		var ferr error
		fetches.EachError(func(t string, _ int32, err error) {
			ferr = errors.Join(ferr, fmt.Errorf("reading %s: %w", t, kafka.NeedACL(err, "Read", "topic", t)))
		})
		if ferr != nil {
			return caughtUp, ferr
		}
		recs := make([]*kgo.Record, 0, fetches.NumRecords()+1)
		fetches.EachRecord(func(r *kgo.Record) {
			if r.Offset > last {
				recs = append(recs, Copy(r, n.Shares, cfg.Leaders))
				last = r.Offset
			}
		})
		if len(recs) == 0 {
			continue
		}
		recs = append(recs, progressRecord(n.Shares, last))
		if err := commit(ctx, p, recs, c.testHold); err != nil {
			return caughtUp, err
		}
		c.metrics.copied.Add(float64(len(recs) - 1))
		c.metrics.progress.Set(float64(last))
		if !caughtUp && last >= end-1 {
			caughtUp = true
			c.logger.Info("schedule shares complete", "progress", last, "took", time.Since(started).Round(time.Millisecond))
			if once {
				return true, nil
			}
		}
		if last >= end-1 {
			if e, err := SourceEnd(ctx, adm, n.Schedules); err == nil {
				end = e
				c.metrics.end.Set(float64(e))
			}
		}
	}
}

// ensureTopic creates the shares topic when it is missing, and checks its partitions.
func (c *Copier) ensureTopic(ctx context.Context, adm *kadm.Client) error {
	spec := c.cfg.Names.SharesSpec(int32(c.cfg.Leaders))
	if _, err := kafka.EnsureTopic(ctx, adm, spec, cmp.Or(c.cfg.ReplicationFactor, -1)); err != nil {
		return err
	}
	parts, err := Partitions(ctx, adm, spec.Name)
	if err != nil {
		return fmt.Errorf("describing %s: %w", spec.Name, err)
	}
	if parts != c.cfg.Leaders {
		return fmt.Errorf("topic %s has %d partitions for %d leaders: delete it and let leader 0 make it again", spec.Name, parts, c.cfg.Leaders)
	}
	return nil
}

// commit writes recs in one transaction; hold (when set) runs before it commits.
func commit(ctx context.Context, p *kgo.Client, recs []*kgo.Record, hold func()) error {
	if err := p.BeginTransaction(); err != nil {
		return err
	}
	var (
		mu   sync.Mutex
		perr error
		wg   sync.WaitGroup
	)
	wg.Add(len(recs))
	for _, r := range recs {
		p.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && perr == nil {
				perr = err
			}
		})
	}
	flushErr := p.Flush(ctx)
	wg.Wait()
	err := errors.Join(perr, flushErr)
	if hold != nil {
		hold()
	}
	if endErr := p.EndTransaction(ctx, kgo.TransactionEndTry(err == nil)); endErr != nil {
		return errors.Join(err, endErr)
	}
	return err
}
