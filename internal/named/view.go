package named

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Pauses of a View's retries.
const (
	// MissingRecheck is how often a View looks again for a topic that does not exist.
	MissingRecheck = 10 * time.Second
	// minPause and maxPause bound the growing pause after any other error.
	minPause, maxPause = 250 * time.Millisecond, 30 * time.Second
)

// Config says what a View follows and how it reads it.
type Config[T any] struct {
	// Opts are the connection options (kafka.Config.Opts); Run adds its own.
	Opts  []kgo.Opt
	Topic string
	// What names the definitions in logs and errors, plural ("limits"); Key names one key in a log line
	// ("limit").
	What, Key string
	Decode    Decode[T]
	// Same reports whether two definitions are the same (Changed is signalled only for a change).
	Same   func(a, b T) bool
	Logger *slog.Logger
	// Refused counts the refused records; Count is set to the number of definitions. Either may be nil.
	Refused prometheus.Counter
	Count   prometheus.Gauge
}

// View follows a topic of named definitions and keeps them in memory, decoded: each key's newest valid
// definition (a refused record leaves the key as it was, a tombstone deletes it). It is safe for concurrent use.
type View[T any] struct {
	cfg    Config[T]
	logger *slog.Logger
	// Recheck is how often Run looks again for a topic that does not exist (MissingRecheck); set it before Run.
	Recheck time.Duration

	mu   sync.Mutex
	defs Fold[T]
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

// NewView returns a View as cfg says.
func NewView[T any](cfg Config[T]) *View[T] {
	return &View[T]{
		cfg:      cfg,
		logger:   cfg.Logger.With("component", cfg.What),
		Recheck:  MissingRecheck,
		defs:     Fold[T]{},
		warned:   map[string]bool{},
		loaded:   make(chan struct{}),
		changed:  make(chan struct{}, 1),
		advanced: make(chan struct{}),
		running:  make(chan struct{}),
	}
}

// Loaded is closed once the View has read what the topic held when Run started, or found that there is no
// such topic (no definition).
func (v *View[T]) Loaded() <-chan struct{} { return v.loaded }

// Changed is signalled (coalesced) when a definition was added, changed or deleted.
func (v *View[T]) Changed() <-chan struct{} { return v.changed }

// Get returns the definition called name, and whether there is one.
func (v *View[T]) Get(name string) (T, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	d, ok := v.defs[name]
	return d, ok
}

// Snapshot returns a copy of every definition, by name.
func (v *View[T]) Snapshot() map[string]T {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(map[string]T(v.defs))
}

// Run follows the topic until ctx ends, and then returns nil. It retries every error with a growing pause (a
// reader runs on with the definitions it has while the topic cannot be read) but a refused permission, on which
// it returns an error naming it (kafka.ACLError): asking again does not help until an administrator adds the
// ACL, and a process that cannot read its definitions must say so rather than go on without them.
func (v *View[T]) Run(ctx context.Context) error {
	opts := v.cfg.Opts
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	)...)
	if err != nil {
		return fmt.Errorf("%s: client: %w", v.cfg.What, err)
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
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{v.cfg.Topic: {0: kgo.NewOffset().AtStart()}})
	if end == 0 {
		v.markLoaded(0)
	}
	err = v.follow(ctx, cl, end)
	v.logger.Info(v.cfg.What + " view stopped")
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
// ACLError for a refused permission. While there is no topic the View holds no definition and is loaded (a
// namespace made before the topic has none), and it looks again every Recheck. After any other error (a broker
// away) it is not loaded: a reader must not take "not read" for "none".
func (v *View[T]) waitTopic(ctx context.Context, adm *kadm.Client) (int64, error) {
	var b backoff
	missing := false
	for {
		end, err := lastStable(ctx, adm, v.cfg.Topic)
		pause := v.Recheck
		switch {
		case err == nil:
			return end, nil
		case ctx.Err() != nil:
			return 0, ctx.Err()
		case kafka.Denied(err):
			return 0, fmt.Errorf("reading the %s: %w", v.cfg.What, kafka.NeedACL(err, "Read", "topic", v.cfg.Topic))
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			if !missing {
				missing = true
				v.logger.Info(fmt.Sprintf("no %s topic: none until it exists", v.cfg.What), "topic", v.cfg.Topic, "recheck", v.Recheck)
			}
			v.markLoaded(0)
		default:
			pause = b.next()
			v.logger.Warn(fmt.Sprintf("listing the %s topic's end; retrying", v.cfg.What), "topic", v.cfg.Topic, "err", err, "pause", pause)
		}
		if !sleep(ctx, pause) {
			return 0, ctx.Err()
		}
	}
}

// follow folds the topic's records in until ctx ends; the View is loaded once it has read to end. It returns
// ctx's error, or an ACLError for a refused permission.
func (v *View[T]) follow(ctx context.Context, cl *kgo.Client, end int64) error {
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
			return fmt.Errorf("reading the %s: %w", v.cfg.What, kafka.NeedACL(ferr, "Read", "topic", v.cfg.Topic))
		case ferr != nil:
			pause := b.next()
			v.logger.Warn(fmt.Sprintf("fetching the %s; retrying", v.cfg.What), "topic", v.cfg.Topic, "err", ferr, "pause", pause)
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
				v.markLoaded(len(v.defs))
			}
		})
		if read > v.read {
			v.read = read
			close(v.advanced)
			v.advanced = make(chan struct{})
		}
		if v.cfg.Count != nil {
			v.cfg.Count.Set(float64(len(v.defs)))
		}
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
// that must not act on definitions older than the ones written so far (a new leader term, package dispatch)
// calls it before it reads them. It returns nil at once when there is no topic (no definition), an error
// naming the permission when reading the topic is refused, and ctx's error when ctx ends first. It needs Run to
// be running (it waits for Run to start). The topic's writers write no transactions, so its last stable offset
// follows a record; a topic that ends in transaction markers (a hand-made writer's) keeps Sync waiting until ctx
// ends: callers bound it.
func (v *View[T]) Sync(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("reading the %s: the view is not running: %w", v.cfg.What, ctx.Err())
	case <-v.running:
	}
	v.mu.Lock()
	adm := v.adm
	v.mu.Unlock()
	end, err := lastStable(ctx, adm, v.cfg.Topic)
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return nil
	case kafka.Denied(err):
		return fmt.Errorf("reading the %s: %w", v.cfg.What, kafka.NeedACL(err, "Read", "topic", v.cfg.Topic))
	case err != nil:
		return fmt.Errorf("reading the %s topic's end: %w", v.cfg.What, err)
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
			return fmt.Errorf("reading the %s to offset %d (read to %d): %w", v.cfg.What, end, read, ctx.Err())
		case <-advanced:
		}
	}
}

// take folds r in, with v.mu held, and reports whether it changed a definition. A refused record is counted,
// and logged once for its key.
func (v *View[T]) take(r *kgo.Record) bool {
	key := string(r.Key)
	before, had := v.defs[key]
	if err := v.defs.Apply(r, v.cfg.Decode); err != nil {
		if v.cfg.Refused != nil {
			v.cfg.Refused.Inc()
		}
		if !v.warned[key] {
			v.warned[key] = true
			v.logger.Warn(fmt.Sprintf("refusing a record of the %s topic: the %s keeps its last valid definition", v.cfg.What, v.cfg.Key),
				v.cfg.Key, errlimit.Text(key), "offset", r.Offset, "err", err)
		}
		return false
	}
	delete(v.warned, key)
	after, has := v.defs[key]
	return had != has || had && !v.cfg.Same(before, after)
}

// markLoaded closes Loaded, once; n is the number of definitions then.
func (v *View[T]) markLoaded(n int) {
	v.once.Do(func() {
		v.logger.Info(v.cfg.What+" loaded", v.cfg.What, n)
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
