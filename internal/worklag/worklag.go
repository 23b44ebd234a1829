// Package worklag measures how far the workers are behind on the work topic, per partition, in offsets and in
// seconds, and exports both as metrics. One process measures: the leading ticker runs a Monitor for the length
// of its term, so there is one series per partition in the fleet, whoever leads.
//
// For each partition of <ns>.work with an offset committed by the workers' group:
//
//   - offsets: the partition's last stable offset (what a read_committed worker can read) minus the group's
//     committed offset. Transaction markers occupy offsets too: a partition the workers have caught up with
//     can show 1 (the marker after the last tick), and n ticks behind is up to 2n when each came in its own
//     transaction. It says "growing or not", not "how many ticks".
//   - seconds: the age of the oldest tick not yet executed: now minus the slot of the first tick at or after
//     the committed offset, 0 when there is none. This is the figure to alert on: it reads the same whatever
//     the schedule's period and whatever the markers.
//
// A partition the group never committed (no worker ever finished a tick there) has no series, unless the group
// has committed nothing at all (a pool without workers, or whose workers never finished a tick): then every
// partition counts from its log start, so a pool nobody serves shows its whole backlog.
//
// The series carry the pool (label pool: "default", or another pool of Config.Pools: the ticker gives those
// whose work topic exists).
package worklag

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Config configures a Monitor.
type Config struct {
	// Topic is the work topic and Group the workers' group of the default pool. Required.
	Topic, Group string
	// Pools, when set, returns the names of the other pools to measure at each interval (kafka.Names.Pool).
	Pools func() []kafka.Names
	// Interval is the time between two measurements. Defaults to 15s (a common scrape interval).
	Interval time.Duration
	// FetchTimeout bounds the read of the oldest pending tick of the lagging partitions. Defaults to 5s.
	FetchTimeout time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Monitor measures the lag of the workers' group on the work topic.
type Monitor struct {
	cfg     Config
	opts    []kgo.Opt
	logger  *slog.Logger
	offsets *prometheus.GaugeVec
	seconds *prometheus.GaugeVec
	// poolFailing counts, per pool, the measurements in a row that failed (Run's goroutine only).
	poolFailing map[string]int
}

// Partition is one partition's lag.
type Partition struct {
	Partition int32
	// Committed is the group's committed offset and End the partition's last stable offset.
	Committed, End int64
	// Offsets is End - Committed (never negative).
	Offsets int64
	// Oldest is the slot of the oldest tick not yet executed; zero when there is none.
	Oldest time.Time
	// Seconds is now - Oldest, or 0.
	Seconds float64
}

// New returns a Monitor. opts are the connection options (kafka.Config.Opts); the Monitor makes its own clients,
// a short-lived one per measurement that finds lag, so opts must not carry a metrics hook (kprom registers its
// collectors once per hook, and two live clients on one hook collide).
func New(cfg Config, opts []kgo.Opt, logger *slog.Logger, reg prometheus.Registerer) (*Monitor, error) {
	if cfg.Topic == "" || cfg.Group == "" {
		return nil, errors.New("worklag: topic and group are required")
	}
	cfg.Interval = cmp.Or(cfg.Interval, 15*time.Second)
	cfg.FetchTimeout = cmp.Or(cfg.FetchTimeout, 5*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := &Monitor{
		cfg:         cfg,
		poolFailing: map[string]int{},
		opts:        opts,
		logger:      logger.With("component", "worklag"),
		offsets: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_work_lag_offsets",
			Help: "Offsets of a work partition not yet committed by the workers' group (last stable offset - committed offset; transaction markers included). Exported by the leading ticker.",
		}, []string{"pool", "partition"}),
		seconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tickgroup_work_lag_seconds",
			Help: "Age of the oldest tick of a work partition that the workers have not executed yet (now - its slot), 0 when none. Exported by the leading ticker.",
		}, []string{"pool", "partition"}),
	}
	if reg != nil {
		if err := reg.Register(m.offsets); err != nil {
			return nil, fmt.Errorf("worklag: registering metrics: %w", err)
		}
		if err := reg.Register(m.seconds); err != nil {
			return nil, fmt.Errorf("worklag: registering metrics: %w", err)
		}
	}
	return m, nil
}

// Run measures every Interval until ctx ends, and returns nil then. A failed measurement is logged and leaves
// the previous figures; the series are removed when Run returns (a replica that stops leading stops exporting).
func (m *Monitor) Run(ctx context.Context) error {
	cl, err := kgo.NewClient(m.opts...)
	if err != nil {
		return fmt.Errorf("worklag: client: %w", err)
	}
	defer cl.Close()
	defer m.offsets.Reset()
	defer m.seconds.Reset()
	adm := kadm.NewClient(cl)
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	failing := false
	for {
		parts, err := m.measureAll(ctx, adm)
		switch {
		case ctx.Err() != nil:
			return nil
		case kafka.IsACLError(err):
			return fmt.Errorf("worklag: %w", err) // asking again will be refused again
		case err != nil:
			if !failing { // once per run of failures: a broker outage must not log every interval
				m.logger.Warn("measuring the work lag", "err", err)
			}
			failing = true
		default:
			if failing {
				m.logger.Info("measuring the work lag again")
			}
			failing = false
			m.export(parts)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (m *Monitor) export(pools map[string][]Partition) {
	m.offsets.Reset()
	m.seconds.Reset()
	for pool, parts := range pools {
		for _, p := range parts {
			label := strconv.Itoa(int(p.Partition))
			m.offsets.WithLabelValues(pool, label).Set(float64(p.Offsets))
			m.seconds.WithLabelValues(pool, label).Set(p.Seconds)
		}
	}
}

// measureAll measures the default pool and every pool of Config.Pools, by pool name.
func (m *Monitor) measureAll(ctx context.Context, adm *kadm.Client) (map[string][]Partition, error) {
	out := map[string][]Partition{}
	parts, err := m.Measure(ctx, adm)
	if err != nil {
		return nil, err
	}
	out[kafka.DefaultPool] = parts
	if m.cfg.Pools == nil {
		return out, nil
	}
	for _, n := range m.cfg.Pools() {
		if n.PoolName == "" {
			continue
		}
		// One pool's failure (its topics gone, an ACL of it missing) leaves the others measured.
		parts, err := m.measure(ctx, adm, n.Work, n.WorkerGroup)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if m.poolFailing[n.PoolName] == 0 { // once per run of failures
				m.logger.Warn("measuring the work lag of a pool", "pool", n.PoolName, "err", err)
			}
			m.poolFailing[n.PoolName]++
			continue
		}
		delete(m.poolFailing, n.PoolName)
		out[n.PoolName] = parts
	}
	return out, nil
}

// Measure returns the lag of every partition of the default pool with a committed offset, in partition order.
func (m *Monitor) Measure(ctx context.Context, adm *kadm.Client) ([]Partition, error) {
	return m.measure(ctx, adm, m.cfg.Topic, m.cfg.Group)
}

// measure returns the lag of group on topic (see the package comment).
func (m *Monitor) measure(ctx context.Context, adm *kadm.Client, topic, group string) ([]Partition, error) {
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("listing the last stable offsets of %s: %w", topic, kafka.NeedACL(err, "Describe", "topic", topic))
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("listing the last stable offsets of %s: %w", topic, kafka.NeedACL(err, "Describe", "topic", topic))
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, fmt.Errorf("fetching the offsets of group %s: %w", group, kafka.NeedACL(err, "Describe", "group", group))
	}
	var starts kadm.ListedOffsets
	if len(committed) == 0 { // nothing committed at all: every partition counts from its log start
		if starts, err = adm.ListStartOffsets(ctx, topic); err != nil {
			return nil, fmt.Errorf("listing the log start offsets of %s: %w", topic, kafka.NeedACL(err, "Describe", "topic", topic))
		}
	}
	var parts []Partition
	pending := map[int32]kgo.Offset{}
	pendingEnd := map[int32]int64{}
	ends.Each(func(lo kadm.ListedOffset) {
		c, ok := committed.Lookup(topic, lo.Partition)
		if start, ok2 := starts.Lookup(topic, lo.Partition); starts != nil && ok2 && start.Err == nil {
			c, ok = kadm.OffsetResponse{Offset: kadm.Offset{Topic: topic, Partition: lo.Partition, At: start.Offset}}, true
		}
		if !ok || c.Err != nil || c.At < 0 {
			return
		}
		p := Partition{Partition: lo.Partition, Committed: c.At, End: lo.Offset, Offsets: max(lo.Offset-c.At, 0)}
		if p.Offsets > 0 {
			pending[p.Partition] = kgo.NewOffset().At(c.At)
			pendingEnd[p.Partition] = lo.Offset
		}
		parts = append(parts, p)
	})
	if len(pending) > 0 {
		oldest, err := m.oldest(ctx, topic, pending, pendingEnd)
		if err != nil {
			return nil, kafka.NeedACL(err, "Read", "topic", topic)
		}
		now := m.cfg.Now()
		for i := range parts {
			if slot, ok := oldest[parts[i].Partition]; ok {
				parts[i].Oldest = slot
				parts[i].Seconds = max(now.Sub(slot).Seconds(), 0)
			}
		}
	}
	sortPartitions(parts)
	return parts, nil
}

// oldest reads each pending partition from the committed offset (from) and returns the slot of its first tick.
// Control records are kept so that a partition whose pending offsets are only transaction markers (the usual
// caught-up state) is settled at once instead of waiting for a fetch that never returns data. A partition whose
// pending offsets hold no tick is left out: nothing waits there. What the fetch timeout leaves unread is left
// out too (and measured again next time).
func (m *Monitor) oldest(ctx context.Context, topic string, from map[int32]kgo.Offset, end map[int32]int64) (map[int32]time.Time, error) {
	cl, err := kgo.NewClient(append(m.opts[:len(m.opts):len(m.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.FetchMaxPartitionBytes(64<<10), // the first records are all that is needed
	)...)
	if err != nil {
		return nil, fmt.Errorf("reading the oldest pending ticks: client: %w", err)
	}
	defer cl.Close()
	fctx, cancel := context.WithTimeout(ctx, m.cfg.FetchTimeout)
	defer cancel()
	out := map[int32]time.Time{}
	settled := map[int32]bool{}
	for len(settled) < len(from) {
		fetches := cl.PollFetches(fctx)
		if fctx.Err() != nil || fetches.IsClientClosed() {
			break
		}
		fetches.EachPartition(func(p kgo.FetchTopicPartition) {
			if settled[p.Partition] {
				return
			}
			for _, r := range p.Records {
				if r.Attrs.IsControl() {
					continue
				}
				if tk, err := tick.Decode(r.Value); err == nil {
					out[p.Partition] = tk.StartAt() // a held tick (emitted ahead) is not late: its lag is 0
					settled[p.Partition] = true
					return
				}
			}
			if n := len(p.Records); n > 0 && p.Records[n-1].Offset+1 >= end[p.Partition] {
				settled[p.Partition] = true // read to the last stable offset: no tick waits
			}
		})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func sortPartitions(ps []Partition) {
	slices.SortFunc(ps, func(a, b Partition) int { return cmp.Compare(a.Partition, b.Partition) })
}
