// Package shares keeps the schedule shares: the schedules topic split along the leaders, so that a ticker
// replica reads and holds only the schedules of the leaders it runs.
//
// The schedules topic (<ns>.schedules, one partition) stays the one place schedules are written: every writer,
// the change log and every earlier release go on using it unchanged. Leader 0 copies it, record by record and
// in order, into the shares topic (<ns>.schedules.shares), one partition per leader, each record to the
// partition of its schedule's leader (kafka.LeaderOf). A copy keeps the record's key, value and headers, and
// carries what a reader needs to take it for the original: its offset in the schedules topic (HeaderSource:
// the schedule's version) and its timestamp (the broker's append time there: the change time).
//
// Exactly once. The copy runs in transactions of its own transactional ID (Names.SharesTransactionalID), each
// ending with a progress record (key ProgressKey, in partition 0) that holds the offset of the last source
// record copied. A new copier first fences its predecessor (a committed transaction of its own), then reads the
// last progress and goes on after it; a copier that a newer one fenced can commit nothing more. A record copied
// twice (by two copiers in turn, each after the progress it read) carries the same offset and value: a reader
// folds it as a restatement.
//
// A reader (store.View) takes the shares when they are complete, the progress at or past the schedules topic's
// end as it lists it; until then it reads the whole schedules topic, as every replica did before the shares.
package shares

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Keys and headers of the shares topic.
const (
	// HeaderSource holds the offset, in the schedules topic, of the record a share record copies (decimal).
	HeaderSource = "tickgroup-source-offset"
	// ProgressKey is the key of the copier's progress records (partition 0): the offset of the last schedules
	// record copied, decimal. A schedule name cannot start with '~'.
	ProgressKey = "~progress"
	// FenceKey is the key of the record a copier commits first, so that its predecessor is fenced before it
	// reads the progress.
	FenceKey = "~fence"
)

// Internal reports whether key is one of the copier's own records rather than a schedule's.
func Internal(key []byte) bool { return len(key) > 0 && key[0] == '~' }

// Source sets dst to the schedules record that r, a record read from the shares topic, copies: r's key, value,
// timestamp and headers (less HeaderSource), of topic source, partition 0 and the offset HeaderSource holds. It
// returns false for a record without a valid HeaderSource (not the copier's): the caller skips it. r itself is
// not changed: a reader goes on from its offset in the shares. dst is the caller's, so that a share's load
// needs no new record for each it reads.
func Source(dst, r *kgo.Record, source string) bool {
	for i, h := range r.Headers {
		if h.Key != HeaderSource {
			continue
		}
		o, err := strconv.ParseInt(string(h.Value), 10, 64)
		if err != nil || o < 0 {
			return false
		}
		*dst = *r
		dst.Topic, dst.Partition, dst.Offset = source, 0, o
		dst.Headers = append(r.Headers[:i:i], r.Headers[i+1:]...) // the schedules record's own headers
		return true
	}
	return false
}

// Copy is the share record of r, a record of the schedules topic, for a namespace of leaders leaders.
func Copy(r *kgo.Record, topic string, leaders int) *kgo.Record {
	headers := make([]kgo.RecordHeader, 0, len(r.Headers)+1)
	headers = append(headers, r.Headers...)
	headers = append(headers, kgo.RecordHeader{Key: HeaderSource, Value: strconv.AppendInt(nil, r.Offset, 10)})
	return &kgo.Record{
		Topic:     topic,
		Partition: kafka.LeaderOf(string(r.Key), leaders),
		Key:       r.Key,
		Value:     r.Value,
		Headers:   headers,
		Timestamp: r.Timestamp,
	}
}

// progressRecord is the progress record saying that every schedules record up to offset last is copied.
func progressRecord(topic string, last int64) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: 0, Key: []byte(ProgressKey), Value: strconv.AppendInt(nil, last, 10)}
}

// Status is how far the copy has gone.
type Status struct {
	// Exists is false when the namespace has no shares topic.
	Exists bool
	// Progress is the offset of the last schedules record copied (-1: none); End the schedules topic's end (its
	// last stable offset), 0 when the shares topic does not exist.
	Progress, End int64
}

// Complete reports whether the shares hold every schedules record.
func (s Status) Complete() bool { return s.Exists && s.Progress >= s.End-1 }

// ReadStatus returns how far the copy of source into topic has gone.
func ReadStatus(ctx context.Context, opts []kgo.Opt, topic, source string) (Status, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return Status{}, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	return readStatus(ctx, opts, kadm.NewClient(cl), topic, source)
}

// readStatus is ReadStatus with a client at hand (opts: for the read of the progress).
func readStatus(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topic, source string) (Status, error) {
	st := Status{Progress: -1}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("listing the end of %s: %w", topic, err)
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
		return st, nil
	}
	if end.Err != nil {
		return st, fmt.Errorf("listing the end of %s: %w", topic, end.Err)
	}
	st.Exists = true
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return st, fmt.Errorf("listing the start of %s: %w", topic, err)
	}
	start, _ := starts.Lookup(topic, 0)
	// The last committed records of partition 0 are a transaction's progress, unless aborted transactions of a
	// fenced copier follow them: read a growing tail until a progress record is in it.
	for window := int64(64); ; window *= 8 {
		from := max(start.Offset, end.Offset-window)
		if _, err := kafka.ReadStableFrom(ctx, opts, topic, 0, from, func(r *kgo.Record) error {
			if string(r.Key) == ProgressKey {
				if o, err := strconv.ParseInt(string(r.Value), 10, 64); err == nil {
					st.Progress = o
				}
			}
			return nil
		}); err != nil {
			return st, err
		}
		if st.Progress >= 0 || from <= start.Offset {
			break
		}
	}
	st.End, err = SourceEnd(ctx, adm, source)
	return st, err
}

// SourceEnd returns the end (last stable offset) of the schedules topic: the shares are complete when the
// progress is at least SourceEnd-1.
func SourceEnd(ctx context.Context, adm *kadm.Client, source string) (int64, error) {
	ends, err := adm.ListCommittedOffsets(ctx, source)
	if err != nil {
		return 0, fmt.Errorf("listing the end of %s: %w", source, err)
	}
	o, ok := ends.Lookup(source, 0)
	if !ok {
		return 0, fmt.Errorf("listing the end of %s: no partition 0", source)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("listing the end of %s: %w", source, o.Err)
	}
	return o.Offset, nil
}

// Partitions returns the partition count of the shares topic, 0 when it does not exist.
func Partitions(ctx context.Context, adm *kadm.Client, topic string) (int, error) {
	tds, err := kafka.ListFresh(ctx, adm, topic)
	if err != nil {
		return 0, err
	}
	td, ok := tds[topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return 0, nil
	}
	if td.Err != nil {
		return 0, td.Err
	}
	return len(td.Partitions), nil
}
