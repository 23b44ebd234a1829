package catalog

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/store"
)

// Definitions reads the definitions of items (a page's rows) from the schedules topic by their offsets: a
// page's cost grows with the page, not with the topic. It returns the entries by name; an item without a valid
// record (Item.Valid false), or whose record the topic no longer holds (compacted since the index took a newer
// one), is left out. An entry's Version is its record's offset: the same as the leader's but after a
// restatement (a repair, or a put of the same definition), which the leader does not count as a change.
func Definitions(ctx context.Context, opts []kgo.Opt, topic string, items []Item) (map[string]store.Entry, error) {
	want := make([]int64, 0, len(items))
	for _, it := range items {
		if it.Valid {
			want = append(want, it.Offset)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	out := make(map[string]store.Entry, len(want))
	if len(want) == 0 {
		return out, nil
	}
	recs, err := readAt(ctx, opts, topic, want)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if sched, err := store.Decode(r); err == nil && sched != nil {
			out[sched.Name()] = store.Entry{Schedule: sched, Version: r.Offset, UpdatedAt: r.Timestamp}
		}
	}
	return out, nil
}

// readAt returns the records at offsets want (sorted, distinct) of partition 0 of topic, read committed. It
// fetches from each wanted offset that the fetch before did not reach: one fetch for offsets close together,
// one each for offsets far apart.
func readAt(ctx context.Context, opts []kgo.Opt, topic string, want []int64) ([]*kgo.Record, error) {
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(want[0])}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100*time.Millisecond),
		kgo.FetchMaxPartitionBytes(256<<10),
	)...)
	if err != nil {
		return nil, fmt.Errorf("catalog: client: %w", err)
	}
	defer cl.Close()
	var out []*kgo.Record
	i := 0 // want[i] is the next offset to find
	for i < len(want) {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %d definitions of %s: %w", len(want), topic, err)
		}
		var ferr error
		fetches.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, fmt.Errorf("reading definitions of %s: %w", topic, ferr)
		}
		last := int64(-1)
		fetches.EachRecord(func(r *kgo.Record) {
			last = max(last, r.Offset)
			for i < len(want) && want[i] < r.Offset {
				i++ // not in the topic any more (compacted): the fetch went past it
			}
			if i < len(want) && want[i] == r.Offset {
				if !r.Attrs.IsControl() {
					out = append(out, r)
				}
				i++
			}
		})
		if i < len(want) && last >= 0 && last+1 < want[i] {
			// The next wanted record is beyond this fetch: fetch from it rather than read the records between.
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: want[i]}}})
		}
	}
	return out, nil
}
