package changelog

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/kafka"
)

// Write appends cs to the change-log topic, each keyed by its schedule (a limit's change by limit.Key of its
// limit, a calendar's by calendarstore.Key: Change.Key), and waits until the broker has them.
func Write(ctx context.Context, cl *kgo.Client, topic string, cs ...Change) error {
	recs := make([]*kgo.Record, 0, len(cs))
	for _, c := range cs {
		v, err := Encode(c)
		if err != nil {
			return err
		}
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(c.Key()), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("writing to the change log %s: %w", topic, err)
	}
	return nil
}

// Topics are the topics a reader of the change log reads: the log, and those its changes' records are on.
type Topics struct {
	Changes, Schedules, Backfills, Limits, Calendars string
}

// need reports whether a change of es is of an op that is accepts (IsBackfill, IsLimit): one to check against
// the topic of such changes.
func need(es []Entry, is func(op string) bool) bool {
	for _, e := range es {
		if is(e.Op) {
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
	// Bulk is the number of changes of the bulk apply this one came from (Change.Expand: Applied); 0 for a
	// record of its own. A confirmed bulk change has the schedules topic's record as After (it records no
	// definition).
	Bulk int
}

// entries returns the entries of the change c read at offset, logged at t: the items of a bulk record, or c.
func entries(c Change, offset int64, t time.Time) []Entry {
	xs := c.Expand()
	es := make([]Entry, len(xs))
	for i, x := range xs {
		es[i] = Entry{Change: x, LogOffset: offset, Time: t}
		if c.Op == OpApplyBulk {
			es[i].Bulk = c.Applied
		}
	}
	return es
}

// verify sets e's Status, and the After of a confirmed bulk change: the record it names.
func (v *Verifier) verify(e *Entry) {
	e.Status = v.Verify(e.Change, e.Time)
	if e.bulk && e.Status == Confirmed && !e.deleted {
		e.After = v.Records[e.Offset].Value
	}
}

// Stats counts what Read passed over.
type Stats struct {
	// Invalid records did not decode as changes; Forged ones were contradicted by the schedules topic.
	Invalid, Forged int
}

// Read returns the changes of the change-log topic that keep accepts (nil: all), oldest first, each checked
// against the topic its record is on. It reads the whole change log and the whole schedules topic (the backfills,
// limits and calendars topics when a change is theirs): ReadSchedule reads only what one schedule's changes need. It reads
// the change log before the other topics, so that the record of every change read is below their ends.
func Read(ctx context.Context, opts []kgo.Opt, topics Topics, keep func(Change, time.Time) bool) ([]Entry, Stats, error) {
	var (
		all   []Entry
		stats Stats
	)
	_, err := kafka.ReadStable(ctx, opts, topics.Changes, 0, func(r *kgo.Record) error {
		if r.Attrs.IsControl() {
			return nil
		}
		c, err := Decode(r.Value)
		if err != nil || string(r.Key) != c.Key() {
			stats.Invalid++
			return nil
		}
		all = append(all, entries(c, r.Offset, r.Timestamp.UTC())...)
		return nil
	})
	if err != nil {
		return nil, stats, fmt.Errorf("reading the change log %s: %w", topics.Changes, err)
	}
	v := Verifier{Records: map[int64]SchedulesRecord{}, Backfills: map[int64]SchedulesRecord{}, Limits: map[int64]SchedulesRecord{},
		Calendars: map[int64]SchedulesRecord{}}
	v.End, err = kafka.ReadStable(ctx, opts, topics.Schedules, 0, func(r *kgo.Record) error {
		if !r.Attrs.IsControl() {
			v.Records[r.Offset] = schedulesRecord(r)
		}
		return nil
	})
	if err != nil {
		return nil, stats, fmt.Errorf("reading %s: %w", topics.Schedules, err)
	}
	if need(all, IsBackfill) {
		if v.BackfillsEnd, err = readOther(ctx, opts, topics.Backfills, v.Backfills, backfillsRecord); err != nil {
			return nil, stats, err
		}
	}
	if need(all, IsLimit) {
		if v.LimitsEnd, err = readOther(ctx, opts, topics.Limits, v.Limits, schedulesRecord); err != nil {
			return nil, stats, err
		}
	}
	if need(all, IsCalendar) {
		if v.CalendarsEnd, err = readOther(ctx, opts, topics.Calendars, v.Calendars, schedulesRecord); err != nil {
			return nil, stats, err
		}
	}
	out := all[:0]
	for _, e := range all {
		// Every change is verified, kept or not: an earlier claim of a record decides a later one's.
		v.verify(&e)
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

// readOther reads topic (the backfills, limits or calendars topic) whole into records, each as as makes it, and returns
// its end: -1 when it cannot be read (no such topic), so that its changes are unconfirmed. A refused
// permission is an error naming it.
func readOther(ctx context.Context, opts []kgo.Opt, topic string, records map[int64]SchedulesRecord, as func(*kgo.Record) SchedulesRecord) (int64, error) {
	end, err := kafka.ReadStable(ctx, opts, topic, 0, func(r *kgo.Record) error {
		if !r.Attrs.IsControl() {
			records[r.Offset] = as(r)
		}
		return nil
	})
	switch {
	case kafka.Denied(err):
		return 0, fmt.Errorf("reading %s: %w", topic, err)
	case err != nil:
		return -1, nil
	}
	return end, nil
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

// Bounds of ReadSchedule.
const (
	// ScheduleMargin is how long before since ReadSchedule starts reading the change log. Every claim of a
	// record that can take it is logged after the record existed (Verify), and a writer logs its change right
	// after its record, so the claims that compete with the changes shown are within the margin.
	ScheduleMargin = time.Hour
	// MaxScheduleChanges is the most changes of one schedule that ReadSchedule returns: the newest.
	MaxScheduleChanges = 1000
)

// ReadSchedule returns the changes of schedule name logged at or after since, oldest first, checked as Read
// checks them, and at most the newest MaxScheduleChanges of them. It reads what one schedule's changes need,
// whatever the size of the namespace: the change log from since minus ScheduleMargin on (by its records'
// timestamps), decoding only the records keyed name (the change log is keyed by schedule) and the bulk records
// that name it, and of the schedules and backfills topics only the records those changes name.
//
// Its Stats count the records of name it read. A change is checked against the changes of name read, not
// against those of the whole log: a change whose record is older than the first change read (when the newest
// MaxScheduleChanges leave older ones out) cannot be confirmed, and is Unconfirmed.
func ReadSchedule(ctx context.Context, opts []kgo.Opt, topics Topics, name string, since time.Time) ([]Entry, Stats, error) {
	var stats Stats
	changes := topics.Changes
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, stats, fmt.Errorf("reading the change log %s: client: %w", changes, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	// Where to start: the first change logged at or after since minus the margin. Kafka gives negative
	// timestamps other meanings: a start before 1970 reads from the start.
	from, window := int64(-1), time.Time{}
	if start := since.Add(-ScheduleMargin); start.UnixMilli() > 0 {
		listed, err := adm.ListOffsetsAfterMilli(ctx, start.UnixMilli(), changes)
		if err == nil {
			err = listed.Error()
		}
		if err != nil {
			return nil, stats, fmt.Errorf("reading the change log %s: listing offsets: %w", changes, kafka.NeedACL(err, "Read", "topic", changes))
		}
		o, ok := listed.Lookup(changes, 0)
		if !ok {
			return nil, stats, fmt.Errorf("reading the change log %s: no partition listed", changes)
		}
		// A competing claim not read was logged before start, so it is before the record of a change when that
		// record is at least ClaimSkew younger than start (Verify).
		from, window = o.Offset, start.Add(ClaimSkew)
	}
	var all []Entry
	dropped := time.Time{} // the log time of the newest change left out for the bound
	keep := func(n int) {
		dropped = all[len(all)-n-1].Time
		all = append(all[:0], all[len(all)-n:]...)
	}
	item := []byte(`"s":"` + name + `"`) // how a bulk record names name (names need no escaping)
	_, err = kafka.ReadStableFrom(ctx, opts, changes, 0, from, func(r *kgo.Record) error {
		switch {
		case r.Attrs.IsControl():
			return nil
		case string(r.Key) == BulkKey:
			e, ok := bulkEntry(r, name, item)
			if !ok {
				return nil
			}
			all = append(all, e)
		case string(r.Key) != name:
			return nil
		default:
			c, err := Decode(r.Value)
			if err != nil || c.Schedule != name {
				stats.Invalid++
				return nil
			}
			all = append(all, Entry{Change: c, LogOffset: r.Offset, Time: r.Timestamp.UTC()})
		}
		if len(all) == 2*MaxScheduleChanges {
			keep(MaxScheduleChanges)
		}
		return nil
	})
	if err != nil {
		return nil, stats, fmt.Errorf("reading the change log %s: %w", changes, err)
	}
	if len(all) > MaxScheduleChanges {
		keep(MaxScheduleChanges)
	}
	if !dropped.IsZero() {
		window = dropped.Add(ClaimSkew + time.Millisecond)
	}

	// The records the changes name, below the ends listed now: after the change log, as Read reads them.
	v := Verifier{Records: map[int64]SchedulesRecord{}, Backfills: map[int64]SchedulesRecord{}, Window: window}
	if err := readClaimed(ctx, opts, adm, topics, all, &v); err != nil {
		return nil, stats, err
	}
	out := all[:0]
	for _, e := range all {
		v.verify(&e)
		if e.Status == Forged {
			stats.Forged++
			continue
		}
		if !e.Time.Before(since) {
			out = append(out, e)
		}
	}
	return out, stats, nil
}

// bulkEntry returns the change of schedule name in the bulk record r, if it holds one: item is how its value
// names name, looked for before the record is decoded. A record that does not decode is passed over: it is
// counted invalid only where it is read whole (Read), not once per schedule whose log is asked for.
func bulkEntry(r *kgo.Record, name string, item []byte) (Entry, bool) {
	if !bytes.Contains(r.Value, item) {
		return Entry{}, false
	}
	c, err := Decode(r.Value)
	if err != nil || c.Op != OpApplyBulk {
		return Entry{}, false
	}
	for _, e := range entries(c, r.Offset, r.Timestamp.UTC()) {
		if e.Schedule == name {
			return e, true
		}
	}
	return Entry{}, false
}

// readClaimed reads into v the records of the schedules and backfills topics that the changes of es claim, and
// those topics' ends. A schedule's changes are never a limit's or a calendar's (their keys differ), so the limits
// and calendars topics are not read.
func readClaimed(ctx context.Context, opts []kgo.Opt, adm *kadm.Client, topics Topics, es []Entry, v *Verifier) error {
	var wanted, wantedBf []int64
	for _, e := range es {
		switch {
		case e.Op == OpTrigger:
		case IsBackfill(e.Op):
			wantedBf = append(wantedBf, e.Offset)
		default:
			wanted = append(wanted, e.Offset)
		}
	}
	var err error
	if len(wanted) > 0 {
		if v.End, err = stableEnd(ctx, adm, topics.Schedules); err != nil {
			return fmt.Errorf("reading %s: %w", topics.Schedules, err)
		}
		if err := readAt(ctx, opts, topics.Schedules, below(wanted, v.End), func(r *kgo.Record) { v.Records[r.Offset] = schedulesRecord(r) }); err != nil {
			return err
		}
	}
	if len(wantedBf) == 0 {
		return nil
	}
	v.BackfillsEnd, err = stableEnd(ctx, adm, topics.Backfills)
	switch {
	case kafka.Denied(err):
		return fmt.Errorf("reading %s: %w", topics.Backfills, err)
	case err != nil:
		v.BackfillsEnd = -1 // not readable (no such topic): the backfill changes cannot be checked
		return nil
	}
	return readAt(ctx, opts, topics.Backfills, below(wantedBf, v.BackfillsEnd), func(r *kgo.Record) { v.Backfills[r.Offset] = backfillsRecord(r) })
}

// stableEnd returns the last stable offset of partition 0 of topic.
func stableEnd(ctx context.Context, adm *kadm.Client, topic string) (int64, error) {
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("listing the last stable offset: %w", kafka.NeedACL(err, "Read", "topic", topic))
	}
	end, ok := ends.Lookup(topic, 0)
	if !ok || end.Err != nil {
		return 0, fmt.Errorf("listing the last stable offset: %w", kafka.NeedACL(cmp.Or(end.Err, errors.New("partition not listed")), "Read", "topic", topic))
	}
	return end.Offset, nil
}

// below returns the offsets of os below end, sorted, each once.
func below(os []int64, end int64) []int64 {
	os = slices.DeleteFunc(os, func(o int64) bool { return o >= end })
	slices.Sort(os)
	return slices.Compact(os)
}

// targetedFetchBytes bounds what one fetch of readAt asks for. A fetch returns the partition from its offset on
// (at least one batch, whatever its size), while readAt wants one record there.
const targetedFetchBytes = 4 << 10

// readAt reads partition 0 of topic at the offsets wanted (increasing, each below the partition's last stable
// offset), read_committed, and calls fn with the record at each that holds one (compaction removes records). It
// jumps from one offset to the next rather than reading the records between them: its cost is about one small
// fetch per offset, not the partition's size.
func readAt(ctx context.Context, opts []kgo.Opt, topic string, wanted []int64, fn func(*kgo.Record)) error {
	if len(wanted) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(wanted[0])}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), // an offset below the start: the records from the start on
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // a marker at a wanted offset tells that no record is there
		kgo.FetchMaxBytes(targetedFetchBytes),
		kgo.FetchMaxPartitionBytes(targetedFetchBytes),
	)...)
	if err != nil {
		return fmt.Errorf("reading %s: client: %w", topic, err)
	}
	defer cl.Close()
	i := 0 // wanted[:i] are read, or found gone
	// A wanted offset with no record at or after it below the end (the tail aborted, or removed) is never
	// answered: after idlePolls polls of up to 2 s without a record, the rest count as gone.
	const idlePolls = 3
	for idle := 0; i < len(wanted) && idle < idlePolls; {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		if fetches.NumRecords() == 0 {
			idle++
		} else {
			idle = 0
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %s at offset %d: %w", topic, wanted[i], err)
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				ferr = errors.Join(ferr, fmt.Errorf("fetching %s[%d]: %w", t, p, kafka.NeedACL(err, "Read", "topic", topic)))
			}
		})
		if ferr != nil {
			return ferr
		}
		// Records come in offset order from where the client was set to read, so a record past wanted[i] means
		// that wanted[i] holds none. A fetch still under way when the client jumped may hand over records below
		// the jump: they tell nothing, and are passed over.
		next := int64(-1)
		fetches.EachRecord(func(r *kgo.Record) {
			for i < len(wanted) && wanted[i] < r.Offset {
				i++
			}
			if i < len(wanted) && wanted[i] == r.Offset {
				if !r.Attrs.IsControl() {
					fn(r)
				}
				i++
			}
			next = r.Offset + 1
		})
		if next >= 0 && i < len(wanted) && wanted[i] > next {
			cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: wanted[i]}}})
		}
	}
	return nil
}
