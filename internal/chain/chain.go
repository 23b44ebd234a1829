// Package chain follows the outcomes of the schedules that chains run after (schedule.Spec.After): it tails the
// results partitions that hold an upstream schedule's ticks and reports each of its slots once every shard of
// the slot has an outcome (Ended), with the slot's outcome: success when every shard succeeded, failure when one
// failed or was dead-lettered, other otherwise (skipped, cancelled, interrupted).
//
// The slots of one schedule end in slot order: the ticks of one schedule and shard run one at a time, in order,
// so shard i's slot s+1 ends after its slot s, and a slot ends when its last shard does. A leader can therefore
// keep a chain's progress as the last upstream slot it acted on, and a new leader that reads the results again
// from before that slot finds the same slots end in the same order: only the later ones are new to it.
//
// Only an upstream's scheduled slots count: its manual triggers and backfills (IDs with ~trigger- or
// ~backfill-) do not end a slot. For a tick with several outcome records (it should have one), the first read
// counts.
package chain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// Outcome is how an upstream slot ended.
type Outcome uint8

const (
	Success Outcome = iota // every shard ok
	Failure                // a shard failed or was dead-lettered
	Other                  // skipped, cancelled or interrupted, none failed
)

// Matches reports whether a chain that runs on when (schedule.WhenSuccess, WhenFailure, WhenAny; "" is
// success) runs for a slot that ended with o.
func Matches(when string, o Outcome) bool {
	switch when {
	case schedule.WhenAny:
		return true
	case schedule.WhenFailure:
		return o == Failure
	}
	return o == Success
}

// String returns "success", "failure" or "other".
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Failure:
		return "failure"
	}
	return "other"
}

// Upstream is a schedule chains run after, as the follower reads it: its shards, and the results topic and
// partitions that hold its ticks' outcomes.
type Upstream struct {
	Schedule   string
	Shards     int
	Topic      string
	Partitions []int32
}

// Ended is an upstream slot that ended.
type Ended struct {
	Schedule string
	Slot     time.Time
	Outcome  Outcome
}

// maxPending bounds the slots a follower holds with some shards ended and others not (a shard that never runs:
// its tick was never emitted); past it the oldest are dropped.
const maxPending = 100_000

// Follower tails the upstreams' results partitions from a point in time. Run tails until its context ends;
// Notify and Take hand the ended slots to the caller, in the order they ended.
type Follower struct {
	opts   []kgo.Opt
	ups    map[string]Upstream
	from   time.Time
	logger *slog.Logger

	caughtUp atomic.Bool // every partition read to its end as of the start

	mu      sync.Mutex
	ended   []Ended
	notify  chan struct{}
	pending map[slotKey]*partial
	seen    map[string]bool      // tick IDs whose outcome counted, of the pending slots
	last    map[string]time.Time // each upstream's last slot that ended: an outcome read again ends nothing
}

type slotKey struct {
	schedule string
	slot     int64 // Unix seconds
}

type partial struct {
	shards  map[int]string // shard -> status
	failure bool
}

// NewFollower returns a follower of ups from the instant from: every outcome record written since (less a
// margin for clocks) is read. opts are the connection options.
func NewFollower(opts []kgo.Opt, ups []Upstream, from time.Time, logger *slog.Logger) *Follower {
	m := make(map[string]Upstream, len(ups))
	for _, u := range ups {
		m[u.Schedule] = u
	}
	return &Follower{opts: opts, ups: m, from: from, logger: logger, notify: make(chan struct{}, 1),
		pending: map[slotKey]*partial{}, seen: map[string]bool{}, last: map[string]time.Time{}}
}

// FromMargin is how long before a chain's progress a follower starts reading: an outcome can be written before
// its slot (a tick cancelled while emitted ahead, up to the longest lead, 5 minutes), and hosts' clocks differ.
const FromMargin = 6 * time.Minute

// CaughtUp reports whether the follower has read every partition to the end it had when Run started: the
// slots that ended before then are all known.
func (f *Follower) CaughtUp() bool { return f.caughtUp.Load() }

// Notify is signalled (coalesced) when slots ended, and once when the follower caught up.
func (f *Follower) Notify() <-chan struct{} { return f.notify }

// Take returns the slots that ended since the last call, in the order they ended.
func (f *Follower) Take() []Ended {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.ended
	f.ended = nil
	return out
}

// Run tails the upstreams' partitions until ctx ends (nil); it fails only when it cannot start (listing the
// offsets to start from). Read errors are logged, and the client retries.
func (f *Follower) Run(ctx context.Context) error {
	parts := map[string][]int32{}
	for _, u := range f.ups {
		parts[u.Topic] = append(parts[u.Topic], u.Partitions...)
	}
	if len(parts) == 0 {
		<-ctx.Done()
		return nil
	}
	// Control records are kept (and passed over), so that the offset read reaches a partition's end even when
	// its last record is a transaction's marker: CaughtUp compares it with the end.
	cl, err := kgo.NewClient(append(f.opts[:len(f.opts):len(f.opts)], kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())...)
	if err != nil {
		return fmt.Errorf("chain: %w", err)
	}
	defer cl.Close()
	// Where to start and where the end is: tried until it succeeds (a broker away, a leader moving), since a
	// follower that never starts would hold every chain and gate of the term.
	var start map[string]map[int32]kgo.Offset
	var ends map[string]map[int32]int64
	for pause := time.Second; ; pause = min(2*pause, 30*time.Second) {
		if start, ends, err = f.positions(ctx, cl, parts); err == nil {
			break
		}
		f.logger.Warn("chains: finding where to read the upstreams' outcomes; retrying", "err", err, "retry_in", pause)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
	}
	behind := 0
	for _, m := range ends {
		behind += len(m)
	}
	if behind == 0 {
		f.setCaughtUp()
	}
	cl.AddConsumePartitions(start)
	return f.tail(ctx, cl, ends, behind)
}

// positions returns, per topic and partition, the offset to start at (the first record at or after from less
// FromMargin) and, for those that have records to read, the stable end as of now.
func (f *Follower) positions(ctx context.Context, cl *kgo.Client, parts map[string][]int32) (map[string]map[int32]kgo.Offset, map[string]map[int32]int64, error) {
	adm := kadm.NewClient(cl)
	start := map[string]map[int32]kgo.Offset{}
	for topic, ps := range parts {
		listed, err := adm.ListOffsetsAfterMilli(ctx, f.from.Add(-FromMargin).UnixMilli(), topic)
		if err != nil {
			return nil, nil, fmt.Errorf("listing the offsets of %s: %w", topic, err)
		}
		start[topic] = map[int32]kgo.Offset{}
		for _, p := range ps {
			o, ok := listed.Lookup(topic, p)
			switch {
			case !ok || o.Err != nil:
				return nil, nil, fmt.Errorf("listing the offsets of %s partition %d: %v", topic, p, o.Err)
			case o.Offset >= 0:
				start[topic][p] = kgo.NewOffset().At(o.Offset)
			default: // nothing written since: from the end
				start[topic][p] = kgo.NewOffset().AtEnd()
			}
		}
	}
	ends := map[string]map[int32]int64{} // the stable end of each partition as of the start: caught up once read to it
	for topic, ps := range parts {
		listed, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return nil, nil, fmt.Errorf("listing the end offsets of %s: %w", topic, err)
		}
		ends[topic] = map[int32]int64{}
		for _, p := range ps {
			o, ok := listed.Lookup(topic, p)
			if !ok || o.Err != nil {
				return nil, nil, fmt.Errorf("listing the end offsets of %s partition %d: %v", topic, p, o.Err)
			}
			if off := start[topic][p].EpochOffset().Offset; off >= 0 && off < o.Offset { // -1: it starts at the end
				ends[topic][p] = o.Offset
			}
		}
	}
	return start, ends, nil
}

// tail reads the started client until ctx ends, behind partitions short of their end in ends.
func (f *Follower) tail(ctx context.Context, cl *kgo.Client, ends map[string]map[int32]int64, behind int) error {
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				f.logger.Warn("chains: reading the upstreams' outcomes", "topic", topic, "partition", p, "err", err)
			}
		})
		var ended []Ended
		caught := false
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				ended = f.record(r, ended)
			}
			if end, ok := ends[r.Topic][r.Partition]; ok && r.Offset+1 >= end {
				delete(ends[r.Topic], r.Partition)
				behind--
				caught = behind == 0
			}
		})
		if len(ended) > 0 {
			f.mu.Lock()
			f.ended = append(f.ended, ended...)
			f.mu.Unlock()
			select {
			case f.notify <- struct{}{}:
			default:
			}
		}
		if caught {
			f.setCaughtUp() // after this fetch's slots were handed over
		}
	}
}

// setCaughtUp marks the follower caught up and signals it.
func (f *Follower) setCaughtUp() {
	f.caughtUp.Store(true)
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// record applies one results record and appends the slots it ends to ended.
func (f *Follower) record(r *kgo.Record, ended []Ended) []Ended {
	if r.Value == nil || ledger.IsClaimKey(r.Key) || ledger.IsBreachKey(r.Key) {
		return ended
	}
	if !ledger.IsBatchKey(r.Key) {
		name, _, ok := bytes.Cut(r.Key, []byte("@"))
		if !ok {
			return ended
		}
		if _, up := f.ups[string(name)]; !up {
			return ended // another schedule's: most records are, so they are not decoded
		}
	}
	es, err := ledger.Entries(r.Value)
	if err != nil {
		return ended
	}
	for _, e := range es {
		if e.Kind == ledger.KindOutcome {
			ended = f.outcome(e, ended)
		}
	}
	return ended
}

// outcome applies one outcome entry.
func (f *Follower) outcome(e ledger.Entry, ended []Ended) []Ended {
	name, slot, shard, ok := parseID(e.ID)
	if !ok {
		return ended
	}
	up, isUp := f.ups[name]
	if !isUp || f.seen[e.ID] || !slot.After(f.last[name]) {
		return ended // another schedule's, a shard already counted, or a slot that ended already
	}
	f.seen[e.ID] = true
	k := slotKey{name, slot.Unix()}
	p := f.pending[k]
	if p == nil {
		if len(f.pending) >= maxPending {
			f.dropOldest()
		}
		p = &partial{shards: map[int]string{}}
		f.pending[k] = p
	}
	p.shards[shard] = e.Status
	if e.Status == ledger.StatusFailed || e.Status == ledger.StatusDeadLettered {
		p.failure = true
	}
	if len(p.shards) < max(up.Shards, 1) {
		return ended
	}
	o := Success
	for _, st := range p.shards {
		if st != ledger.StatusOK {
			o = Other
		}
	}
	if p.failure {
		o = Failure
	}
	delete(f.pending, k)
	f.last[name] = slot
	for s := range max(up.Shards, 1) {
		delete(f.seen, idOf(name, slot, s, up.Shards))
	}
	return append(ended, Ended{Schedule: name, Slot: slot, Outcome: o})
}

// dropOldest forgets the oldest pending slot.
func (f *Follower) dropOldest() {
	var oldest slotKey
	first := true
	for k := range f.pending {
		if first || k.slot < oldest.slot {
			oldest, first = k, false
		}
	}
	delete(f.pending, oldest)
}

// parseID reads a scheduled tick's ID: name@slot, or name@slot#shard. A trigger's or a backfill's is no slot's.
func parseID(id string) (name string, slot time.Time, shard int, ok bool) {
	name, rest, found := strings.Cut(id, "@")
	if !found {
		return "", time.Time{}, 0, false
	}
	if s, n, has := strings.Cut(rest, "#"); has {
		var err error
		if shard, err = strconv.Atoi(n); err != nil || shard < 0 {
			return "", time.Time{}, 0, false
		}
		rest = s
	}
	t, err := time.Parse(time.RFC3339, rest) // a trigger's or backfill's suffix (~...) does not parse
	if err != nil {
		return "", time.Time{}, 0, false
	}
	return name, t.UTC(), shard, true
}

func idOf(name string, slot time.Time, shard, shards int) string {
	id := name + "@" + slot.UTC().Format(time.RFC3339)
	if shards > 1 {
		id += "#" + strconv.Itoa(shard)
	}
	return id
}
