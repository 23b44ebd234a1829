package changelog

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Write appends cs to the change-log topic, each keyed by its schedule, and waits until the broker has them.
func Write(ctx context.Context, cl *kgo.Client, topic string, cs ...Change) error {
	recs := make([]*kgo.Record, 0, len(cs))
	for _, c := range cs {
		v, err := Encode(c)
		if err != nil {
			return err
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(c.Schedule), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("writing to the change log %s: %w", topic, err)
	}
	return nil
}

// needBackfills reports whether a change of es is a backfill's, to check against the backfills topic.
func needBackfills(es []Entry) bool {
	for _, e := range es {
		if IsBackfill(e.Op) {
			return true
		}
	}
	return false
}

// Entry is a change as read back: the change, where it is in the log and when the broker took it, and what the
// schedules topic says of it (Confirmed or Unconfirmed: Read leaves out the forged ones).
type Entry struct {
	Change
	Status    Status
	LogOffset int64
	Time      time.Time
}

// Stats counts what Read passed over.
type Stats struct {
	// Invalid records did not decode as changes; Forged ones were contradicted by the schedules topic.
	Invalid, Forged int
}

// Read returns the changes of the change-log topic that keep accepts (nil: all), oldest first, each checked
// against the schedules topic. It reads the change log before the schedules topic, so that the
// schedule record of every change read is below the schedules topic's end.
func Read(ctx context.Context, opts []kgo.Opt, changes, schedules, backfills string, keep func(Change, time.Time) bool) ([]Entry, Stats, error) {
	var (
		all   []Entry
		stats Stats
	)
	_, err := kafka.ReadStable(ctx, opts, changes, 0, func(r *kgo.Record) error {
		if r.Attrs.IsControl() {
			return nil
		}
		c, err := Decode(r.Value)
		if err != nil || string(r.Key) != c.Schedule {
			stats.Invalid++
			return nil
		}
		all = append(all, Entry{Change: c, LogOffset: r.Offset, Time: r.Timestamp.UTC()})
		return nil
	})
	if err != nil {
		return nil, stats, fmt.Errorf("reading the change log %s: %w", changes, err)
	}
	v := Verifier{Records: map[int64]SchedulesRecord{}}
	v.End, err = kafka.ReadStable(ctx, opts, schedules, 0, func(r *kgo.Record) error {
		if !r.Attrs.IsControl() {
			v.Records[r.Offset] = schedulesRecord(r)
		}
		return nil
	})
	if err != nil {
		return nil, stats, fmt.Errorf("reading %s: %w", schedules, err)
	}
	v.Backfills = map[int64]SchedulesRecord{}
	if needBackfills(all) {
		v.BackfillsEnd, err = kafka.ReadStable(ctx, opts, backfills, 0, func(r *kgo.Record) error {
			if !r.Attrs.IsControl() {
				v.Backfills[r.Offset] = backfillsRecord(r)
			}
			return nil
		})
		switch {
		case kafka.Denied(err):
			return nil, stats, fmt.Errorf("reading %s: %w", backfills, err)
		case err != nil:
			v.BackfillsEnd = -1 // not readable (no such topic): the backfill changes cannot be checked
		}
	}
	out := all[:0]
	for _, e := range all {
		// Every change is verified, kept or not: an earlier claim of a record decides a later one's.
		e.Status = v.Verify(e.Change, e.Time)
		if e.Status == Forged {
			stats.Forged++
			continue
		}
		if keep == nil || keep(e.Change, e.Time) {
			out = append(out, e)
		}
	}
	return out, stats, nil
}

// schedulesRecord is r of the schedules topic, as Verify needs it. The topic is made with LogAppendTime (package
// kafka), which the leader relies on too (a schedule's change time), so its timestamps are the broker's.
func schedulesRecord(r *kgo.Record) SchedulesRecord {
	return SchedulesRecord{Key: r.Key, Value: r.Value, Time: r.Timestamp.UTC(), Stamped: true}
}

// backfillsRecord is r of the backfills topic, as Verify needs it. That topic keeps its writers' timestamps
// (CreateTime), which prove nothing: only one the broker stamped counts as the record's time.
func backfillsRecord(r *kgo.Record) SchedulesRecord {
	return SchedulesRecord{Key: r.Key, Value: r.Value, Time: r.Timestamp.UTC(), Stamped: r.Attrs.TimestampType() == 1}
}
