package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/store"
)

// Follower keeps an Index up to date with a schedules topic: it reads the topic from its start (or from after
// the last record the index took), and then every record written to it.
type Follower struct {
	idx    *Index
	opts   []kgo.Opt
	topic  string
	logger *slog.Logger

	loaded     chan struct{}
	loadedOnce sync.Once
}

// loadIdle is how long a first read waits for a record before it takes the records up to the end as
// compacted away: a broker answers a fetch at once when it holds records at the fetch's position.
const loadIdle = 5 * time.Second

// NewFollower returns a Follower of topic (partition 0, read committed) into idx; opts reach the brokers.
func NewFollower(idx *Index, opts []kgo.Opt, topic string, logger *slog.Logger) *Follower {
	return &Follower{idx: idx, opts: opts, topic: topic, logger: logger.With("component", "catalog"), loaded: make(chan struct{})}
}

// Loaded is closed once the index holds what the topic held when Run started, sorted (Index.Settle).
func (f *Follower) Loaded() <-chan struct{} { return f.loaded }

// Run follows the topic until ctx ends; a failed read is retried after a pause.
func (f *Follower) Run(ctx context.Context) error {
	for {
		err := f.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		f.logger.Warn("following the schedules topic; retrying", "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// follow reads from after the index's last record until ctx ends or the read fails.
func (f *Follower) follow(ctx context.Context) error {
	from := f.idx.Counts().Offset + 1
	cl, err := kgo.NewClient(append(f.opts[:len(f.opts):len(f.opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{f.topic: {0: kgo.NewOffset().At(from)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return fmt.Errorf("catalog: client: %w", err)
	}
	defer cl.Close()
	end := int64(-1)
	select {
	case <-f.loaded:
	default:
		ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, f.topic)
		if err != nil {
			return fmt.Errorf("listing the end of %s: %w", f.topic, err)
		}
		lo, ok := ends.Lookup(f.topic, 0)
		if !ok || lo.Err != nil {
			return fmt.Errorf("listing the end of %s: %w", f.topic, errors.Join(lo.Err, errors.New("partition 0 not listed")))
		}
		end = lo.Offset
		if from >= end {
			end = -1
			f.markLoaded(0)
		}
	}
	begin := time.Now()
	var (
		raw  []*kgo.Record
		recs []Record
	)
	for {
		pctx, cancel := ctx, context.CancelFunc(func() {})
		if end >= 0 {
			pctx, cancel = context.WithTimeout(ctx, loadIdle)
		}
		fetches := cl.PollFetches(pctx)
		idle := pctx.Err() != nil
		cancel()
		if ctx.Err() != nil || fetches.IsClientClosed() {
			return ctx.Err()
		}
		if idle && fetches.NumRecords() == 0 {
			// Nothing at the read position, yet the end is not reached: the records before the end were
			// removed by compaction since it was listed (a tombstone past its retention, a transaction's
			// marker). The topic holds nothing more to load.
			f.logger.Info("the schedules topic's last records were compacted away: loaded", "end", end)
			end = -1
			f.markLoaded(time.Since(begin))
			continue
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
		raw = raw[:0]
		last := int64(-1)
		fetches.EachRecord(func(r *kgo.Record) {
			last = r.Offset
			if !r.Attrs.IsControl() {
				raw = append(raw, r)
			}
		})
		recs = decodeAll(raw, recs)
		f.idx.Apply(recs)
		if end >= 0 && last >= end-1 {
			end = -1
			f.markLoaded(time.Since(begin))
		}
	}
}

// markLoaded settles the index and closes Loaded.
func (f *Follower) markLoaded(took time.Duration) {
	f.loadedOnce.Do(func() {
		f.idx.Settle()
		c := f.idx.Counts()
		f.logger.Info("schedules catalogued", "schedules", c.Schedules, "broken", c.Broken, "took", took.Round(time.Millisecond))
		close(f.loaded)
	})
}

// decodeAll decodes raw into out (reused), on every core for a large fetch: decoding is most of a first read's
// time (about 1.4 µs a record, 14 s at ten million on one core).
func decodeAll(raw []*kgo.Record, out []Record) []Record {
	out = slices.Grow(out[:0], len(raw))[:len(raw)]
	workers := min(runtime.GOMAXPROCS(0), len(raw)/1024+1)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := len(raw)*w/workers, len(raw)*(w+1)/workers
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				out[i] = decode(raw[i])
			}
		})
	}
	wg.Wait()
	return out
}

// decode takes from r what the index keeps. A record whose definition the leader and the replicas would refuse
// (store.Decode) is invalid.
func decode(r *kgo.Record) Record {
	out := Record{Name: string(r.Key), Offset: r.Offset}
	if r.Value == nil {
		out.Gone = true
		return out
	}
	sched, err := store.Decode(r)
	if err != nil {
		out.Invalid = true
		return out
	}
	out.Pool, out.Paused = sched.Pool(), sched.Pausing()
	if u := sched.PausedUntil(); u != nil {
		out.Until = *u
	}
	return out
}
