// Package store keeps the fleet's schedules in the compacted schedules topic: one record per schedule name, the
// value its definition (JSON, package schedule), a tombstone for a deleted schedule.
//
// Writers (the `ticker schedule` commands) validate every definition before producing it, so an invalid cron
// expression or time zone never reaches the topic. Readers (every ticker replica) follow the topic with a
// View, which keeps the current definitions in memory and tells the leader which schedules changed.
//
// A schedule's version is the offset of its record, and its change time the record's timestamp: both are facts
// of the log, the same for every reader, so two leaders derive the same slots from the same definition.
package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Entry is one schedule as the log knows it.
type Entry struct {
	Schedule *schedule.Schedule
	// Version is the offset of the schedule's record in the schedules topic.
	Version int64
	// UpdatedAt is the record's timestamp: slots at or before it are never caught up.
	UpdatedAt time.Time
}

// Spec is a shortcut for e.Schedule.Spec().
func (e Entry) Spec() schedule.Spec { return e.Schedule.Spec() }

// Put validates spec and writes it. Nothing is written when it is invalid. It returns the record's offset: the
// definition's version.
func Put(ctx context.Context, cl *kgo.Client, topic string, spec schedule.Spec) (int64, error) {
	b, err := schedule.Encode(spec)
	if err != nil {
		return 0, err
	}
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(spec.Name), Value: b}).First()
	if err != nil {
		return 0, fmt.Errorf("writing schedule %s: %w", spec.Name, err)
	}
	return r.Offset, nil
}

// Delete writes the tombstone of name and returns its offset.
func Delete(ctx context.Context, cl *kgo.Client, topic, name string) (int64, error) {
	r, err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(name)}).First()
	if err != nil {
		return 0, fmt.Errorf("deleting schedule %s: %w", name, err)
	}
	return r.Offset, nil
}

// Invalid is a record of the schedules topic that could not be decoded.
type Invalid struct {
	Record *kgo.Record
	Err    error
}

// HeaderRepairOf marks a record the leader wrote to repair its key: its value is the offset of the record it
// repairs (an invalid record, or a repair that came too late).
const HeaderRepairOf = "tickgroup-repair-of"

// Broken is a key of the schedules topic whose newest record cannot stand: an invalid record (Invalid set), or
// a repair that arrived after a newer valid definition (Invalid nil). The leader repairs it by restating Last,
// the last valid definition (a tombstone when there is none), so that compaction cannot lose the schedule.
type Broken struct {
	Name string
	// Record is the newest record of the key (the one to repair).
	Record *kgo.Record
	// Invalid is the decoding error of Record, nil for a stale repair.
	Invalid error
	// Last is the last valid definition, nil when the key never had one.
	Last *Entry
}

// fold is the state of the schedules topic as its records, applied in order, make it.
//
// Every replica holds one, with a million schedules on a large fleet, so a schedule is one map slot of 48
// bytes (its key, and a slot that keeps the record's timestamp as Unix nanoseconds and the offset of the
// key's newest valid record beside its Entry) and its compiled Schedule.
type fold struct {
	entries map[string]slot
	broken  map[string]Broken
	// gone holds the offset of the tombstone of each deleted key (its newest valid record): a repair written
	// before it must not bring the schedule back.
	gone map[string]int64
}

// slot is one live schedule of a fold.
type slot struct {
	sched   *schedule.Schedule
	version int64
	updated int64 // the record's timestamp, Unix nanoseconds
	valid   int64 // the offset of the key's newest valid (non-repair) record
	seen    int64 // the offset of the key's newest record folded
}

func (s slot) entry() Entry {
	return Entry{Schedule: s.sched, Version: s.version, UpdatedAt: time.Unix(0, s.updated).UTC()}
}

func newFold() *fold {
	return &fold{entries: map[string]slot{}, broken: map[string]Broken{}, gone: map[string]int64{}}
}

// get returns the live schedule called name.
func (f *fold) get(name string) (Entry, bool) {
	s, ok := f.entries[name]
	if !ok {
		return Entry{}, false
	}
	return s.entry(), true
}

// valid returns the offset of the newest valid (non-repair) record of name, 0 when it has none.
func (f *fold) valid(name string) int64 {
	if s, ok := f.entries[name]; ok {
		return s.valid
	}
	return f.gone[name]
}

// stale reports whether a record of name at offset was folded already, or one after it: a fold takes a key's
// records in offset order only, so that a record read twice (from the shares and the whole topic, or a share
// read again) never brings an older definition back.
func (f *fold) stale(name string, offset int64) bool {
	if s, ok := f.entries[name]; ok && offset <= s.seen {
		return true
	}
	return f.staleGone(name, offset)
}

// staleGone is stale for the deleted and broken keys (no lookup while f has none).
func (f *fold) staleGone(name string, offset int64) bool {
	if len(f.gone) > 0 {
		if g, ok := f.gone[name]; ok && offset <= g {
			return true
		}
	}
	if len(f.broken) > 0 {
		if b, ok := f.broken[name]; ok && offset <= b.Record.Offset {
			return true
		}
	}
	return false
}

// last returns the last valid definition of name, nil when it has none.
func (f *fold) last(name string) *Entry {
	if e, ok := f.get(name); ok {
		return &e
	}
	return nil
}

// decoded is a record's definition, decoded and compiled: the part of folding a record that does not read the
// fold, so that it can run beside the fold (View.Run decodes one fetch while the previous one is folded).
//
// It holds the compiled schedule only (its Spec restates the definition exactly): a cold start keeps a fetch's
// worth of these, and a copy of the Spec in each would add pointers for the GC to scan (docs/benchmarks.md,
// "Figures behind code comments").
type decoded struct {
	sched *schedule.Schedule
	err   error
}

// decode decodes and compiles the definition in r (nothing for a tombstone).
func decode(r *kgo.Record) decoded {
	if r.Value == nil {
		return decoded{}
	}
	spec, err := schedule.Decode(r.Value)
	if err == nil && spec.Name != string(r.Key) { // compared in place: the decoded name is the only copy made
		err = fmt.Errorf("record key %s differs from the schedule name %s", errlimit.Quote(string(r.Key)), errlimit.Quote(spec.Name))
	}
	var sched *schedule.Schedule
	if err == nil {
		sched, err = spec.Compile()
	}
	return decoded{sched: sched, err: err}
}

// Decode returns the schedule r defines, decoded and compiled as the leader and the replicas judge it: an
// error for a definition that does not decode, does not compile, or names another schedule than its key; nil
// and no error for a tombstone.
func Decode(r *kgo.Record) (*schedule.Schedule, error) {
	d := decode(r)
	return d.sched, d.err
}

// apply folds one record in. It returns the decoding error of an invalid record: the key keeps its last valid
// definition and is marked broken until a valid record (or the leader's repair) follows.
func (f *fold) apply(r *kgo.Record) error { return f.applyDecoded(r, decode(r)) }

// applyDecoded is apply with the record's definition already decoded (decode(r)).
func (f *fold) applyDecoded(r *kgo.Record, d decoded) error {
	var name string
	if d.sched != nil {
		name = d.sched.Name() // the decoded copy of the key: the map and the schedule share it
	} else {
		name = string(r.Key)
	}
	// One lookup of name on the common path (a new or changed definition): a leader's cold start folds a
	// million records into a map that does not fit the caches.
	old, had := f.entries[name]
	if had && r.Offset <= old.seen || f.staleGone(name, r.Offset) {
		return nil // folded already (stale)
	}
	repairOf, isRepair := repairTarget(r)
	if isRepair && repairOf < f.valid(name) {
		// A repair written before the leader saw a newer valid definition: not applied, and the key needs a
		// fresh restatement of that newer definition (compaction keeps only the newest record).
		f.broken[name] = Broken{Name: name, Record: kept(r), Last: f.last(name)}
		return nil
	}
	if r.Value == nil {
		valid := f.valid(name)
		delete(f.entries, name)
		delete(f.broken, name)
		if !isRepair {
			valid = r.Offset
		}
		if valid != 0 {
			f.gone[name] = valid
		}
		return nil
	}
	sched, err := d.sched, d.err
	if err != nil {
		err = fmt.Errorf("schedule record %s at offset %d: %w", errlimit.Quote(name), r.Offset, err)
		f.broken[name] = Broken{Name: name, Record: kept(r), Invalid: err, Last: f.last(name)}
		return err
	}
	if len(f.broken) > 0 {
		delete(f.broken, name)
	}
	valid := old.valid
	if !had && len(f.gone) > 0 {
		valid = f.gone[name]
		delete(f.gone, name)
	}
	if !isRepair {
		valid = r.Offset
	}
	if had && SameSpec(old.sched.Spec(), sched.Spec()) {
		old.valid, old.seen = valid, r.Offset
		f.entries[name] = old
		return nil // a restatement (a repair, or a put of the same definition): not a change
	}
	f.entries[name] = slot{sched: sched, version: r.Offset, updated: r.Timestamp.UnixNano(), valid: valid, seen: r.Offset}
	return nil
}

// kept is a copy of r for the fold to keep: the caller may reuse r (a share's load does).
func kept(r *kgo.Record) *kgo.Record {
	c := *r
	return &c
}

func repairTarget(r *kgo.Record) (int64, bool) {
	for _, h := range r.Headers {
		if h.Key == HeaderRepairOf {
			var o int64
			if _, err := fmt.Sscan(string(h.Value), &o); err == nil {
				return o, true
			}
		}
	}
	return 0, false
}

// Load reads the whole schedules topic once (to its last stable offset) and returns the live schedules by name
// and the keys whose newest record is broken (their last valid definition is kept in the entries).
func Load(ctx context.Context, opts []kgo.Opt, topic string) (map[string]Entry, []Broken, error) {
	f := newFold()
	_, err := kafka.ReadStable(ctx, opts, topic, 0, func(r *kgo.Record) error {
		_ = f.apply(r) // an invalid record is kept in f.broken and returned below
		return nil
	})
	broken := make([]Broken, 0, len(f.broken))
	for _, b := range f.broken {
		broken = append(broken, b)
	}
	sort.Slice(broken, func(i, j int) bool { return broken[i].Name < broken[j].Name })
	entries := make(map[string]Entry, len(f.entries))
	for k, s := range f.entries {
		entries[k] = s.entry()
	}
	return entries, broken, err
}

// LoadOne reads the whole schedules topic once, as Load does, and keeps name's records only: the memory of one
// schedule whatever the topic holds (a record of another key is not decoded). It returns name's live schedule
// (ok false when the topic has none) and, when its newest record is broken, that.
func LoadOne(ctx context.Context, opts []kgo.Opt, topic, name string) (e Entry, broken *Broken, ok bool, err error) {
	f := newFold()
	key := []byte(name)
	_, err = kafka.ReadStable(ctx, opts, topic, 0, func(r *kgo.Record) error {
		if bytes.Equal(r.Key, key) {
			_ = f.apply(r) // an invalid record is kept in f.broken and returned below
		}
		return nil
	})
	if b, bad := f.broken[name]; bad {
		broken = &b
	}
	e, ok = f.get(name)
	return e, broken, ok, err
}

// Sorted returns the entries ordered by name.
func Sorted(entries map[string]Entry) []Entry {
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name < out[j].Spec().Name })
	return out
}

// Repair returns the records that repair b: the restatement of its last valid definition (or a tombstone), marked
// with HeaderRepairOf, for the schedules topic.
func Repair(b Broken, topic string) (*kgo.Record, error) {
	r := &kgo.Record{Topic: topic, Partition: 0, Key: []byte(b.Name),
		Headers: []kgo.RecordHeader{{Key: HeaderRepairOf, Value: fmt.Appendf(nil, "%d", b.Record.Offset)}}}
	if b.Last != nil {
		v, err := schedule.Encode(b.Last.Spec())
		if err != nil {
			return nil, fmt.Errorf("restating schedule %s: %w", errlimit.Text(b.Name), err)
		}
		r.Value = v
	}
	return r, nil
}

// DeadLetter is the dead-letter copy of an invalid schedule record (its value cut to 64 KiB), with the reason in
// headers.
func DeadLetter(r *kgo.Record, dlq string, reason error) *kgo.Record {
	d := deadLetter(r, dlq, reason)
	if len(d.Value) > 64<<10 {
		d.Value = d.Value[:64<<10]
	}
	if len(d.Key) > 1024 {
		d.Key = d.Key[:1024]
	}
	return d
}

// View follows the schedules topic and keeps its schedules in memory.
type View struct {
	opts    []kgo.Opt
	topic   string
	dlq     string
	logger  *slog.Logger
	metrics *metrics

	mu      sync.Mutex
	fold    *fold
	changed map[string]struct{}
	// loading is true until the View has loaded: every key read until then counts as changed, and rather than
	// a set of them all (a million names on a standby that never takes them), TakeChanged lists the fold's keys.
	loading bool
	// loadChanged is set when the load ends and cleared by the first TakeChanged after it.
	loadChanged bool
	notify      chan struct{}
	loaded      chan struct{}
	once        sync.Once

	// The shares (shares.go): set by UseShares.
	sharesTopic string
	sharesOpts  []kgo.Opt
	leaders     int
	// sharesWait, sharesPoll and sharesStale are the package's constants unless a test sets them.
	sharesWait, sharesPoll, sharesStale time.Duration
	// testFoldHold, set by this package's tests only, runs before a share's load folds each batch.
	testFoldHold func(k int32)
	// sharded and runCtx are set (under mu) when Run takes the shares.
	sharded bool
	runCtx  context.Context
	// foreign holds the watched schedules of each leader not acquired here (under mu).
	foreign map[int32]*fold
	// failing holds, for each follower whose load fails, when its first failure was (under mu). After a share
	// failed for sharesStale, the View reads the whole topic and takes the shares again no sooner than
	// sharesAfter, failBackoff later (doubled at each such failure, up to maxFailBackoff).
	failing     map[*share]time.Time
	sharesAfter time.Time
	failBackoff time.Duration
	// shareMu orders Acquire, Release and Watch, which start and stop the followers.
	shareMu sync.Mutex
	shares  map[int32]*share
	watched map[int32]*share
	// released are the followers of shares released and not waited for (release); Run waits for them.
	released []*share
	// held counts the Acquires of each leader while v reads the whole topic; watchNames is the last Watch.
	held       map[int32]int
	watchNames []string
	// folded is the offset of the last schedules record folded (under mu).
	folded int64
	// pass is closed when the current read of the whole topic has reached the end it listed (passOver then).
	pass     chan struct{}
	passOver bool
}

// NewView returns a View of topic. Undecodable records are logged, counted and skipped; those written while
// the View runs are also copied to the dead-letter topic dlq (when not empty).
func NewView(opts []kgo.Opt, topic, dlq string, logger *slog.Logger, reg prometheus.Registerer) *View {
	return &View{
		opts:    opts,
		topic:   topic,
		dlq:     dlq,
		logger:  logger.With("component", "schedules"),
		metrics: newMetrics(reg),
		fold:    newFold(),
		changed: map[string]struct{}{},
		loading: true,
		notify:  make(chan struct{}, 1),
		loaded:  make(chan struct{}),
		foreign: map[int32]*fold{},
		failing: map[*share]time.Time{},
		shares:  map[int32]*share{},
		watched: map[int32]*share{},
		held:    map[int32]int{},
		folded:  -1,
		pass:    make(chan struct{}),
	}
}

// Loaded is closed once the View has read everything the topic held when Run started.
func (v *View) Loaded() <-chan struct{} { return v.loaded }

// Changed is signalled (coalesced) whenever schedules changed; TakeChanged says which.
func (v *View) Changed() <-chan struct{} { return v.notify }

// TakeChanged returns the names changed since the last call and forgets them.
func (v *View) TakeChanged() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var names []string
	if v.loading || v.loadChanged {
		// Every key read so far: listed from the fold (live and deleted keys are disjoint; a broken key may be
		// either or neither), not gathered in a set first.
		v.loadChanged = false
		f := v.fold
		names = make([]string, 0, len(f.entries)+len(f.gone))
		names = slices.AppendSeq(names, maps.Keys(f.entries))
		names = slices.AppendSeq(names, maps.Keys(f.gone))
		known := func(n string) bool {
			_, live := f.entries[n]
			_, gone := f.gone[n]
			return live || gone
		}
		for n := range f.broken {
			if !known(n) {
				names = append(names, n)
			}
		}
		for n := range v.changed {
			if _, broken := f.broken[n]; !known(n) && !broken {
				names = append(names, n)
			}
		}
	} else {
		names = slices.AppendSeq(make([]string, 0, len(v.changed)), maps.Keys(v.changed))
	}
	if len(v.changed) > 1024 {
		v.changed = map[string]struct{}{} // clear would keep the large table
	} else {
		clear(v.changed)
	}
	return names
}

// Get returns the schedule called name.
func (v *View) Get(name string) (Entry, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e, ok := v.fold.get(name); ok || !v.sharded {
		return e, ok
	}
	if f := v.foreign[kafka.LeaderOf(name, v.leaders)]; f != nil {
		return f.get(name)
	}
	return Entry{}, false
}

// Snapshot returns a copy of all schedules.
func (v *View) Snapshot() map[string]Entry {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]Entry, len(v.fold.entries))
	for k, s := range v.fold.entries {
		out[k] = s.entry()
	}
	return out
}

// Len returns the number of schedules.
func (v *View) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.fold.entries)
}

// All returns the schedules, read in place rather than copied (a leader's term starts from a million of them).
// The View is locked while the loop runs: its body must not call the View, and it holds back the View's
// reading of the topic.
func (v *View) All() iter.Seq2[string, Entry] {
	return func(yield func(string, Entry) bool) {
		v.mu.Lock()
		defer v.mu.Unlock()
		for k, s := range v.fold.entries {
			if !yield(k, s.entry()) {
				return
			}
		}
	}
}

// Run follows the topic until ctx ends.
func (v *View) Run(ctx context.Context) error {
	if v.sharesTopic == "" {
		return v.runWhole(ctx)
	}
	adm, err := kgo.NewClient(v.sharesOpts...)
	if err != nil {
		return fmt.Errorf("schedules: client: %w", err)
	}
	defer adm.Close()
	sharded, switched, last := v.sharesComplete(ctx), false, int64(-1)
	for {
		if sharded {
			if !v.runShares(ctx, switched, last) {
				return nil
			}
			sharded = false // the shares stalled: the whole topic again, until they are complete
			v.mu.Lock()
			v.pass, v.passOver = make(chan struct{}), false
			v.mu.Unlock()
		}
		// The whole topic until the shares are complete (shares.go), then the shares.
		wholeCtx, stop := context.WithCancel(ctx)
		watching := make(chan struct{})
		go func() {
			defer close(watching)
			v.awaitShares(wholeCtx, adm, stop)
		}()
		err := v.runWhole(wholeCtx)
		stop()
		<-watching
		if err != nil || ctx.Err() != nil {
			return err
		}
		v.mu.Lock()
		last = v.folded
		v.mu.Unlock()
		sharded, switched = true, true
	}
}

// runWhole follows the whole schedules topic until ctx ends.
func (v *View) runWhole(ctx context.Context) error {
	cl, err := kgo.NewClient(append(v.opts[:len(v.opts):len(v.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{v.topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return fmt.Errorf("schedules: client: %w", err)
	}
	defer cl.Close()

	end, err := v.endOffset(ctx, cl)
	if err != nil {
		return err
	}
	if end == 0 {
		v.mu.Lock()
		v.markLoaded()
		v.passDone()
		v.mu.Unlock()
	} else if hint := v.sizeHint(ctx, cl, end); hint > 0 {
		v.mu.Lock()
		if len(v.fold.entries) == 0 {
			v.fold.entries = make(map[string]slot, hint)
		}
		v.mu.Unlock()
	}
	// One goroutine polls and decodes each fetch while this one folds the one before: at a cold start with a
	// million schedules, decoding and folding take about as long as each other, and a leader waits for both.
	fetched := make(chan []fetchedRecord, 1)
	go func() {
		defer close(fetched)
		for {
			fetches := cl.PollFetches(ctx)
			if ctx.Err() != nil || fetches.IsClientClosed() {
				return
			}
			fetches.EachError(func(t string, p int32, err error) {
				v.logger.Warn("fetching schedules", "err", err)
			})
			batch := make([]fetchedRecord, 0, fetches.NumRecords())
			fetches.EachRecord(func(r *kgo.Record) { batch = append(batch, fetchedRecord{r, decode(r)}) })
			select {
			case fetched <- batch:
			case <-ctx.Done():
				return
			}
		}
	}()
	for batch := range fetched {
		v.mu.Lock()
		for _, fr := range batch {
			r := fr.r
			// A record folded already (read again after the shares stalled, shares.go) changes nothing.
			if !v.fold.stale(string(r.Key), r.Offset) {
				if bad := v.fold.applyDecoded(r, fr.d); bad != nil {
					v.metrics.invalid.Inc()
					// Every replica sees it; the leader repairs it and dead-letters it, once, and logs it at warn.
					v.logger.Debug("invalid schedule record: keeping the last valid definition until the leader repairs it", "schedule", errlimit.Text(string(r.Key)), "offset", r.Offset, "err", bad)
				}
				if !v.loading {
					v.changed[string(r.Key)] = struct{}{}
				}
			}
			v.folded = max(v.folded, r.Offset)
			if r.Offset >= end-1 {
				v.markLoaded()
				v.passDone()
			}
		}
		v.metrics.schedules.Set(float64(len(v.fold.entries)))
		v.metrics.broken.Set(float64(len(v.fold.broken)))
		n := len(v.changed)
		if v.loadChanged {
			n++
		}
		v.mu.Unlock()
		if n > 0 {
			select {
			case v.notify <- struct{}{}:
			default:
			}
		}
	}
	v.logger.Info("schedules view stopped")
	return nil
}

// fetchedRecord is a record of the schedules topic with its definition decoded.
type fetchedRecord struct {
	r *kgo.Record
	d decoded
}

// Broken returns the keys whose newest record the leader must repair.
func (v *View) Broken() []Broken {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]Broken, 0, len(v.fold.broken))
	for _, b := range v.fold.broken {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// passDone marks the current read of the whole topic at its end. Called with v.mu held.
func (v *View) passDone() {
	if !v.passOver {
		v.passOver = true
		close(v.pass)
	}
}

// markLoaded is called with v.mu held, or before Run reads.
func (v *View) markLoaded() {
	v.once.Do(func() {
		if v.loading {
			v.loading, v.loadChanged = false, true
		}
		v.logger.Info("schedules loaded", "schedules", len(v.fold.entries))
		close(v.loaded)
	})
}

// maxSizeHint bounds the fold's initial size: a topic holds more records than keys (compaction keeps up to
// about half of it dirty, and tombstones for a day), and a map does not shrink.
const maxSizeHint = 2_000_000

// sizeHint is the number of records before end (at most maxSizeHint), 0 if unknown: the size the fold's map is
// made with, so that a cold start of a million schedules does not grow it twenty times.
func (v *View) sizeHint(ctx context.Context, cl *kgo.Client, end int64) int {
	starts, err := kadm.NewClient(cl).ListStartOffsets(ctx, v.topic)
	if err != nil {
		return 0
	}
	o, ok := starts.Lookup(v.topic, 0)
	if !ok || o.Err != nil || o.Offset >= end {
		return 0
	}
	return int(min(end-o.Offset, maxSizeHint))
}

func (v *View) endOffset(ctx context.Context, cl *kgo.Client) (int64, error) {
	adm := kadm.NewClient(cl)
	for {
		ends, err := adm.ListCommittedOffsets(ctx, v.topic)
		if err == nil {
			if o, ok := ends.Lookup(v.topic, 0); ok && o.Err == nil {
				return o.Offset, nil
			} else if ok {
				err = o.Err
			} else {
				err = errors.New("no partition 0")
			}
		}
		v.logger.Warn("listing the schedules topic's end; retrying", "err", err)
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// deadLetter copies a record that could not be used to the dead-letter topic, with the reason in headers.
func deadLetter(r *kgo.Record, dlq string, reason error) *kgo.Record {
	return &kgo.Record{
		Topic: dlq,
		Key:   r.Key,
		Value: r.Value,
		Headers: []kgo.RecordHeader{
			{Key: "tickgroup-reason", Value: []byte("invalid_schedule")},
			{Key: "tickgroup-error", Value: []byte(reason.Error())},
			{Key: "tickgroup-source-topic", Value: []byte(r.Topic)},
			{Key: "tickgroup-source-partition", Value: fmt.Appendf(nil, "%d", r.Partition)},
			{Key: "tickgroup-source-offset", Value: fmt.Appendf(nil, "%d", r.Offset)},
		},
	}
}
