package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ReadStable reads one partition of topic from its start up to its last stable offset (LSO), read_committed, and
// calls fn for every committed data record in order. It returns the LSO it read to.
//
// This is the read a new leader does after fencing: once InitProducerID has returned, every earlier transaction
// under the shared transactional ID is committed or aborted and its markers are written, so the LSO is final for
// everything the previous leaders wrote. Two details matter:
//   - the end is the LSO (ListOffsets with read_committed isolation, kadm.ListCommittedOffsets), not the high
//     watermark, which can sit above an open transaction that the read would then wait for forever;
//   - control records are kept (KeepControlRecords), because the record just below the LSO is usually a
//     transaction marker, and a read that drops markers would never see the offset it waits for.
//
// opts are the connection options (Config.Opts); the read uses its own short-lived client.
func ReadStable(ctx context.Context, opts []kgo.Opt, topic string, partition int32, fn func(*kgo.Record) error) (int64, error) {
	return ReadStableFrom(ctx, opts, topic, partition, -1, fn)
}

// ReadStableFrom is ReadStable from offset from (a negative from: the partition's start).
func ReadStableFrom(ctx context.Context, opts []kgo.Opt, topic string, partition int32, from int64, fn func(*kgo.Record) error) (int64, error) {
	at := kgo.NewOffset().AtStart()
	if from >= 0 {
		at = kgo.NewOffset().At(from)
	}
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: at}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	)...)
	if err != nil {
		return 0, fmt.Errorf("reading %s[%d]: client: %w", topic, partition, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("reading %s[%d]: listing last stable offset: %w", topic, partition, NeedACL(err, "Read", "topic", topic))
	}
	end, ok := ends.Lookup(topic, partition)
	if !ok || end.Err != nil {
		return 0, fmt.Errorf("reading %s[%d]: last stable offset: %w", topic, partition, NeedACL(cmp.Or(end.Err, errors.New("partition not listed")), "Read", "topic", topic))
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("reading %s[%d]: listing start offset: %w", topic, partition, NeedACL(err, "Read", "topic", topic))
	}
	if start, ok := starts.Lookup(topic, partition); ok && start.Err == nil && max(start.Offset, from) >= end.Offset {
		return end.Offset, nil
	}

	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("reading %s[%d] to offset %d: %w", topic, partition, end.Offset, err)
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				ferr = errors.Join(ferr, fmt.Errorf("fetching %s[%d]: %w", t, p, NeedACL(err, "Read", "topic", topic)))
			}
		})
		if ferr != nil {
			return 0, ferr
		}
		done := false
		var cbErr error
		fetches.EachRecord(func(r *kgo.Record) {
			if done || cbErr != nil || r.Offset >= end.Offset {
				done = true
				return
			}
			if !r.Attrs.IsControl() {
				cbErr = fn(r)
			}
			if r.Offset >= end.Offset-1 {
				done = true
			}
		})
		if cbErr != nil {
			return 0, cbErr
		}
		if done {
			return end.Offset, nil
		}
	}
}
