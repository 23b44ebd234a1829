package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/internal/admin"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// view reads the work topic (read_committed: only ticks of committed leader transactions) and the results topic
// from their ends and prints an EMIT line per tick and a RUN line per outcome.
type view struct {
	names   kafka.Names
	opts    []kgo.Opt
	scr     *screen
	logger  *slog.Logger
	leaders *leaderWatch
}

func newView(cfg config, brokers string, scr *screen, logger *slog.Logger, leaders *leaderWatch) (*view, error) {
	kc := kafka.Config{Brokers: strings.Split(brokers, ","), Namespace: cfg.namespace, ClientID: "tickgroup-dev-view"}
	opts, err := kc.Opts(logger.With("component", "view"))
	if err != nil {
		return nil, err
	}
	return &view{names: kc.Names(), opts: opts, scr: scr, logger: logger, leaders: leaders}, nil
}

// Run prints until ctx ends.
func (v *view) Run(ctx context.Context) error {
	cl, err := kgo.NewClient(append(v.opts,
		kgo.ConsumeTopics(v.names.Work, v.names.Results),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)...)
	if err != nil {
		return fmt.Errorf("view: kafka client: %w", err)
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(topic string, partition int32, err error) {
			v.logger.Warn("view: fetch error", "topic", topic, "partition", partition, "err", err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			switch r.Topic {
			case v.names.Work:
				v.emitted(ctx, r)
			case v.names.Results:
				v.ran(r)
			}
		})
	}
}

func (v *view) emitted(ctx context.Context, r *kgo.Record) {
	t, err := tick.Decode(r.Value)
	if err != nil {
		v.scr.event("EMIT", colorRed, "%-36s  unreadable tick: %v", string(r.Key), err)
		return
	}
	how := fmt.Sprintf("by %s (epoch %d)", v.leaders.ForEpoch(ctx, t.LeaderEpoch), t.LeaderEpoch)
	if t.Trigger {
		how = "by hand (ticker schedule trigger)"
	}
	v.scr.event("EMIT", colorCyan, "%-36s  %s", t.ID, how)
}

func (v *view) ran(r *kgo.Record) {
	if r.Value == nil {
		return // a tombstone
	}
	// The ledger's claims, starts and releases share the topic; a batch record holds several entries.
	os, err := tickgroup.Outcomes(r.Value)
	if err != nil {
		v.scr.event("RUN", colorRed, "%-36s  unreadable ledger record: %v", string(r.Key), err)
		return
	}
	for _, o := range os {
		v.outcome(o)
	}
}

func (v *view) outcome(o tickgroup.Outcome) {
	color := colorGreen
	if o.Status != tickgroup.StatusOK {
		color = colorRed
	}
	text := fmt.Sprintf("%-36s  %-7s on %s in %s", o.ID, o.Status, o.Worker, fmtMillis(o.DurationMS))
	if o.Attempts > 1 {
		text += fmt.Sprintf(" (attempt %d)", o.Attempts)
	}
	if o.Error != "" {
		text += ": " + truncate(o.Error, 80)
	}
	v.scr.event("RUN", color, "%s", text)
}

func fmtMillis(ms float64) string {
	if ms >= 1000 {
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + "s"
	}
	return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// leaderWatch knows which ticker replica leads by polling each one's tickgroup_leader gauge, and prints a
// LEADER line on every change. It names the leader of a tick's epoch: the replica that leads when the first
// tick of that epoch is seen. The gauge is set before a term emits anything, so a fresh poll at that moment
// finds the emitter.
type leaderWatch struct {
	tickers   []*proc
	namespace string
	scr       *screen
	client    *http.Client

	mu      sync.Mutex // held across a poll, so that LEADER and EMIT lines come out in order
	current string     // "" while none leads
	last    string     // the last replica seen leading
	leading []bool     // per replica, as of its last conclusive scrape
	epochs  map[int64]string
	// lastEpochLeader is the replica named for the newest epoch seen; announced is whether a LEADER line naming
	// a leader was printed since.
	lastEpochLeader string
	announced       bool
}

func newLeaderWatch(tickers []*proc, namespace string, scr *screen) *leaderWatch {
	return &leaderWatch{tickers: tickers, namespace: namespace, scr: scr,
		client: &http.Client{Timeout: 400 * time.Millisecond}, leading: make([]bool, len(tickers)), epochs: map[int64]string{}}
}

// Run polls every 500ms until ctx ends.
func (lw *leaderWatch) Run(ctx context.Context) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		lw.mu.Lock()
		lw.refresh(ctx)
		lw.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Current returns the replica that led at the last poll, or "".
func (lw *leaderWatch) Current() string {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.current
}

// ForEpoch returns the name of the replica that leads epoch.
func (lw *leaderWatch) ForEpoch(ctx context.Context, epoch int64) string {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if name, ok := lw.epochs[epoch]; ok {
		return name
	}
	lw.refresh(ctx)
	if lw.current == "" {
		return "?"
	}
	if len(lw.epochs) > 0 && lw.current == lw.lastEpochLeader && !lw.announced {
		// The same replica leads a new term: it lost partition 0 and got it back between two polls.
		lw.scr.event("LEADER", colorMagenta, "%s again, in a new term", lw.current)
	}
	lw.epochs[epoch] = lw.current
	lw.lastEpochLeader = lw.current
	lw.announced = false
	return lw.current
}

// waitOther waits until a replica other than name leads, at most timeout. It reports whether one does.
func (lw *leaderWatch) waitOther(ctx context.Context, name string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		if cur := lw.Current(); cur != "" && cur != name {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}

// refresh polls every replica and prints a LEADER line if the leader changed. lw.mu must be held.
func (lw *leaderWatch) refresh(ctx context.Context) {
	var wg sync.WaitGroup
	for i, t := range lw.tickers {
		wg.Go(func() {
			if leading, ok := lw.isLeader(ctx, t.metricsAddr); ok {
				lw.leading[i] = leading
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	leading := lw.leading
	next := ""
	for i, t := range lw.tickers {
		if !leading[i] {
			continue
		}
		if next == "" || t.name == lw.current {
			// Two replicas both claim to lead only for a moment (a revoked one that has not noticed yet); keep the
			// one already shown rather than flapping.
			next = t.name
		}
	}
	if next == lw.current {
		return
	}
	switch {
	case next == "":
		lw.scr.event("LEADER", colorMagenta, "none: %s stepped down; the group is handing partition 0 to another replica", lw.current)
	case lw.last == "":
		lw.scr.event("LEADER", colorMagenta, "%s (owns partition 0 of %s.ticker)", next, lw.namespace)
	case next == lw.last:
		lw.scr.event("LEADER", colorMagenta, "%s again", next)
	default:
		lw.scr.event("LEADER", colorMagenta, "%s (was %s)", next, lw.last)
	}
	lw.current = next
	if next != "" {
		lw.last = next
		lw.announced = true
	}
}

// isLeader reports whether the ticker serving metrics at addr has tickgroup_leader 1. A replica that refuses the
// connection (stopped, starting) does not lead; ok is false when the answer is unknown (a slow or failed scrape),
// so that one late scrape does not show a handoff that did not happen.
func (lw *leaderWatch) isLeader(ctx context.Context, addr string) (leading, ok bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return false, false
	}
	resp, err := lw.client.Do(req)
	if err != nil {
		return false, errors.Is(err, syscall.ECONNREFUSED)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, false
	}
	m, err := admin.ParseMetrics(resp.Body)
	if err != nil {
		return false, false
	}
	v, ok := m.Get("tickgroup_leader")
	return ok && v == 1, ok
}
