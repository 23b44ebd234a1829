package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Read reads the schedules, work and results topics of names to their last stable offsets, read_committed, and
// returns what they retain. opts are the connection options (kafka.Config.Opts). Undecodable records are counted
// and skipped.
func Read(ctx context.Context, opts []kgo.Opt, names kafka.Names) (*Log, error) {
	l := NewLog()
	if err := l.readSchedules(ctx, opts, names.Schedules); err != nil {
		return nil, err
	}
	if err := l.readWork(ctx, opts, names.Work); err != nil {
		return nil, err
	}
	if err := l.readResults(ctx, opts, names.Results); err != nil {
		return nil, err
	}
	l.markPartial()
	return l, nil
}

// gap is a range of offsets that is not retained.
type gap struct{ from, to int64 } // [from, to)

func (l *Log) readSchedules(ctx context.Context, opts []kgo.Opt, topic string) error {
	type rec struct {
		name   string
		offset int64
		at     time.Time
		value  []byte
	}
	var recs []rec
	parts, err := readTopic(ctx, opts, topic, func(r *kgo.Record) {
		recs = append(recs, rec{string(r.Key), r.Offset, r.Timestamp, r.Value})
	})
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.value == nil {
			l.AddVersion(r.name, r.offset, r.at, nil)
			continue
		}
		spec, err := schedule.Decode(r.value)
		if err != nil || spec.Name != r.name {
			l.Undecodable++
			continue
		}
		sched, err := spec.Compile()
		if err != nil {
			l.Undecodable++
			continue
		}
		l.AddVersion(r.name, r.offset, r.at, sched)
	}
	if p := parts[0]; p != nil {
		l.scheduleGaps = p.gaps
	}
	return nil
}

// markPartial trims each definition to the versions known to be complete and marks it partial when older
// versions may be gone: a version of the schedule can hide in any gap of the schedules topic before its latest
// retained version (compaction keeps the latest record of every key, so not after it), and a tick that names a
// version that is not retained proves one is gone.
func (l *Log) markPartial() {
	named := map[string]map[int64]bool{}
	for _, t := range l.Ticks {
		for _, e := range t.Emissions {
			if named[t.Schedule] == nil {
				named[t.Schedule] = map[int64]bool{}
			}
			named[t.Schedule][e.ScheduleVersion] = true
		}
	}
	for _, d := range l.Definitions {
		if len(d.Versions) == 0 {
			continue
		}
		last := d.Versions[len(d.Versions)-1].Offset
		j := 0
		for i := range d.Versions {
			if gapIn(l.scheduleGaps, d.Versions[i].Offset+1, last) {
				j = i + 1
			}
		}
		if j > 0 || gapIn(l.scheduleGaps, 0, d.Versions[0].Offset) {
			d.Partial = true
		}
		kept := map[int64]bool{}
		for _, v := range d.Versions {
			kept[v.Offset] = true
		}
		for v := range named[d.Name] {
			if !kept[v] && v < d.Versions[0].Offset {
				d.Partial = true
			}
		}
		d.Versions = d.Versions[j:]
	}
}

// gapIn reports whether any offset in [from, to) is in a gap.
func gapIn(gaps []gap, from, to int64) bool {
	for _, g := range gaps {
		if g.from < to && from < g.to {
			return true
		}
	}
	return false
}

func (l *Log) readWork(ctx context.Context, opts []kgo.Opt, topic string) error {
	parts, err := readTopic(ctx, opts, topic, func(r *kgo.Record) {
		if r.Value == nil {
			return
		}
		tk, err := tick.Decode(r.Value)
		if err != nil {
			l.Undecodable++
			return
		}
		t := l.tick(tk.ID)
		t.Schedule, t.Slot, t.Shard, t.Shards = tk.Schedule, tk.Slot.UTC(), tk.Shard, max(tk.Shards, 1)
		t.Trigger = t.Trigger || tk.Trigger
		at := tk.EmittedAt
		if at.IsZero() {
			at = r.Timestamp
		}
		t.Emissions = append(t.Emissions, Emission{
			Partition: r.Partition, Offset: r.Offset, EmittedAt: at.UTC(),
			LeaderEpoch: tk.LeaderEpoch, ScheduleVersion: tk.ScheduleVersion,
		})
	})
	if err != nil {
		return err
	}
	l.WorkPartitions = len(parts)
	l.WorkFrom = coverage(parts)
	return nil
}

func (l *Log) readResults(ctx context.Context, opts []kgo.Opt, topic string) error {
	folds := map[int32]*ledger.Fold{} // by work partition: which started entries are valid
	src := map[*Tick][]int32{}        // results partition of each ledger entry, to apply tombstones
	parts, err := readTopic(ctx, opts, topic, func(r *kgo.Record) {
		if ledger.IsClaimKey(r.Key) && r.Value == nil {
			return
		}
		if r.Value == nil {
			// A tombstone deletes the key's earlier entries in its partition (what compaction will do).
			t, ok := l.Ticks[string(r.Key)]
			if !ok {
				return
			}
			keep, keepSrc := t.Ledger[:0], src[t][:0]
			for i, e := range t.Ledger {
				if src[t][i] != r.Partition {
					keep, keepSrc = append(keep, e), append(keepSrc, src[t][i])
				}
			}
			t.Ledger, src[t] = keep, keepSrc
			return
		}
		e, err := ledger.Decode(r.Value)
		if err != nil {
			l.Undecodable++
			return
		}
		f := folds[e.Partition]
		if f == nil {
			f = ledger.NewFold(e.Partition)
			folds[e.Partition] = f
		}
		switch e.Kind {
		case ledger.KindClaim:
			f.Apply(e, r.Offset)
			return
		case ledger.KindStarted:
			valid := f.Apply(e, r.Offset)
			delete(f.Ticks, e.Offset) // only the claim bookkeeping is needed
			if !valid {
				return // its writer had lost the partition: it never ran
			}
		}
		id := e.ID
		if id == "" {
			id = string(r.Key)
		}
		t := l.tick(id)
		if e.Schedule != "" && t.Schedule == "" {
			t.Schedule = e.Schedule
		}
		if e.Slot != nil && t.Slot.IsZero() {
			t.Slot = e.Slot.UTC()
		}
		t.Ledger = append(t.Ledger, e)
		src[t] = append(src[t], r.Partition)
	})
	if err != nil {
		return err
	}
	l.ResultsPartitions = len(parts)
	l.ResultsFrom = coverage(parts)
	return nil
}

// coverage returns, per partition whose older records were deleted, the timestamp of its first retained record
// (the read instant for a partition with nothing retained).
func coverage(parts map[int32]*partitionRead) map[int32]time.Time {
	out := map[int32]time.Time{}
	for p, r := range parts {
		switch {
		case r.start == 0:
		case r.firstTS.IsZero():
			out[p] = r.readAt
		default:
			out[p] = r.firstTS
		}
	}
	return out
}

// partitionRead is what readTopic learnt about one partition.
type partitionRead struct {
	start, end int64
	firstTS    time.Time
	readAt     time.Time
	next       int64 // the offset after the last record read
	gaps       []gap // offset ranges in [0, end) that were not read (deleted, compacted or aborted)
	done       bool
}

// readTopic reads every partition of topic from its start to its last stable offset, read_committed, and calls
// fn for every data record (tombstones included), in order within each partition. Control records are read (a
// partition's last record below its LSO is often a transaction marker) but not passed to fn.
func readTopic(ctx context.Context, opts []kgo.Opt, topic string, fn func(*kgo.Record)) (map[int32]*partitionRead, error) {
	meta, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: client: %w", topic, err)
	}
	defer meta.Close()
	adm := kadm.NewClient(meta)
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("reading %s: listing last stable offsets: %w", topic, err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("reading %s: listing start offsets: %w", topic, err)
	}
	parts := map[int32]*partitionRead{}
	offsets := map[int32]kgo.Offset{}
	now := time.Now()
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic != topic {
			return
		}
		if o.Err != nil {
			lerr = errors.Join(lerr, fmt.Errorf("reading %s[%d]: last stable offset: %w", topic, o.Partition, o.Err))
			return
		}
		r := &partitionRead{end: o.Offset, readAt: now}
		if s, ok := starts.Lookup(topic, o.Partition); ok && s.Err == nil {
			r.start = s.Offset
		}
		if r.start > 0 {
			r.gaps = append(r.gaps, gap{0, r.start})
		}
		r.next = r.start
		r.done = r.start >= r.end
		parts[o.Partition] = r
		if !r.done {
			offsets[o.Partition] = kgo.NewOffset().At(r.start)
		}
	})
	if lerr != nil {
		return nil, lerr
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("reading %s: topic not found", topic)
	}
	if len(offsets) == 0 {
		return parts, nil
	}

	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return nil, fmt.Errorf("reading %s: client: %w", topic, err)
	}
	defer cl.Close()
	pending := len(offsets)
	for pending > 0 {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s: %w", topic, err)
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = errors.Join(ferr, fmt.Errorf("fetching %s[%d]: %w", t, p, err))
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		fetches.EachRecord(func(rec *kgo.Record) {
			r := parts[rec.Partition]
			if r == nil || r.done || rec.Offset >= r.end {
				return
			}
			if rec.Offset > r.next {
				r.gaps = append(r.gaps, gap{r.next, rec.Offset})
			}
			r.next = rec.Offset + 1
			if !rec.Attrs.IsControl() {
				if r.start > 0 && r.firstTS.IsZero() {
					r.firstTS = rec.Timestamp.UTC()
				}
				fn(rec)
			}
			if r.next >= r.end {
				r.done = true
				pending--
			}
		})
	}
	return parts, nil
}

// Run reads the namespace's topics (Read) and compares them (Compare).
func Run(ctx context.Context, opts []kgo.Opt, names kafka.Names, o Options) (*Report, error) {
	l, err := Read(ctx, opts, names)
	if err != nil {
		return nil, err
	}
	return Compare(l, o), nil
}
