package leaderstate

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/errlimit"
)

// Term is the ticker topic's state as a term starts from it: each live schedule's last emitted slot, the
// undecodable records that are still the newest of their key, and the offset after the last record folded in.
type Term struct {
	State map[string]Stored
	Bad   map[string]*kgo.Record
	Next  int64 // -1: nothing read yet
}

// NewTerm returns an empty state.
func NewTerm() *Term {
	return &Term{State: map[string]Stored{}, Bad: map[string]*kgo.Record{}, Next: -1}
}

// Apply folds one record of the ticker topic in (records in offset order, committed ones only).
func (s *Term) Apply(r *kgo.Record, invalid func(*kgo.Record, error)) {
	s.Next = r.Offset + 1
	if r.Attrs.IsControl() {
		return
	}
	name := string(r.Key)
	if r.Value == nil {
		delete(s.State, name)
		return
	}
	st, err := DecodeState(r.Value)
	if err != nil {
		if invalid != nil {
			invalid(r, err)
		}
		s.Bad[name] = r
		return
	}
	delete(s.Bad, name) // a valid record followed the bad one
	s.State[name] = Stored{LastSlot: st.LastSlot, ScheduleVersion: st.ScheduleVersion}
}

// Follower keeps the ticker topic's state folded in while the replica does not lead, so that a new term reads
// only the tail written since (from next up to the last stable offset, after fencing) instead of the whole
// topic: at a million schedules, seconds of a takeover.
//
// Why the tail is enough: the standby reads read_committed, in offset order, so what it holds is the fold of
// every committed record below next, and aborted ones are skipped either way. Once the new leader has fenced
// and the last stable offset has reached the high watermark (waitStable), every record at or above next is
// decided, and the term reads them all before it plans. Compaction only removes records a newer one of the
// same key supersedes, so reading the tail gives the same fold as reading the topic again; the one record it
// can remove without a successor, an old tombstone, leaves at most a stale state of a deleted schedule, which
// the term tombstones again as an orphan (or, if the schedule was created again, its change time is later
// than that last slot and wins).
//
// A term takes the state (Take) and hands the follower back (Release) when it ends: the follower then starts
// again from the topic's start, since the term's own writes were never folded in.
type Follower struct {
	opts    []kgo.Opt
	topic   string
	part    int32
	logger  *slog.Logger
	invalid func(*kgo.Record, error)

	mu    sync.Mutex
	cur   *Term
	gen   uint64 // incremented by take and release: the follower's client then starts again
	taken bool
	wake  chan struct{}
}

// NewFollower returns the follower of partition part of the ticker topic; invalid is called for each
// undecodable record.
func NewFollower(opts []kgo.Opt, topic string, part int32, logger *slog.Logger, invalid func(*kgo.Record, error)) *Follower {
	return &Follower{opts: opts, topic: topic, part: part, logger: logger, invalid: invalid, cur: NewTerm(), wake: make(chan struct{}, 1)}
}

// Take hands the state over to a term and stops following until Release. Before the follower has read
// anything (or without one: Follow not running) it is empty, and the term reads the whole partition.
func (w *Follower) Take() *Term {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.cur
	w.cur, w.taken = NewTerm(), true
	w.gen++
	return s
}

// Progress reports how many schedules the followed state holds and the offset after the last record folded in
// (-1: none yet).
func (w *Follower) Progress() (schedules int, next int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.cur.State), w.cur.Next
}

// Release starts following again, from the topic's start.
func (w *Follower) Release() {
	w.mu.Lock()
	w.cur, w.taken = NewTerm(), false
	w.gen++
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run follows the topic until ctx ends.
func (w *Follower) Run(ctx context.Context) error {
	for {
		w.mu.Lock()
		taken, gen := w.taken, w.gen
		w.mu.Unlock()
		if !taken {
			if err := w.follow(ctx, gen); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-w.wake:
		}
	}
}

// follow reads the topic from its start into w.cur until ctx ends or the generation changes.
func (w *Follower) follow(ctx context.Context, gen uint64) error {
	cl, err := kgo.NewClient(append(w.opts[:len(w.opts):len(w.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: {w.part: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return fmt.Errorf("warm state: client: %w", err)
	}
	defer cl.Close()
	for {
		// A short poll, so that a take is noticed within a second even on an idle topic.
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return nil
		}
		fetches.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil && pctx.Err() == nil {
				w.logger.Warn("following the leader state", "leader", w.part, "err", errlimit.Wrap(err))
			}
		})
		w.mu.Lock()
		if w.gen != gen {
			w.mu.Unlock()
			return nil // taken by a term (the fetched records belong to the state it reads on its own)
		}
		fetches.EachRecord(func(r *kgo.Record) { w.cur.Apply(r, w.invalid) })
		w.mu.Unlock()
	}
}
