package calendarstore

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

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Pauses of a View's retries.
const (
	// MissingRecheck is how often a View looks again for a calendars topic that does not exist.
	MissingRecheck = 10 * time.Second
	// minPause and maxPause bound the growing pause after any other error.
	minPause, maxPause = 250 * time.Millisecond, 30 * time.Second
)

// View follows a calendars topic and keeps its calendars in memory, compiled, for the processes that consult
// them: each key's newest valid definition (a refused record leaves the key as it was, a tombstone deletes it).
// It is safe for concurrent use.
type View struct {
	opts    []kgo.Opt
	topic   string
	logger  *slog.Logger
	metrics *metrics
	recheck time.Duration // MissingRecheck; shorter in tests

	mu        sync.Mutex
	calendars fold
	// warned holds the keys whose refused record was logged: a key is logged once, not once per record, until
	// it holds a valid record (or a tombstone) again.
	warned  map[string]bool
	loaded  chan struct{}
	once    sync.Once
	changed chan struct{}
	// read is the offset after the last record folded in, and advanced is closed (and replaced) whenever it
	// grows: Sync waits on it.
	read     int64
	advanced chan struct{}
	// adm is Run's client's, for Sync (a client of Sync's own would register the connection options' metrics
	// hooks a second time); running is closed once it is set.
	adm         *kadm.Client
	running     chan struct{}
	runningOnce sync.Once
}

// NewView returns a View of topic. opts are the connection options (kafka.Config.Opts); Run adds its own.
func NewView(opts []kgo.Opt, topic string, logger *slog.Logger, reg prometheus.Registerer) *View {
	return &View{
		opts:      opts,
		topic:     topic,
		logger:    logger.With("component", "calendars"),
		metrics:   newMetrics(reg),
		recheck:   MissingRecheck,
		calendars: fold{},
		warned:    map[string]bool{},
		loaded:    make(chan struct{}),
		changed:   make(chan struct{}, 1),
		advanced:  make(chan struct{}),
		running:   make(chan struct{}),
	}
}

// Loaded is closed once the View has read what the topic held when Run started, or found that there is no
// such topic (no calendar).
func (v *View) Loaded() <-chan struct{} { return v.loaded }

// Changed is signalled (coalesced) when a calendar was added, changed or deleted.
func (v *View) Changed() <-chan struct{} { return v.changed }

// Get returns the calendar called name, and whether there is one. A Calendar is immutable: the caller may keep
// it, and a later change of the calendar makes another.
func (v *View) Get(name string) (*calendar.Calendar, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.calendars[name]
	return c, ok
}

// All returns every calendar, sorted by name.
func (v *View) All() []*calendar.Calendar {
	v.mu.Lock()
	defer v.mu.Unlock()
	return Sorted(v.calendars)
}

// Run follows the topic until ctx ends, and then returns nil. It retries every error with a growing pause (a
// reader runs on with the calendars it has while the topic cannot be read) but a refused permission, on which it
// returns an error naming it (kafka.ACLError): asking again does not help until an administrator adds the ACL,
// and a process that cannot read its calendars must say so rather than go on without them.
func (v *View) Run(ctx context.Context) error {
	cl, err := kgo.NewClient(append(v.opts[:len(v.opts):len(v.opts)],
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return fmt.Errorf("calendars: client: %w", err)
	}
	defer cl.Close()
	v.mu.Lock()
	v.adm = kadm.NewClient(cl)
	v.mu.Unlock()
	v.runningOnce.Do(func() { close(v.running) })
	end, err := v.waitTopic(ctx, kadm.NewClient(cl))
	if err != nil {
		return stopped(ctx, err)
	}
	// The client consumes only once the topic exists: a client told to consume a missing topic asks for it
	// again and again, and logs each time.
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{v.topic: {0: kgo.NewOffset().AtStart()}})
	if end == 0 {
		v.markLoaded(0)
	}
	err = v.follow(ctx, cl, end)
	v.logger.Info("calendars view stopped")
	return stopped(ctx, err)
}

// stopped is what Run returns for err: nil once ctx has ended, err otherwise (a refused permission).
func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// waitTopic returns the topic's last stable offset once the topic exists; ctx's error if it ended first, and an
// ACLError for a refused permission. While there is no topic the View holds no calendar and is loaded (a
// namespace made before calendars has none), and it looks again every MissingRecheck. After any other error (a
// broker away) it is not loaded: a reader must not take "not read" for "no calendar".
func (v *View) waitTopic(ctx context.Context, adm *kadm.Client) (int64, error) {
	var b backoff
	missing := false
	for {
		end, err := lastStable(ctx, adm, v.topic)
		pause := v.recheck
		switch {
		case err == nil:
			return end, nil
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case kafka.Denied(err):
			return 0, fmt.Errorf("reading the calendars: %w", kafka.NeedACL(err, "Read", "topic", v.topic))
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			if !missing {
				missing = true
				v.logger.Info("no calendars topic: no calendar until it exists", "topic", v.topic, "recheck", v.recheck)
			}
			v.markLoaded(0)
		default:
			pause = b.next()
			v.logger.Warn("listing the calendars topic's end; retrying", "topic", v.topic, "err", err, "pause", pause)
		}
		if !sleep(ctx, pause) {
			return 0, ctx.Err()
		}
	}
}

// follow folds the topic's records in until ctx ends; the View is loaded once it has read to end. It returns
// ctx's error, or an ACLError for a refused permission.
func (v *View) follow(ctx context.Context, cl *kgo.Client, end int64) error {
	var b backoff
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return ctx.Err()
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = errors.Join(ferr, err) })
		switch {
		case kafka.Denied(ferr):
			return fmt.Errorf("reading the calendars: %w", kafka.NeedACL(ferr, "Read", "topic", v.topic))
		case ferr != nil:
			pause := b.next()
			v.logger.Warn("fetching the calendars; retrying", "topic", v.topic, "err", ferr, "pause", pause)
			if !sleep(ctx, pause) {
				return ctx.Err()
			}
			continue
		}
		b = backoff{}
		changed := false
		v.mu.Lock()
		read := v.read
		fetches.EachRecord(func(r *kgo.Record) {
			changed = v.take(r) || changed
			read = max(read, r.Offset+1)
			if r.Offset >= end-1 {
				v.markLoaded(len(v.calendars))
			}
		})
		if read > v.read {
			v.read = read
			close(v.advanced)
			v.advanced = make(chan struct{})
		}
		v.metrics.calendars.Set(float64(len(v.calendars)))
		v.mu.Unlock()
		if changed {
			select {
			case v.changed <- struct{}{}:
			default:
			}
		}
	}
}

// Sync waits until the View has read every record committed to the topic before Sync was called: a reader
// that must not act on calendars older than the ones written so far (a new leader term, package dispatch) calls
// it before it reads them. It returns nil at once when there is no calendars topic (no calendar), an error
// naming the permission when reading the topic is refused, and ctx's error when ctx ends first. It needs Run to
// be running (it waits for Run to start). The topic's writers write no transactions, so its last stable offset
// follows a record; a topic that ends in transaction markers (a hand-made writer's) keeps Sync waiting until ctx
// ends: callers bound it.
func (v *View) Sync(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("reading the calendars: the view is not running: %w", ctx.Err())
	case <-v.running:
	}
	v.mu.Lock()
	adm := v.adm
	v.mu.Unlock()
	end, err := lastStable(ctx, adm, v.topic)
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return nil
	case kafka.Denied(err):
		return fmt.Errorf("reading the calendars: %w", kafka.NeedACL(err, "Read", "topic", v.topic))
	case err != nil:
		return fmt.Errorf("reading the calendars topic's end: %w", err)
	}
	for {
		v.mu.Lock()
		read, advanced := v.read, v.advanced
		v.mu.Unlock()
		if read >= end {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reading the calendars to offset %d (read to %d): %w", end, read, ctx.Err())
		case <-advanced:
		}
	}
}

// take folds r in, with v.mu held, and reports whether it changed a calendar. A refused record is counted, and
// logged once for its key.
func (v *View) take(r *kgo.Record) bool {
	key := string(r.Key)
	before := v.calendars[key]
	if err := v.calendars.apply(r); err != nil {
		v.metrics.refused.Inc()
		if !v.warned[key] {
			v.warned[key] = true
			v.logger.Warn("refusing a record of the calendars topic: the calendar keeps its last valid definition", "calendar", errlimit.Text(key),
				"offset", r.Offset, "err", err)
		}
		return false
	}
	delete(v.warned, key)
	return !Same(before, v.calendars[key])
}

// markLoaded closes Loaded, once; n is the number of calendars then.
func (v *View) markLoaded(n int) {
	v.once.Do(func() {
		v.logger.Info("calendars loaded", "calendars", n)
		close(v.loaded)
	})
}

// lastStable returns the last stable offset of partition 0 of topic; an error wrapping
// kerr.UnknownTopicOrPartition when there is no such topic.
func lastStable(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	// A metadata request of its own first: the client's cached metadata would say that a topic made a moment
	// ago is still missing, for up to its metadata age (kafka.ListFresh).
	tds, err := kafka.ListFresh(ctx, adm, topic)
	if err != nil {
		return 0, err
	}
	if td, ok := tds[topic]; !ok || td.Err != nil {
		return 0, fmt.Errorf("topic %s: %w", topic, cmp.Or[error](td.Err, kerr.UnknownTopicOrPartition))
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := ends.Lookup(topic, 0)
	switch {
	case !ok:
		return 0, fmt.Errorf("topic %s: %w", topic, kerr.UnknownTopicOrPartition)
	case o.Err != nil:
		return 0, fmt.Errorf("topic %s: %w", topic, o.Err)
	}
	return o.Offset, nil
}

// backoff is a pause that doubles from minPause to maxPause; its zero value starts again.
type backoff struct{ d time.Duration }

func (b *backoff) next() time.Duration {
	b.d = min(max(2*b.d, minPause), maxPause)
	return b.d
}

// sleep waits d, and reports false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
