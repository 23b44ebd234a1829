package ledger

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Log is one worker's hold on a namespace's ledger (its results topic). It writes the worker's entries, batched
// per partition (outbox), and reads back the partitions its Owners hold with one reader for all of them,
// applying each entry to their folds. Run reads; the owner of the Log waits for it.
type Log struct {
	cfg LogConfig
	out *outbox

	mu     sync.Mutex
	owners map[int32][]*Owner
	// own holds this worker's own entries (a record's: one, or a batch's), by partition and ledger offset, from
	// their acknowledgement until the reader reads them, so that it need not decode what it wrote; read is the
	// next offset to read.
	own  map[int32]map[int64][]Entry
	read map[int32]int64
	// batches holds this worker's batch records, by partition and record key, from before they are produced
	// until the reader reads them (their offset is not known before the acknowledgement, which may come after
	// the reader read the record).
	batches map[int32]map[string][]Entry
	// removals counts the partitions the shared reader stopped reading; removedAt is the count at a partition's
	// latest removal. Run drops what a poll that began before that removal returns for the partition (records
	// of the old reading would skip what lies between for an Owner added again since; the reader drops what it
	// had buffered when a partition is removed, but not what Run holds), and sets the reader back to where the
	// partition's Owners read (read), in case they were the new Owner's.
	removals  uint64
	removedAt map[int32]uint64
}

// LogConfig is what a Log needs.
type LogConfig struct {
	Topic  string // the results topic
	Worker string // this worker's ID, written in its entries
	// Lease is this worker's handler lease; MaxClockSkew the clock skew allowed between hosts.
	Lease        time.Duration
	MaxClockSkew time.Duration
	Now          func() time.Time
	// Producer writes the entries (idempotent, so that a partition's records stay in order). Reader is a
	// consumer of Topic with no partitions to start with (Owners add theirs); ReaderOpts are the connection
	// options for the reader of its own that an Owner gets when another Owner still reads its partition.
	Producer   *kgo.Client
	Reader     *kgo.Client
	ReaderOpts []kgo.Opt
	Logger     *slog.Logger
	Metrics    Metrics
}

// Metrics are what a Log counts. Every field is required.
type Metrics struct {
	Unreadable   prometheus.Counter     // entries that could not be decoded
	Refused      *prometheus.CounterVec // entries the fold or an owner refused, by reason (a Refusal)
	BatchEntries prometheus.Observer    // entries per record written
	Takeover     prometheus.Observer    // seconds from a takeover's start to its claim standing
}

// maxOwn bounds the entries a Log remembers per partition.
const maxOwn = 100_000

// NewLog returns a Log; Run reads for it.
func NewLog(cfg LogConfig) *Log {
	lg := &Log{cfg: cfg, owners: map[int32][]*Owner{}, own: map[int32]map[int64][]Entry{}, read: map[int32]int64{},
		batches: map[int32]map[string][]Entry{}, removedAt: map[int32]uint64{}}
	lg.out = newOutbox(lg)
	return lg
}

// Run applies the entries read to the Owners' folds until ctx ends or the reader is closed.
func (lg *Log) Run(ctx context.Context) {
	for {
		lg.mu.Lock()
		removals := lg.removals
		lg.mu.Unlock()
		fetches := lg.cfg.Reader.PollFetches(ctx)
		if fetches.IsClientClosed() || ctx.Err() != nil {
			return
		}
		lg.feed(fetches, func(ftp kgo.FetchTopicPartition) {
			lg.mu.Lock()
			if p := ftp.Partition; lg.removedAt[p] > removals {
				// Fetched before the partition's removal, for an Owner gone since, or after an Owner was added
				// again, from where that one reads; either way the reader is now past them. An Owner reading
				// the partition now is fed from where it started (or what it read since: lg.read): the
				// reader goes back there.
				if len(lg.owners[p]) > 0 {
					lg.cfg.Reader.SetOffsets(map[string]map[int32]kgo.EpochOffset{lg.cfg.Topic: {p: {Epoch: -1, Offset: lg.read[p]}}})
				}
				lg.mu.Unlock()
				return
			}
			owners := slices.Clone(lg.owners[ftp.Partition])
			known := lg.takeOwn(ftp.Partition, ftp.Records)
			lg.mu.Unlock()
			for _, o := range owners {
				o.apply(ftp.Records, known)
			}
		})
	}
}

// Flush waits until every entry handed to the Log has been written (or failed), or until ctx ends.
func (lg *Log) Flush(ctx context.Context) { lg.out.flush(ctx) }

// Write writes e to partition p (key: its record key alone) and returns its ledger offset once acknowledged. A
// claim is a record of its own; other entries may share a batch record with others waiting for p. An entry
// other than a claim whose ctx ends before it is sent is not sent (a claim handed to the producer may still be).
func (lg *Log) Write(ctx context.Context, p int32, key []byte, e Entry) (int64, error) {
	if e.Kind != KindClaim {
		return lg.out.write(ctx, p, key, e)
	}
	r := &kgo.Record{Topic: lg.cfg.Topic, Partition: p, Key: key, Value: Encode(e)}
	if err := lg.cfg.Producer.ProduceSync(ctx, r).FirstErr(); err != nil {
		return 0, kafka.NeedACL(err, "Write", "topic", lg.cfg.Topic)
	}
	lg.remember(p, r.Offset, []Entry{e})
	return r.Offset, nil
}

// Append queues e for partition p as Write does, without waiting: value is its record on its own (an outcome
// record carries more than its entry), key its key; alone makes it a record of its own, never in a batch. done
// is called once with its offset, or the error (ErrInBatch when it was in a batch record that failed).
func (lg *Log) Append(p int32, key, value []byte, e Entry, alone bool, done func(offset int64, err error)) {
	lg.out.add(p, &outEntry{key: key, value: value, e: e, alone: alone, done: done})
}

// feed logs the fetch errors of fetches and hands each partition's records, when there are any, to apply.
func (lg *Log) feed(fetches kgo.Fetches, apply func(kgo.FetchTopicPartition)) {
	fetches.EachError(func(topic string, p int32, err error) {
		if !errors.Is(err, context.Canceled) {
			lg.cfg.Logger.Warn("ledger fetch error", "topic", topic, "partition", p, "error", err)
		}
	})
	fetches.EachPartition(func(ftp kgo.FetchTopicPartition) {
		if len(ftp.Records) > 0 {
			apply(ftp)
		}
	})
}

// takeOwn returns, for each of recs, the entries this worker wrote at its offset (nil: decode it), and moves
// the partition's read position past them. Called with lg.mu held.
func (lg *Log) takeOwn(p int32, recs []*kgo.Record) [][]Entry {
	lg.read[p] = max(lg.read[p], recs[len(recs)-1].Offset+1)
	own, batches := lg.own[p], lg.batches[p]
	if len(own) == 0 && len(batches) == 0 {
		return nil
	}
	known := make([][]Entry, len(recs))
	for i, r := range recs {
		if es, ok := own[r.Offset]; ok {
			known[i] = es
			delete(own, r.Offset)
		} else if es, ok := batches[string(r.Key)]; ok && IsBatchKey(r.Key) {
			known[i] = es
			delete(batches, string(r.Key))
		}
	}
	return known
}

// expectBatch keeps es, the entries of the batch record with key that this worker is about to write to
// partition p, for the reader to apply without decoding them; forgetBatch drops them when the write failed.
func (lg *Log) expectBatch(p int32, key string, es []Entry) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	keepOwn(lg, lg.batches, p, key, es)
}

func (lg *Log) forgetBatch(p int32, key string) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	delete(lg.batches[p], key)
}

// remember keeps es, the entries of the record acknowledged at ledger offset o of partition p, for the reader
// to apply without decoding them, unless it has read that offset already.
func (lg *Log) remember(p int32, o int64, es []Entry) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if o >= lg.read[p] {
		keepOwn(lg, lg.own, p, o, es)
	}
}

// keepOwn stores es under k in partition p's map of own entries in m, while the reader reads p and the map has
// room. Called with lg.mu held.
func keepOwn[K comparable](lg *Log, m map[int32]map[K][]Entry, p int32, k K, es []Entry) {
	if _, reading := lg.owners[p]; !reading {
		return
	}
	own := m[p]
	if own == nil {
		own = map[K][]Entry{}
		m[p] = own
	}
	if len(own) < maxOwn {
		for i := range es {
			es[i].V = Version
		}
		own[k] = es
	}
}

// add starts reading o's partition at ledger offset from. A partition can have two Owners of this worker at
// once: one whose runs outlive a revocation, and a new one after the partition came back.
func (lg *Log) add(o *Owner, from int64) {
	p := o.partition
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if len(lg.owners[p]) > 0 {
		// Another owner of this worker still reads p. The shared reader is past from, and a rewound one could
		// still hand this owner a batch fetched before the rewind, skipping what lies between: this owner reads
		// p with a reader of its own until it is closed.
		cl, err := kgo.NewClient(append(slices.Clip(lg.cfg.ReaderOpts),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{lg.cfg.Topic: {p: kgo.NewOffset().At(from)}}),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.FetchMaxPartitionBytes(1<<20))...)
		if err == nil {
			o.own = cl
			go lg.runOwn(o)
			return
		}
		lg.cfg.Logger.Warn("a ledger reader of its own for a partition another owner still reads; waiting for that owner's runs", "partition", p, "error", err)
		for len(lg.owners[p]) > 0 { // rare: a client that cannot be made; the other owner ends with its runs
			lg.mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			lg.mu.Lock()
		}
	}
	lg.owners[p] = append(lg.owners[p], o)
	lg.read[p] = from
	lg.cfg.Reader.AddConsumePartitions(map[string]map[int32]kgo.Offset{lg.cfg.Topic: {p: kgo.NewOffset().At(from)}})
}

// runOwn feeds o from its own reader until the reader is closed (remove).
func (lg *Log) runOwn(o *Owner) {
	for {
		fetches := o.own.PollFetches(context.Background())
		if fetches.IsClientClosed() {
			return
		}
		lg.feed(fetches, func(ftp kgo.FetchTopicPartition) { o.apply(ftp.Records, nil) })
	}
}

// remove stops feeding o, and reading its partition when no other Owner needs it.
func (lg *Log) remove(o *Owner) {
	lg.mu.Lock()
	defer lg.mu.Unlock()
	if o.own != nil {
		o.own.Close()
		return
	}
	owners := lg.owners[o.partition]
	i := slices.Index(owners, o)
	if i < 0 {
		return
	}
	owners = slices.Delete(owners, i, i+1)
	if len(owners) > 0 {
		lg.owners[o.partition] = owners
		return
	}
	delete(lg.owners, o.partition)
	delete(lg.own, o.partition)
	delete(lg.batches, o.partition)
	delete(lg.read, o.partition)
	lg.removals++
	lg.removedAt[o.partition] = lg.removals
	lg.cfg.Reader.RemoveConsumePartitions(map[string][]int32{lg.cfg.Topic: {o.partition}})
}
