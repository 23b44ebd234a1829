package worker

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// A lane's queue. The leader emits ticks ahead of their slot (ticker run --lead), so a lane holds the records
// of its partition in memory until their instant. The poll loop appends them as they are fetched, so the lane
// keeps reading while it waits: the cancellations of paused and deleted schedules (tick.Cancel) and manual
// triggers arrive behind the held ticks and take effect at once.
//
// Order (pick): the scheduled ticks of one schedule and shard start one at a time, in offset order, each at its
// instant; ticks of other schedules run beside them, up to the worker's Concurrency. A manual trigger (or an
// unreadable record, which is only dead-lettered) does not wait behind a held tick: it runs as soon as no other
// run of its schedule and shard is under way. The committed offset stays below the first record not finished, so
// a crash never skips a held tick; a record that finished out of order has its outcome in the ledger, which the
// next owner reads.

// laneQueueMax is how many records a lane holds before fetching of its partition pauses (it resumes below half).
const laneQueueMax = 50_000

// item is one record of a lane's queue.
type item struct {
	rec *kgo.Record
	// seq numbers the lane's items in the order they were queued (the queue's order).
	seq int64
	// t is the decoded tick (valid when err is nil and the record is not a cancel).
	t   tick.Tick
	err error
	// startAt is when the tick is due to start (zero: at once); jump is set for records that need not wait
	// behind a held tick: manual triggers and unreadable records.
	startAt time.Time
	jump    bool
	// key orders the runs of one schedule and shard (itemKey; empty for an unreadable record); kid is its
	// index in the lane's keyTable.
	key string
	kid int32
	// running is set (under w.mu) while a run of the record is under way; handled once the lane is done with
	// the record (its outcome may still be in flight); done once the record may be committed past.
	running bool
	handled bool
	done    bool
	// ran is when the record's handler ran, from its first attempt's start to its last attempt's end (set by
	// its runner; zero when no handler started); overran is set on a scheduled tick that fell due while the
	// handler of an earlier tick of its key ran and had outlasted its period (it ran longer than the spacing
	// between its instant and the next tick's): the default overlap policy skips it when a newer tick of the key
	// is due too.
	ran     span
	overran bool
	// limitHeld is set once pick held the tick for its limit; holdsLimit while it counts against its limit
	// (picked, not handled). See limiter.go.
	limitHeld, holdsLimit bool
}

// enqueue appends a fetched batch to the lane's queue, remembering cancellations, and wakes the lane. It reports
// whether the queue is full (the caller pauses fetching of the partition). Called by the poll loop.
func (l *lane) enqueue(recs []*kgo.Record) (full bool) {
	items := make([]*item, 0, len(recs))
	var cancels []tick.Cancel
	forged := 0
	for _, r := range recs {
		it := &item{rec: r}
		switch {
		case cancel.Is(r) && !cancel.Genuine(r):
			// Not the leader's: it takes no effect, and is dead-lettered like an unreadable record.
			it.err, it.jump = cancel.ErrForged, true
			forged++
		case cancel.Is(r) && validCancel(r, &cancels):
			it.handled, it.done = true, true
		default:
			// A tick, or an unreadable record (a cancel among them): an unreadable one is dead-lettered.
			it.t, it.err = tick.Decode(r.Value)
			if it.err == nil {
				it.key = itemKey(&it.t)
			}
			switch {
			case it.err != nil || it.t.Trigger:
				it.jump = true
			case it.t.NotBefore != nil:
				it.startAt = *it.t.NotBefore
			}
		}
		items = append(items, it)
	}
	w := l.w
	w.mu.Lock()
	for _, it := range items {
		it.seq = l.seq
		l.seq++
	}
	l.queue = append(l.queue, items...)
	for _, c := range cancels {
		l.cancels.Add(c)
	}
	for _, it := range items {
		if it.jump {
			l.jumps++
		}
		if it.key != "" {
			it.kid = l.keys.id(it.key)
			if !it.handled {
				l.keys.queue(it.kid)
			}
		}
		if !it.handled {
			l.waitLocked(it)
		}
	}
	l.advanceLocked()
	full = len(l.queue) >= laneQueueMax
	l.paused = l.paused || full
	w.mu.Unlock()
	if forged > 0 {
		w.refusedCancels(l.partition, forged)
	}
	if len(cancels) > 0 {
		w.logger.Debug("cancellations received", "partition", l.partition, "count", len(cancels), "schedule", cancels[0].Schedule, "reason", cancels[0].Reason)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return full
}

// validCancel decodes the cancel record r into cancels and reports whether it could.
func validCancel(r *kgo.Record, cancels *[]tick.Cancel) bool {
	c, err := tick.DecodeCancel(r.Value)
	if err != nil {
		return false
	}
	*cancels = append(*cancels, c)
	return true
}

// pick appends to out the records the lane should start now, at most limit, and marks them running; when none
// is ready it returns how long to wait for the first held one (0: nothing to wait for but a batch or the end of
// a run). One scan finds the records that may start (up to limit), so a backlog costs a scan per batch, not per
// record; and a scan looks only at the heads (the first waiting tick of each key, and the waiting triggers and
// unreadable records), so it costs the number of keys, not of records queued.
//
// The rules, per key (a schedule and shard, see itemKey): the key's scheduled ticks start one at a time, in
// offset order, each on its instant, and never while another record of the key runs; a manual trigger does not
// wait behind the key's held ticks, only for its running one; an unreadable record (only dead-lettered) needs no
// key and goes at once. Records of different keys run side by side, so a slow job delays only its own schedule.
//
// The scan stops at the first scheduled tick that is not due when no trigger is queued: the leader emits slots
// in order, so the ticks behind it are due no earlier (catch-up ticks, due at once, come before the slots
// emitted after them).
func (l *lane) pick(now time.Time, out []*item, limit int) ([]*item, time.Duration) {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	l.keys.scan++ // a new scan: no key is blocked or elsewhere yet
	l.waitsOnLedger = false
	// Records before l.open are all handled (their outcomes may be in flight, or a slow record ahead of them
	// keeps them from being committed).
	for l.open < len(l.queue) && l.queue[l.open].handled {
		l.open++
	}
	var wait time.Duration
	if l.jumps > 0 {
		wait = l.blockKeysRunningElsewhere(now)
	}
	// The scan looks at the heads only (the later ticks of a key would each be found blocked), and they change
	// once it is over.
	picked := len(out)
	defer func() {
		for _, c := range out[picked:] {
			l.unwaitLocked(c)
		}
	}()
	var cands []*item
	out, cands, wait = l.scanHeads(now, out, limit, wait)
	if l.limits != nil || len(cands) > 0 {
		l.resetHeldLocked()
		if len(cands) > 0 {
			out, wait = l.admitLocked(now, cands, out, limit, wait)
		}
		l.limitMetricsLocked(now)
	}
	return out, wait
}

// blockKeysRunningElsewhere is pick's first pass when triggers are queued: it blocks, and marks as running
// elsewhere, each key whose head a former owner may still run, and returns how long until the first such run's
// lease ends (0: none). A manual trigger runs out of offset order: a former owner may still run one while the
// key's earlier held ticks wait here, or run the key's scheduled tick while a trigger of the key waits here.
// Either way the key waits for that run first. (Without triggers, the key's first tick is the one that may run
// elsewhere, and scanHeads checks it.) The heads hold one scheduled tick per key (its first) and every trigger.
// The caller holds w.mu.
func (l *lane) blockKeysRunningElsewhere(now time.Time) time.Duration {
	k := &l.keys
	var wait time.Duration
	for _, c := range l.heads {
		if c.err != nil {
			continue
		}
		if until := l.formerRunUntil(c); now.Before(until) {
			k.block(c.kid)
			k.elsewhere(c.kid)
			l.waitsOnLedger = true
			wait = sooner(wait, until.Sub(now))
		}
	}
	return wait
}

// scanHeads is pick's main pass: it appends to out the heads that may start now (at most limit), starting each,
// and returns out with the wait, lowered to the first held head's if that is sooner. The heads that may start
// but for their limit it returns as cands, for admitLocked. The caller holds w.mu.
func (l *lane) scanHeads(now time.Time, out []*item, limit int, wait time.Duration) ([]*item, []*item, time.Duration) {
	var cands []*item
	w := l.w
	k := &l.keys
	// covered counts the keys that cannot start a record now: those running one (each is a key of l.keys:
	// its running record is not handled), and those seen waiting for a run elsewhere. Without triggers, the
	// scan ends when it covers every key: what lies further is of those keys.
	covered := k.busy
	for _, c := range l.heads {
		if len(out) >= limit {
			break
		}
		if c.err != nil {
			out = append(out, l.startLocked(c))
			continue
		}
		if c.jump {
			switch {
			case k.running(c.kid) || k.isElsewhere(c.kid):
			case c.t.Limit != "":
				cands = append(cands, c)
			default:
				out = append(out, l.startLocked(c))
			}
			continue
		}
		if k.blocked(c.kid) {
			continue // the trigger pass found the key running elsewhere
		}
		k.block(c.kid)
		if k.running(c.kid) {
			if l.jumps == 0 && covered >= k.queued {
				break // every key with a record queued runs one or waits for a run elsewhere: nothing may start
			}
			continue
		}
		due := c.startAt.Add(-w.cfg.PreStart)
		if c.startAt.IsZero() || !now.Before(due) {
			if until := l.formerRunUntil(c); now.Before(until) {
				// Another worker's run of this tick may still be alive (it outlived a rebalance, or its
				// worker died): the key waits for its outcome or the end of its lease; other keys go on.
				l.waitsOnLedger = true
				wait = sooner(wait, until.Sub(now))
				if covered++; l.jumps == 0 && covered >= k.queued {
					break
				}
				continue
			}
			if c.t.Limit != "" {
				cands = append(cands, c) // admitLocked starts it, or holds it for its limit
			} else {
				out = append(out, l.startLocked(c))
			}
			if covered++; l.jumps == 0 && covered >= k.queued {
				break // every key with a record queued now runs one
			}
			continue
		}
		wait = sooner(wait, due.Sub(now))
		if l.jumps == 0 {
			break
		}
	}
	return out, cands, wait
}

// sooner returns d when wait is 0 (nothing to wait for yet) or d is shorter, else wait.
func sooner(wait, d time.Duration) time.Duration {
	if wait == 0 || d < wait {
		return d
	}
	return wait
}

// heads are the records a lane's pick looks at, in queue order: the first waiting scheduled tick of each key
// (the key's later ones wait behind it, in keyState.waiting) and every waiting trigger and unreadable record.
// A backlog's scan so costs the number of keys, not of records: a scan over the queue would pass, on each run,
// over the records of fast keys finished behind a slow one and over every later tick of each running key.
type heads []*item

// find returns where it is, or would be, in h, and whether it is there.
func (h heads) find(it *item) (int, bool) {
	return slices.BinarySearchFunc(h, it.seq, func(c *item, seq int64) int { return cmp.Compare(c.seq, seq) })
}

// add inserts it in queue order: at the end, but for a key's next tick once its head started, and for a record
// given back (giveBackLocked).
func (h *heads) add(it *item) {
	i, _ := h.find(it)
	*h = slices.Insert(*h, i, it)
}

// remove removes it, when it is there.
func (h *heads) remove(it *item) {
	if i, ok := h.find(it); ok {
		*h = slices.Delete(*h, i, i+1)
	}
}

// waitLocked registers it, a record not started (newly queued), with pick. Called with w.mu held.
func (l *lane) waitLocked(it *item) {
	if it.jump {
		l.heads.add(it)
		return
	}
	ks := &l.keys.keys[it.kid]
	if ks.waiting = append(ks.waiting, it); len(ks.waiting) == 1 {
		l.heads.add(it)
	}
}

// unwaitLocked removes it, just started, from pick's records; the next tick of its key, when there is one, is
// the key's head now. pick starts only heads, so a scheduled tick started is its key's first waiting one.
// Called with w.mu held.
func (l *lane) unwaitLocked(it *item) {
	l.heads.remove(it)
	if it.jump {
		return
	}
	ks := &l.keys.keys[it.kid]
	ks.waiting[0] = nil
	if ks.waiting = ks.waiting[1:]; len(ks.waiting) > 0 {
		l.heads.add(ks.waiting[0])
	}
}

// giveBackLocked gives pick back it, a record it started that did not run to an outcome (its run was cut, or
// no runner took it): it is not running any more, its key is free, and it is the first of its key again.
// Called with w.mu held.
func (l *lane) giveBackLocked(it *item) {
	it.running = false
	if it.err == nil {
		l.keys.free(it.kid)
	}
	if it.jump {
		l.heads.add(it)
		return
	}
	ks := &l.keys.keys[it.kid]
	if len(ks.waiting) > 0 {
		l.heads.remove(ks.waiting[0])
	}
	ks.waiting = slices.Insert(ks.waiting, 0, it)
	l.heads.add(it)
}

// waitsLedger reports whether pick left a key waiting for a run elsewhere (the dispatcher then also wakes on
// ledger changes: a renewal pushes the wait out, an outcome or release ends it).
func (l *lane) waitsLedger() bool {
	l.w.mu.Lock()
	defer l.w.mu.Unlock()
	return l.waitsOnLedger
}

// startLocked marks it running: no other record of its key starts until it is handled. Called with w.mu held.
func (l *lane) startLocked(it *item) *item {
	it.running = true
	if it.err == nil {
		l.keys.take(it.kid)
	}
	return it
}

// handledLocked records that the lane is done with it (its outcome may still be in flight) and frees its key.
// When its handler outlasted its period (it ran longer than the spacing between its slot and its successor's),
// the scheduled ticks of its key that fell due while the handler ran are marked overran; a run of a backlog
// (late, but shorter than the period) marks nothing, so a backlog drains in order. The handler's run is what
// counts (item.ran), not the time its start and outcome took to reach the ledger: a run that waited out an
// outage of the broker did not outlast anything. Slots are whole seconds apart, so a run shorter than a second
// outlasts nothing and the queue is not scanned: a backlog of fast runs costs no scan per run. Called with w.mu
// held.
func (l *lane) handledLocked(it *item) {
	l.releaseLimitLocked(it, true)
	it.handled, it.running = true, false
	if it.jump {
		l.jumps--
	}
	if it.err != nil {
		return
	}
	l.keys.free(it.kid)
	l.keys.dequeue(it.kid)
	from, to := it.ran.from, it.ran.to
	if it.t.Trigger || from.IsZero() || to.Sub(from) < time.Second {
		return
	}
	outlasted := false
	for _, c := range l.queue[l.open:] {
		if c.jump || c.err != nil {
			continue
		}
		if c.startAt.After(to) {
			break // the leader emits in order: the rest fell due later still
		}
		if c.kid != it.kid || c.err != nil || c.handled || c.running {
			continue
		}
		// A tick without an instant (from a leader before emission ahead) is due at its slot.
		due := c.t.StartAt()
		if due.After(to) {
			break
		}
		if !outlasted {
			// c is the successor: the run outlasted its period when it went on past the period's length.
			if period := c.t.Slot.Sub(it.t.Slot); period <= 0 || to.Sub(from) <= period {
				return
			}
			outlasted = true
		}
		if due.After(from) {
			c.overran = true
		}
	}
}

// keyTable is a lane's state per key (a schedule and shard), indexed by a small number given to each key the
// lane meets (id): pick reads it for every record it scans, and string-keyed maps were most of its cost. Guarded
// by w.mu.
type keyTable struct {
	ids    map[string]int32
	keys   []keyState
	busy   int    // keys with a record running
	queued int    // keys with unhandled records in the queue
	scan   uint32 // pick's current scan: a key's marks count only when they carry it
}

type keyState struct {
	running   bool
	queued    int32   // unhandled records of the key in the queue
	waiting   []*item // the key's scheduled ticks not started, in queue order (the first is in lane.heads)
	blocked   uint32  // the scan in which the key was blocked (an earlier tick of it seen, or it waits elsewhere)
	elsewhere uint32  // the scan in which the key was found running on another worker
	// limitSince is when the key began waiting for its limit (zero: it does not wait); a tick skipped for a
	// newer one of the key passes its wait on (limiter.go).
	limitSince time.Time
}

// id returns key's number, giving it one when it is new.
func (k *keyTable) id(key string) int32 {
	if id, ok := k.ids[key]; ok {
		return id
	}
	id := int32(len(k.keys))
	k.ids[key] = id
	k.keys = append(k.keys, keyState{})
	return id
}

func (k *keyTable) queue(id int32) {
	if k.keys[id].queued++; k.keys[id].queued == 1 {
		k.queued++
	}
}

func (k *keyTable) dequeue(id int32) {
	if k.keys[id].queued--; k.keys[id].queued == 0 {
		k.queued--
	}
}

func (k *keyTable) take(id int32) {
	if !k.keys[id].running {
		k.keys[id].running = true
		k.busy++
	}
}

func (k *keyTable) free(id int32) {
	if k.keys[id].running {
		k.keys[id].running = false
		k.busy--
	}
}

func (k *keyTable) running(id int32) bool     { return k.keys[id].running }
func (k *keyTable) block(id int32)            { k.keys[id].blocked = k.scan }
func (k *keyTable) blocked(id int32) bool     { return k.keys[id].blocked == k.scan }
func (k *keyTable) elsewhere(id int32)        { k.keys[id].elsewhere = k.scan }
func (k *keyTable) isElsewhere(id int32) bool { return k.keys[id].elsewhere == k.scan }

// itemKey is the key under which a tick's runs are ordered and never overlap: its schedule and shard.
func itemKey(t *tick.Tick) string {
	return t.Schedule + "#" + strconv.Itoa(t.Shard)
}

// hints returns what the rest of the queue says about it: the latest start instant, at or before now, of a later
// scheduled tick of the same schedule and shard when its overlap policy skips it for one (skip, or the default
// for a tick that overran), and a cancellation that applies to it.
func (l *lane) hints(it *item, now time.Time) (newer time.Time, c *tick.Cancel) {
	w := l.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if it.err != nil {
		return time.Time{}, nil
	}
	c = l.cancels.Applying(it.t)
	skips := it.t.Overlap == tick.OverlapSkip || it.t.Overlap == "" && it.overran
	if !skips || it.t.Trigger {
		return time.Time{}, c
	}
	after := false
	for _, o := range l.queue {
		if o == it {
			after = true
			continue
		}
		if !after || o.err != nil || o.t.Trigger || o.t.Schedule != it.t.Schedule || o.t.Shard != it.t.Shard {
			continue
		}
		if s := o.t.StartAt(); !s.After(now) && s.After(newer) {
			newer = s
		}
	}
	return newer, c
}

// finish marks it done (its outcome is acknowledged, or it needs none) and moves the committable offset.
func (l *lane) finish(it *item) {
	w := l.w
	w.mu.Lock()
	it.done = true
	l.advanceLocked()
	resume := l.active && l.paused && len(l.queue) < laneQueueMax/2 // a retired lane's partition is not ours
	if resume {
		l.paused = false
	}
	w.mu.Unlock()
	if resume {
		w.client().ResumeFetchPartitions(map[string][]int32{w.names.Work: {l.partition}})
	}
	w.wakeCommitter()
}

// advanceLocked drops the finished records at the front of the queue; the offset after the last of them may be
// committed. Called with w.mu held.
func (l *lane) advanceLocked() {
	n := 0
	for n < len(l.queue) && l.queue[n].done {
		n++
	}
	if n == 0 {
		return
	}
	last := l.queue[n-1].rec
	if l.active {
		l.doneOffset = kgo.EpochOffset{Epoch: last.LeaderEpoch, Offset: last.Offset + 1}
		l.dirty = true
	}
	clear(l.queue[:n])
	l.queue = l.queue[n:]
	l.open = max(l.open-n, 0)
}
