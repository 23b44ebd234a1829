package store

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/errlimit"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/shares"
)

// The shares. A View given the shares topic (UseShares) decides when it starts: when the shares are complete
// (package shares: the copy's progress at the schedules topic's end), it reads nothing until a term asks for
// its leader's share (Acquire), reads that partition of the shares topic, and drops it when the term ends
// (Release). A replica then holds the schedules of the leaders it runs, not the namespace's. Otherwise it reads
// the whole schedules topic, as before the shares, until the shares hold all it read: then it switches to them,
// keeping the schedules of the leaders it runs and reading their shares from there (runShares).
//
// A share record is taken for the schedules record it copies (shares.Source): its offset there is the
// schedule's version and its timestamp the change time, so a term on the shares and a term on the whole topic
// plan the same slots. The shares trail the schedules topic by the copy's delay (a transaction of leader 0's
// copier, milliseconds; seconds while leader 0 is taken over): a change reaches a term that much later.
//
// A term also looks up schedules of other leaders: the upstreams of its chains and gates. Watch names them; the
// View follows the partitions that hold them, keeping those schedules only, in a fold of its own per partition.

// sharesWait is how long a starting View waits for the shares to be complete (leader 0 copying the last
// changes) before it reads the whole schedules topic instead.
const sharesWait = 3 * time.Second

// sharesPoll is how often a View checks the copy's progress: on the whole topic, whether the shares are complete;
// on the shares, whether they stalled.
const sharesPoll = 5 * time.Second

// sharesStale is how long the shares may stay behind the schedules topic without moving before a View on them
// reads the whole topic again: longer than a takeover of leader 0 and its copier's retries.
const sharesStale = time.Minute

// UseShares makes v read the shares topic when the shares are complete, for a namespace of leaders leaders
// (two or more; with one, the share is the whole topic), with clients of opts (several at once: no metrics
// hooks). It must be called before Run.
func (v *View) UseShares(topic string, leaders int, opts []kgo.Opt) {
	if leaders > 1 {
		v.sharesTopic, v.leaders, v.sharesOpts = topic, leaders, opts
	}
}

// Sharded reports whether v reads the shares (set once Loaded is closed): it then holds only the schedules of
// the leaders acquired, and the upstreams watched.
func (v *View) Sharded() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.sharded
}

// share is the follower of one partition of the shares topic: a leader's share, or the watched schedules of a
// leader this replica does not run (keep non-nil, into a fold of its own).
type share struct {
	k    int32
	keep map[string]bool
	fold *fold // the View's fold for a leader's share
	skip int64 // the offset up to which the fold has the schedules records (a switch from the whole topic)
	// changes: what the load folds is a change for the terms (a switch from the whole topic)
	changes bool
	refs    int
	cancel  context.CancelFunc
	loaded  chan struct{}
	done    chan struct{}
	// dropped: released; what the follower still reads is not folded (set and read with View.mu held).
	dropped bool
}

// stop stops the follower and waits for it.
func (s *share) stop() {
	s.cancel()
	<-s.done
}

// copyStatus is how far leader 0's copy has gone.
func (v *View) copyStatus(ctx context.Context) (shares.Status, error) {
	return shares.ReadStatus(ctx, v.sharesOpts, v.sharesTopic, v.topic)
}

// sharesComplete reports whether the shares hold the whole schedules topic, waiting up to sharesWait for
// leader 0's copy to get there.
func (v *View) sharesComplete(ctx context.Context) bool {
	deadline := time.Now().Add(cmp.Or(v.sharesWait, sharesWait))
	for {
		st, err := v.copyStatus(ctx)
		if err == nil && !st.Exists {
			v.logger.Info("no schedule shares in this namespace: this replica reads the whole schedules topic")
			return false
		}
		if err == nil && st.Complete() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			v.logger.Info("the schedule shares are not complete: this replica reads the whole schedules topic until they are",
				"progress", st.Progress, "end", st.End, "err", err)
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// runShares is Run on the shares: the followers are started by Acquire and Watch. A View that read the whole
// topic (switched) up to offset last (-1: none) switches to the shares: the leaders acquired so far, and the
// schedules watched, keep what they hold and their shares are read for the records after last, each a change for
// the terms; the others' are dropped. It
// returns when ctx ends (false), or when the shares stall (true): behind the schedules topic and not moving for
// sharesStale, as when no copier runs (leader 0 of a build before the shares, or a copy refused). The View then
// reads the whole topic again, keeping what it holds (fold.stale keeps a schedule from going back).
func (v *View) runShares(ctx context.Context, switched bool, last int64) (stalled bool) {
	v.shareMu.Lock()
	v.mu.Lock()
	v.sharded, v.runCtx = true, ctx
	v.metrics.sharded.Set(1)
	v.markLoaded()
	if !switched {
		// Nothing read before: the shares loaded from now on are no change for the terms, each of which starts
		// from the View as it is. Listed as changed, every schedule of a share loaded before another term's
		// first TakeChanged would be planned again by its own term (a cold start's million names).
		v.loadChanged = false
	}
	dropped := 0
	if switched {
		for k, refs := range v.held {
			if refs > 0 {
				s := v.startShare(ctx, k, nil, v.fold, last, true)
				s.refs = refs
				v.shares[k] = s
			}
		}
		for k, keep := range v.wanted() {
			f := v.fold.subset(keep) // what Get answers until the follower has read the rest
			v.foreign[k] = f
			v.watched[k] = v.startShare(ctx, k, keep, f, last, true)
		}
		dropped = v.fold.drop(func(name string) bool { return v.held[kafka.LeaderOf(name, v.leaders)] == 0 })
		v.metrics.schedules.Set(float64(len(v.fold.entries)))
	}
	clear(v.held)
	v.mu.Unlock()
	v.shareMu.Unlock()
	if switched {
		v.logger.Info("schedules: the shares are complete; this replica now reads only those of the leaders it runs",
			"leaders", v.leaders, "dropped", dropped)
	} else {
		v.logger.Info("schedules: this replica reads the shares of the leaders it runs", "leaders", v.leaders)
	}
	stalled = v.watchStall(ctx)
	v.shareMu.Lock()
	defer v.shareMu.Unlock()
	for _, s := range v.shares {
		s.stop()
	}
	for _, s := range v.watched {
		s.stop()
	}
	for _, s := range v.released {
		<-s.done
	}
	v.released = nil
	if !stalled {
		v.logger.Info("schedules view stopped")
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for k, s := range v.shares {
		v.held[k] = s.refs
	}
	for _, f := range v.foreign {
		v.fold.merge(f) // the upstreams watched stay known while the whole topic is read again
	}
	clear(v.shares)
	clear(v.watched)
	clear(v.foreign)
	v.sharded = false
	v.metrics.sharded.Set(0)
	return true
}

// maxFailBackoff bounds how long a View that left the shares for a share it could not read waits before it
// takes them again.
const maxFailBackoff = 30 * time.Minute

// watchStall returns true once the shares are behind the schedules topic and have not moved for sharesStale,
// or a share followed here has failed to load for as long (its partition offline, say, when its terms would
// wait for ever); false when ctx ends. After such a failure the View takes the shares again no sooner than a
// backoff (sharesStale, doubled at each failure up to maxFailBackoff): a partition that stays unreadable is not
// tried every minute.
func (v *View) watchStall(ctx context.Context) bool {
	last, since, start := int64(-2), time.Now(), time.Now()
	stale := cmp.Or(v.sharesStale, sharesStale)
	for {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(cmp.Or(v.sharesPoll, sharesPoll)):
		}
		if time.Since(start) >= maxFailBackoff {
			v.mu.Lock()
			v.failBackoff = 0 // the shares have been read long enough: a new failure starts the backoff again
			v.mu.Unlock()
		}
		if k, failed := v.failingFor(stale); failed {
			v.mu.Lock()
			v.failBackoff = min(max(2*v.failBackoff, stale), maxFailBackoff)
			v.sharesAfter = time.Now().Add(v.failBackoff)
			backoff := v.failBackoff
			v.mu.Unlock()
			v.logger.Error("a schedule share cannot be read: this replica reads the whole schedules topic again", "leader", k, "for", stale, "shares_again_in", backoff)
			return true
		}
		st, err := v.copyStatus(ctx)
		if err != nil {
			continue
		}
		progress, end := st.Progress, st.End
		if st.Complete() || progress != last {
			last, since = progress, time.Now()
			continue
		}
		if time.Since(since) >= stale {
			v.logger.Warn("the schedule shares are behind the schedules topic and not moving (no copier: leader 0 of an earlier build, or its copy refused): this replica reads the whole schedules topic again until they catch up",
				"progress", progress, "end", end, "for", time.Since(since).Round(time.Second))
			return true
		}
	}
}

// loadFailed notes that the load of s failed (since its first failure), or that it no longer does.
func (v *View) loadFailed(s *share, failed bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.failing[s]; failed && !ok {
		v.failing[s] = time.Now()
	} else if !failed {
		delete(v.failing, s)
	}
}

// failingFor returns the leader of a share whose load has failed for stale or longer.
func (v *View) failingFor(stale time.Duration) (int32, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for s, since := range v.failing {
		if time.Since(since) >= stale {
			return s.k, true
		}
	}
	return 0, false
}

// awaitShares checks now and then, once v's read of the whole topic has reached its end, whether the shares
// hold everything v folded; then it calls stop, and Run goes on with the shares.
func (v *View) awaitShares(ctx context.Context, adm *kgo.Client, stop context.CancelFunc) {
	v.mu.Lock()
	pass := v.pass
	v.mu.Unlock()
	select {
	case <-ctx.Done():
		return
	case <-pass: // this read has reached the end it listed: what it folded is the whole topic's then
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(cmp.Or(v.sharesPoll, sharesPoll)):
		}
		st, err := v.copyStatus(ctx)
		if err != nil || !st.Exists {
			continue
		}
		if n, err := shares.Partitions(ctx, kadm.NewClient(adm), v.sharesTopic); err != nil || n != v.leaders {
			continue
		}
		v.mu.Lock()
		folded, after := v.folded, v.sharesAfter
		v.mu.Unlock()
		if st.Progress >= folded && time.Now().After(after) {
			stop()
			return
		}
	}
}

// Held returns the number of leaders whose shares v holds (0 unless Sharded).
func (v *View) Held() int {
	v.shareMu.Lock()
	defer v.shareMu.Unlock()
	return len(v.shares)
}

// Acquire makes v hold leader k's schedules, and returns once they are loaded (on the whole topic: once the
// current read of it has reached the end it listed), with the function that gives them back (once the term
// ends; nil with an error).
func (v *View) Acquire(ctx context.Context, k int32) (release func(), err error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-v.loaded:
		}
		v.shareMu.Lock()
		v.mu.Lock()
		sharded, runCtx, pass := v.sharded, v.runCtx, v.pass
		v.mu.Unlock()
		var once sync.Once
		release = func() { once.Do(func() { v.release(k) }) }
		if !sharded {
			v.held[k]++
			v.shareMu.Unlock()
			select {
			case <-ctx.Done():
				release()
				return nil, ctx.Err()
			case <-pass:
				return release, nil
			}
		}
		s := v.shares[k]
		if s == nil {
			s = v.startShare(runCtx, k, nil, v.fold, -1, false)
			v.shares[k] = s
		}
		s.refs++
		v.shareMu.Unlock()
		select {
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		case <-s.loaded:
			return release, nil
		case <-s.done: // the shares stalled (runShares), or v stops
			release()
			if err := runCtx.Err(); err != nil {
				return nil, err
			}
		}
	}
}

// release undoes an Acquire: once no term holds leader k, its schedules are dropped.
func (v *View) release(k int32) {
	v.shareMu.Lock()
	defer v.shareMu.Unlock()
	s := v.shares[k]
	if s == nil {
		if v.held[k] > 0 {
			v.held[k]--
		}
		return
	}
	if s.refs--; s.refs > 0 {
		return
	}
	// The follower is not waited for: a share released while it loads (a term revoked at once, as a lone
	// replica's are when the others join) would hold up the release, and the rebalance, until its load ends.
	// Marked dropped with the fold's lock held, it folds nothing more.
	delete(v.shares, k)
	s.cancel()
	v.released = slices.DeleteFunc(v.released, func(s *share) bool { return isClosed(s.done) })
	v.released = append(v.released, s)
	v.mu.Lock()
	s.dropped = true
	dropped := v.fold.drop(func(name string) bool { return kafka.LeaderOf(name, v.leaders) == k })
	v.metrics.schedules.Set(float64(len(v.fold.entries)))
	v.mu.Unlock()
	v.logger.Info("schedule share dropped", "leader", k, "schedules", dropped)
}

// Watch makes v follow the schedules named (of any leader), for Get. A name newly watched is read from its
// share's start, and listed as changed once read (TakeChanged); until then the names of its share already
// watched are answered as before. On the whole topic, v holds every schedule: the names are kept for a switch
// to the shares.
func (v *View) Watch(names []string) {
	v.shareMu.Lock()
	defer v.shareMu.Unlock()
	v.mu.Lock()
	sharded, runCtx := v.sharded, v.runCtx
	v.watchNames = names
	v.mu.Unlock()
	if !sharded || runCtx.Err() != nil {
		return
	}
	want := v.wanted()
	for k, s := range v.watched {
		if !maps.Equal(s.keep, want[k]) {
			s.stop()
			delete(v.watched, k)
			if want[k] == nil {
				v.mu.Lock()
				delete(v.foreign, k)
				v.mu.Unlock()
			} // else the fold read so far answers until the new follower's replaces it
		}
	}
	for k, keep := range want {
		if v.watched[k] == nil {
			v.watched[k] = v.startShare(runCtx, k, keep, newFold(), -1, false)
		}
	}
}

// wanted is v.watchNames by leader. Called with shareMu held.
func (v *View) wanted() map[int32]map[string]bool {
	want := map[int32]map[string]bool{}
	for _, n := range v.watchNames {
		k := kafka.LeaderOf(n, v.leaders)
		if want[k] == nil {
			want[k] = map[string]bool{}
		}
		want[k][n] = true
	}
	return want
}

// startShare starts the follower of partition k into f (keep: only those names; skip: the records of offsets
// up to skip are in f already; changes: what its load folds is a change for the terms, as after a switch from
// the whole topic). Called with shareMu held.
func (v *View) startShare(ctx context.Context, k int32, keep map[string]bool, f *fold, skip int64, changes bool) *share {
	ctx, cancel := context.WithCancel(ctx)
	s := &share{k: k, keep: keep, fold: f, skip: skip, changes: changes, cancel: cancel, loaded: make(chan struct{}), done: make(chan struct{})}
	go v.followShare(ctx, s)
	return s
}

// followShare reads partition s.k of the shares topic into s.fold until ctx ends: to its end first (then
// s.loaded is closed), then as it grows.
func (v *View) followShare(ctx context.Context, s *share) {
	defer close(s.done)
	defer v.loadFailed(s, false)
	start := time.Now()
	var next int64
	for {
		var err error
		next, err = v.loadShare(ctx, s)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		v.loadFailed(s, true) // watchStall reads the whole topic again if it lasts
		v.logger.Warn("reading a schedule share; retrying", "leader", s.k, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	v.loadFailed(s, false)
	v.mu.Lock()
	if s.dropped {
		v.mu.Unlock()
		return
	}
	n := 0
	if s.keep == nil {
		for name := range s.fold.entries {
			if kafka.LeaderOf(name, v.leaders) == s.k {
				n++
			}
		}
	}
	if s.keep != nil {
		v.foreign[s.k] = s.fold
		for name := range s.keep {
			v.changed[name] = struct{}{} // read at last: a term waiting for it goes on
		}
	}
	v.metrics.schedules.Set(float64(len(v.fold.entries)))
	v.mu.Unlock()
	close(s.loaded)
	if s.keep == nil {
		v.logger.Info("schedule share loaded", "leader", s.k, "schedules", n, "took", time.Since(start).Round(time.Millisecond))
	} else {
		v.signal()
	}
	v.followFrom(ctx, s, next)
}

// followFrom follows partition s.k of the shares topic from offset next until ctx ends.
func (v *View) followFrom(ctx context.Context, s *share, next int64) {
	cl, err := kgo.NewClient(append(v.sharesOpts[:len(v.sharesOpts):len(v.sharesOpts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{v.sharesTopic: {s.k: kgo.NewOffset().At(next)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		v.logger.Error("schedule share: client", "leader", s.k, "err", err)
		return
	}
	defer cl.Close()
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			v.logger.Warn("fetching a schedule share", "leader", s.k, "err", err)
		})
		changed := false
		fetches.EachRecord(func(r *kgo.Record) { changed = v.foldShare(s, r, true) || changed })
		if changed {
			v.signal()
		}
	}
}

// foldShare folds one share record into s.fold, as the schedules record it copies; changed: note its name in
// v.changed. It reports whether it noted one.
func (v *View) foldShare(s *share, r *kgo.Record, changed bool) bool {
	var src kgo.Record
	d, ok := v.prepareShare(s, r, &src)
	if !ok {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.applyShare(s, &src, d, changed)
}

// prepareShare is the part of foldShare that needs no lock: it sets src to the schedules record r copies, and
// returns it decoded, and whether it is to be folded.
func (v *View) prepareShare(s *share, r, src *kgo.Record) (decoded, bool) {
	if shares.Internal(r.Key) || (s.keep != nil && !s.keep[string(r.Key)]) {
		return decoded{}, false
	}
	if !shares.Source(src, r, v.topic) || kafka.LeaderOf(string(r.Key), v.leaders) != s.k {
		v.logger.Debug("a record of the schedule shares that the copier did not write: skipped", "leader", s.k, "offset", r.Offset)
		return decoded{}, false
	}
	if src.Offset <= s.skip {
		return decoded{}, false
	}
	return decode(src), true
}

// applyShare is the rest of foldShare, with v.mu held.
func (v *View) applyShare(s *share, r *kgo.Record, d decoded, changed bool) bool {
	if s.dropped || s.fold.stale(string(r.Key), r.Offset) {
		return false // folded already (the whole topic's read before a switch)
	}
	if s.keep == nil {
		v.folded = max(v.folded, r.Offset)
	}
	if bad := s.fold.applyDecoded(r, d); bad != nil && s.keep == nil {
		v.metrics.invalid.Inc()
		v.logger.Debug("invalid schedule record: keeping the last valid definition until its leader repairs it", "schedule", errlimit.Text(string(r.Key)), "offset", r.Offset, "err", bad)
	}
	if !changed {
		return false
	}
	v.changed[string(r.Key)] = struct{}{}
	if s.keep == nil {
		v.metrics.schedules.Set(float64(len(v.fold.entries)))
		v.metrics.broken.Set(float64(len(v.fold.broken)))
	}
	return true
}

// loadShare reads partition s.k of the shares topic to its end into s.fold, and returns the offset to follow it
// from. The reading goroutine hands batches of records to another that decodes and folds them: a takeover
// waits for the load, and decoding costs as much as fetching.
func (v *View) loadShare(ctx context.Context, s *share) (int64, error) {
	const batchSize = 2048
	batches := make(chan []*kgo.Record, 2)
	folded := make(chan struct{})
	go func() {
		defer close(folded)
		// The schedules records are made in place, in a slice reused for every batch (the fold copies what it
		// keeps of them): a share's load makes no record of its own for each it reads.
		type prepared struct {
			r kgo.Record
			d decoded
		}
		out := make([]prepared, batchSize)
		for batch := range batches {
			if v.testFoldHold != nil {
				v.testFoldHold(s.k)
			}
			if ctx.Err() != nil {
				continue // released: the rest is not folded
			}
			n := 0
			for _, r := range batch {
				if d, ok := v.prepareShare(s, r, &out[n].r); ok {
					out[n].d = d
					n++
				}
			}
			// After a switch from the whole topic, what the share adds to the fold is a change for the terms.
			changed := false
			v.mu.Lock()
			for i := range out[:n] {
				changed = v.applyShare(s, &out[i].r, out[i].d, s.changes) || changed
			}
			v.mu.Unlock()
			if changed {
				v.signal()
			}
		}
	}()
	batch := make([]*kgo.Record, 0, batchSize)
	next, err := kafka.ReadStable(ctx, v.sharesOpts, v.sharesTopic, s.k, func(r *kgo.Record) error {
		if batch = append(batch, r); len(batch) == batchSize {
			select {
			case batches <- batch:
			case <-ctx.Done(): // released: the folding goroutine may be far behind
				return ctx.Err()
			}
			batch = make([]*kgo.Record, 0, batchSize)
		}
		return nil
	})
	if len(batch) > 0 && err == nil {
		batches <- batch
	}
	close(batches)
	<-folded
	return next, err
}

// signal tells the View's reader that schedules changed.
func (v *View) signal() {
	select {
	case v.notify <- struct{}{}:
	default:
	}
}

// drop deletes the keys for which of is true, and returns how many live schedules it deleted. A map that lost
// most of its keys is made anew: Go's maps do not shrink.
func (f *fold) drop(of func(string) bool) int {
	n := 0
	for name := range f.entries {
		if of(name) {
			delete(f.entries, name)
			n++
		}
	}
	for name := range f.gone {
		if of(name) {
			delete(f.gone, name)
		}
	}
	for name := range f.broken {
		if of(name) {
			delete(f.broken, name)
		}
	}
	if n > len(f.entries) {
		f.entries = maps.Clone(f.entries)
		f.gone = maps.Clone(f.gone)
	}
	return n
}

// watchedNames are the names v follows for Get beyond its leaders' shares, sorted (tests).
func (v *View) watchedNames() []string {
	v.shareMu.Lock()
	defer v.shareMu.Unlock()
	var out []string
	for _, s := range v.watched {
		out = slices.AppendSeq(out, maps.Keys(s.keep))
	}
	slices.Sort(out)
	return out
}

// subset returns a fold of names' keys of f (copied).
func (f *fold) subset(names map[string]bool) *fold {
	out := newFold()
	for n := range names {
		if e, ok := f.entries[n]; ok {
			out.entries[n] = e
		}
		if g, ok := f.gone[n]; ok {
			out.gone[n] = g
		}
		if b, ok := f.broken[n]; ok {
			out.broken[n] = b
		}
	}
	return out
}

// merge adds o's keys that f knows nothing of.
func (f *fold) merge(o *fold) {
	for n, e := range o.entries {
		if !f.known(n) {
			f.entries[n] = e
		}
	}
	for n, g := range o.gone {
		if !f.known(n) {
			f.gone[n] = g
		}
	}
}

// known reports whether f has any record of name.
func (f *fold) known(name string) bool {
	_, live := f.entries[name]
	_, gone := f.gone[name]
	_, broken := f.broken[name]
	return live || gone || broken
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
