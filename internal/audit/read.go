package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendarstore"
	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Read reads the schedules, work and results topics of names to their last stable offsets, read_committed, and
// returns what they retain. opts are the connection options (kafka.Config.Opts). Undecodable records are counted
// and skipped.
func Read(ctx context.Context, opts []kgo.Opt, names kafka.Names) (*Log, error) {
	return ReadSince(ctx, opts, names, time.Time{})
}

// ReadSince is Read of the work and results topics from the first record of each partition stamped at or after
// since (the zero time: from their start), for a report on a recent window (`ticker status`): its cost is that
// of the window, not of what the topics retain. Each partition read from since covers since on (Log.WorkFrom),
// so a slot of the window that was never emitted still counts as missing. The schedules topic is read whole.
func ReadSince(ctx context.Context, opts []kgo.Opt, names kafka.Names, since time.Time) (*Log, error) {
	return ReadRecent(ctx, opts, names, since, 0)
}

// ReadRecent is ReadSince reading at most maxPerPartition records of each work and results partition, the
// newest (0: no bound): its cost is bounded whatever the window holds. A partition the bound cut covers only
// from its first record read (a work partition a lead later: a tick of a slot just after may have been emitted
// before it), so a slot before that is not counted missing, and Log.Truncated is set.
func ReadRecent(ctx context.Context, opts []kgo.Opt, names kafka.Names, since time.Time, maxPerPartition int64) (*Log, error) {
	if maxPerPartition < 0 {
		return nil, fmt.Errorf("reading the work and results topics: a bound of %d records", maxPerPartition)
	}
	return readRecent(ctx, opts, names, since, maxPerPartition, newReader())
}

// ReadRecentOf is ReadRecent with the definitions of the schedules keep accepts only (nil: none, and the
// schedules topic is not read), and every tick: a report of the fleet, or of one schedule, whose memory does not
// grow with the namespace's schedules (its ticks are bounded by maxPerPartition).
func ReadRecentOf(ctx context.Context, opts []kgo.Opt, names kafka.Names, since time.Time, maxPerPartition int64, keep func(schedule string) bool) (*Log, error) {
	if maxPerPartition < 0 {
		return nil, fmt.Errorf("reading the work and results topics: a bound of %d records", maxPerPartition)
	}
	r := newReader()
	r.defs, r.defsOnly = keep, true
	return readRecent(ctx, opts, names, since, maxPerPartition, r)
}

// readRecent is ReadRecent folding into r: with r.only set, only the records of the schedules it keeps (a pass
// of Stream).
func readRecent(ctx context.Context, opts []kgo.Opt, names kafka.Names, since time.Time, maxPerPartition int64, r *reader) (*Log, error) {
	schedules, work, results := r.schedule, r.work, r.result
	if r.only != nil {
		schedules = func(rec *kgo.Record) {
			if r.only(string(rec.Key)) {
				r.schedule(rec)
			}
		}
		work, results = r.scopedWork, r.scopedResult
	}
	if r.defsOnly {
		schedules = func(rec *kgo.Record) {
			if r.defs(string(rec.Key)) {
				r.schedule(rec)
			}
		}
	}
	if !r.defsOnly || r.defs != nil {
		parts, err := readTopic(ctx, opts, names.Schedules, schedules, span{})
		if err != nil {
			return nil, err
		}
		if p := parts[0]; p != nil {
			r.l.scheduleGaps = p.gaps
		}
	}
	if err := r.readCalendars(ctx, opts, names); err != nil {
		return nil, err
	}
	pools, err := r.pools(ctx, opts, names)
	if err != nil {
		return nil, err
	}
	for _, pool := range pools {
		n := names.Pool(pool)
		r.pool = n.PoolName
		c := &Coverage{}
		parts, err := readTopic(ctx, opts, n.Work, work, span{since: since, max: maxPerPartition})
		if err != nil {
			return nil, err
		}
		c.WorkPartitions, c.WorkFrom = len(parts), r.workCoverage(parts)
		if parts, err = readTopic(ctx, opts, n.Results, results, span{since: resultsSince(parts, since), max: maxPerPartition}); err != nil {
			return nil, err
		}
		c.ResultsPartitions, c.ResultsFrom = len(parts), coverage(parts)
		for _, pr := range parts {
			r.l.Truncated = r.l.Truncated || pr.cut
		}
		if n.PoolName == "" {
			r.l.WorkPartitions, r.l.WorkFrom, r.l.ResultsPartitions, r.l.ResultsFrom = c.WorkPartitions, c.WorkFrom, c.ResultsPartitions, c.ResultsFrom
		} else {
			r.l.Pools[n.PoolName] = c
		}
	}
	r.l.markPartial()
	return r.l, nil
}

// pools returns the pools to read: the default, every pool a retained schedule version names, and every pool
// whose work topic exists (the pool of a schedule deleted since). A principal that may not list the topics reads
// the pools the schedules name.
func (r *reader) pools(ctx context.Context, opts []kgo.Opt, names kafka.Names) ([]string, error) {
	seen := map[string]bool{"": true}
	for _, d := range r.l.Definitions {
		for _, v := range d.Versions {
			if v.Schedule != nil {
				seen[v.Schedule.Pool()] = true
			}
		}
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("listing the pools: client: %w", err)
	}
	defer cl.Close()
	if tds, err := kadm.NewClient(cl).ListTopics(ctx); err == nil {
		for topic := range tds {
			if pool, ok := names.PoolOfWork(topic); ok {
				seen[pool] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// gap is a range of offsets that is not retained.
type gap struct{ from, to int64 } // [from, to)

// reader folds records into a Log: schedules first, then work, then results, each partition in order.
type reader struct {
	l     *Log
	folds map[string]map[int32]*ledger.Fold // by pool and work partition: which started entries are valid
	pool  string                            // the pool being read
	src   map[*Tick][]string                // the results topic and partition of each ledger entry ("": from a batch record), to apply tombstones
	// only, when set, says which schedules' records are kept (ReadSchedule's one, a pass of Stream's); of the
	// others' ticks, only each leader term's first and last emission (Log.term). An ID that names no
	// schedule is kept with unnamed. prefix, with ReadSchedule, is "<schedule>@", the start of every tick ID
	// of its schedule: a results record that does not hold it is skipped undecoded.
	only    func(schedule string) bool
	unnamed bool
	prefix  string
	// defs, with defsOnly, says which schedules' definitions are kept, every tick being kept (ReadRecentOf);
	// nil: none, and the schedules topic is not read.
	defs     func(schedule string) bool
	defsOnly bool
	// onRecord, when set, is called with every record a scoped read is given (tests).
	onRecord func(*kgo.Record)
}

func newReader() *reader {
	return &reader{l: NewLog(), folds: map[string]map[int32]*ledger.Fold{}, src: map[*Tick][]string{}}
}

// schedule applies a schedules-topic record: a version, or a deletion. An invalid record is skipped, as the
// leader skips it (the previous version stays in force).
func (r *reader) schedule(rec *kgo.Record) {
	name := string(rec.Key)
	if rec.Value == nil {
		r.l.AddVersion(name, rec.Offset, rec.Timestamp, nil)
		return
	}
	spec, err := schedule.Decode(rec.Value)
	if err != nil || spec.Name != name {
		r.l.Undecodable++
		return
	}
	sched, err := spec.Compile()
	if err != nil {
		r.l.Undecodable++
		return
	}
	r.l.AddVersion(name, rec.Offset, rec.Timestamp, sched)
}

// readCalendars reads the calendars topic whole, every record a version of one calendar, when a retained
// schedule version excludes calendars (calendars.go): an audit of schedules without calendars needs no Read on
// the topic. A namespace without the topic has no calendar.
func (r *reader) readCalendars(ctx context.Context, opts []kgo.Opt, names kafka.Names) error {
	if !r.l.excludes() {
		return nil
	}
	parts, err := readTopic(ctx, opts, names.Calendars, r.calendar, span{})
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return nil
	case err != nil:
		return err
	}
	if p := parts[0]; p != nil && len(p.gaps) > 0 {
		r.l.CalendarsPartial = true
	}
	return nil
}

// calendar applies a calendars-topic record: a version of its calendar, or a deletion. A record that is no valid
// calendar of its key is skipped, as the leader's View refuses it (the calendar keeps its last valid version).
func (r *reader) calendar(rec *kgo.Record) {
	name := string(rec.Key)
	if rec.Value == nil {
		r.l.AddCalendarVersion(name, rec.Timestamp, nil)
		return
	}
	c, err := calendarstore.Decode(name, rec.Value)
	if err != nil {
		if r.only == nil || r.unnamed { // a pass of Stream: the first counts it
			r.l.Undecodable++
		}
		return
	}
	r.l.AddCalendarVersion(name, rec.Timestamp, c)
}

// work applies a work-topic record: an emission of its tick.
func (r *reader) work(rec *kgo.Record) {
	if rec.Value == nil {
		return
	}
	if cancel.Is(rec) {
		if !cancel.Genuine(rec) {
			r.l.ForgedCancels++ // workers refuse it (and dead-letter it)
		}
		return // not a tick: the outcomes it causes say what it did
	}
	tk, err := tick.Decode(rec.Value)
	if err != nil {
		r.l.Undecodable++
		return
	}
	r.emission(rec, tk)
}

// emission applies a work record's decoded tick.
func (r *reader) emission(rec *kgo.Record, tk tick.Tick) {
	t := r.l.tick(tk.ID)
	t.Schedule, t.Slot, t.Shard, t.Shards = tk.Schedule, tk.Slot.UTC(), tk.Shard, max(tk.Shards, 1)
	t.Pool = r.pool
	t.Trigger = t.Trigger || tk.Trigger
	t.Backfill = t.Backfill || tk.Backfill != ""
	if tk.NotBefore != nil && t.NotBefore.IsZero() {
		t.NotBefore = tk.NotBefore.UTC()
	}
	t.Limit = cmp.Or(t.Limit, tk.Limit)
	at := tk.EmittedAt
	if at.IsZero() {
		at = rec.Timestamp
	}
	t.Emissions = append(t.Emissions, Emission{
		Partition: rec.Partition, Offset: rec.Offset, EmittedAt: at.UTC(),
		LeaderEpoch: tk.LeaderEpoch, ScheduleVersion: tk.ScheduleVersion,
	})
}

// result applies a results-topic record: a ledger entry, or a tombstone that deletes its key's entries.
func (r *reader) result(rec *kgo.Record) {
	if ledger.IsClaimKey(rec.Key) && rec.Value == nil {
		return
	}
	if ledger.IsBreachKey(rec.Key) {
		if rec.Value == nil {
			return
		}
		b, err := ledger.DecodeBreach(rec.Value)
		if err != nil {
			r.undecodable(rec.Key)
			return
		}
		if r.only != nil && !r.onlyID(b.ID) {
			return
		}
		t := r.l.tick(b.ID)
		if t.Schedule == "" {
			t.Schedule, t.Slot = b.Schedule, b.Slot.UTC()
		}
		if !slices.Contains(t.Breaches, b.Deadline) { // one per deadline, however many workers saw it
			t.Breaches = append(t.Breaches, b.Deadline)
		}
		return
	}
	if rec.Value == nil {
		// A tombstone deletes the key's earlier entries in its partition (what compaction will do).
		t, ok := r.l.Ticks[string(rec.Key)]
		if !ok {
			return
		}
		src := r.src[t]
		keep, keepSrc := t.Ledger[:0], src[:0]
		for i, e := range t.Ledger {
			if src[i] != where(rec) {
				keep, keepSrc = append(keep, e), append(keepSrc, src[i])
			}
		}
		t.Ledger, r.src[t] = keep, keepSrc
		return
	}
	es, err := ledger.Entries(rec.Value)
	if err != nil {
		r.undecodable(rec.Key)
		return
	}
	src := where(rec)
	if ledger.IsBatchKey(rec.Key) {
		src = "" // no tombstone of a tick ID reaches an entry in a batch record, as no compaction does
	}
	for _, e := range es {
		r.entry(rec, e, src)
	}
}

// undecodable counts an undecodable record keyed key. Reading the records of some schedules only (r.only), it
// counts it when its key names one of them, as a tick ID would: so in exactly one of Stream's passes, whatever
// the key.
func (r *reader) undecodable(key []byte) {
	if r.only == nil || r.onlyID(string(key)) {
		r.l.Undecodable++
	}
}

// onlyID reports whether r keeps the tick of ID id (r.only set): a tick ID is <schedule>@<slot>...
func (r *reader) onlyID(id string) bool {
	name, _, ok := strings.Cut(id, "@")
	if !ok {
		return r.unnamed
	}
	return r.only(name)
}

// where names the topic and partition of rec, for tombstones.
func where(rec *kgo.Record) string { return rec.Topic + "/" + strconv.Itoa(int(rec.Partition)) }

// entry applies one ledger entry of rec (a batch's entries one by one); src is where a tombstone deletes it.
func (r *reader) entry(rec *kgo.Record, e ledger.Entry, src string) {
	id := e.ID
	if id == "" {
		id = string(rec.Key)
	}
	if r.only != nil && e.Kind != ledger.KindClaim && !r.onlyID(id) {
		// Another schedule's tick. Whether a start is valid depends on the claims alone (the fold keeps no
		// tick state between starts here), so dropping the other ticks' entries changes no kept one.
		return
	}
	folds := r.folds[r.pool]
	if folds == nil {
		folds = map[int32]*ledger.Fold{}
		r.folds[r.pool] = folds
	}
	f := folds[e.Partition]
	if f == nil {
		f = ledger.NewFold(e.Partition)
		folds[e.Partition] = f
	}
	switch e.Kind {
	case ledger.KindClaim:
		f.Apply(e, rec.Offset, rec.Timestamp)
		return
	case ledger.KindStarted:
		valid := f.Apply(e, rec.Offset, rec.Timestamp) == ""
		delete(f.Ticks, e.Offset) // only the claim bookkeeping is needed
		if !valid {
			return // its writer had lost the partition: it never ran
		}
	}
	t := r.l.tick(id)
	if e.Schedule != "" && t.Schedule == "" {
		t.Schedule = e.Schedule
	}
	if e.Slot != nil && t.Slot.IsZero() {
		t.Slot = e.Slot.UTC()
	}
	t.Ledger = append(t.Ledger, e)
	r.src[t] = append(r.src[t], src)
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

// resultsMargin is how long before its tick's first record read a ledger entry of a tick read may be stamped:
// a worker's claim of its partition, renewed each lease, or an outcome of a clock that runs behind.
const resultsMargin = time.Minute

// resultsSince is where the results partitions of work partitions parts are read from: since, or when the bound
// cut a work partition, a margin before the oldest first record read of the cut ones. A results record holds a
// batch of ledger entries, so a bound on its records would not bound what the read holds; the ticks read do.
func resultsSince(parts map[int32]*partitionRead, since time.Time) time.Time {
	var oldest time.Time
	for _, pr := range parts {
		if pr.cut && !pr.firstTS.IsZero() && (oldest.IsZero() || pr.firstTS.Before(oldest)) {
			oldest = pr.firstTS
		}
	}
	if oldest.IsZero() {
		return since
	}
	return later(since, oldest.Add(-resultsMargin))
}

// workCoverage is coverage of a work topic's partitions: one the bound cut covers from a lead after its first
// record read (a tick due up to a lead after it may have been emitted before it), and sets Log.Truncated.
func (r *reader) workCoverage(parts map[int32]*partitionRead) map[int32]time.Time {
	c := coverage(parts)
	for p, pr := range parts {
		if pr.cut {
			c[p] = c[p].Add(maxLead)
			r.l.Truncated = true
		}
	}
	return c
}

// coverage returns, per partition whose older records were deleted, the timestamp of its first retained record
// (the read instant for a partition with nothing retained). A partition read from a time on covers that time on;
// one cut short by a span's max, from its first record read; one not read at all, nothing before the read.
func coverage(parts map[int32]*partitionRead) map[int32]time.Time {
	out := map[int32]time.Time{}
	for p, r := range parts {
		switch {
		case r.skipped:
			out[p] = r.readAt
		case r.start == 0:
		case !r.from.IsZero():
			out[p] = r.from // read from a time on: complete from it
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
	from       time.Time // with a span's since: the read started at the first record stamped at or after it
	next       int64     // the offset after the last record read
	gaps       []gap     // offset ranges in [0, end) that were not read (deleted, compacted or aborted)
	done       bool
	cut        bool // a span's max started the read after since (or after the start): older records were not read
	skipped    bool // not one of a span's partitions: nothing of it was fetched
}

// span bounds what readTopic reads of a topic. The zero value reads every partition from its start.
type span struct {
	// since starts each partition at its first record stamped at or after it (zero: at its start); the
	// partition then covers since on, a slot of the window never emitted included.
	since time.Time
	// only, when set, returns the partitions to read out of the topic's n; no record of the others is fetched,
	// and they are returned marked skipped (so the topic's partition count is still the map's length).
	only func(n int) map[int32]bool
	// max, when positive, reads at most the last max offsets below each partition's end. A partition whose
	// read it starts later than since (or than its start) is marked cut, and covers only from its first
	// record read.
	max int64
}

// readTopic reads every partition of topic (those sp allows) from its start (or as sp says) to its last stable
// offset, read_committed, and calls fn for every data record (tombstones included), in order within each
// partition. Control records are read (a partition's last record below its LSO is often a transaction marker)
// but not passed to fn.
func readTopic(ctx context.Context, opts []kgo.Opt, topic string, fn func(*kgo.Record), sp span) (map[int32]*partitionRead, error) {
	offs, err := listOffsets(ctx, opts, topic, sp.since)
	if err != nil {
		return nil, err
	}
	parts, offsets, err := planRead(topic, offs, sp)
	if err != nil {
		return nil, err
	}
	if len(offsets) == 0 {
		return parts, nil
	}
	if err := fetchPartitions(ctx, opts, topic, parts, offsets, fn); err != nil {
		return nil, err
	}
	return parts, nil
}

// topicOffsets are a topic's listed offsets: each partition's last stable offset, start, and first offset at or
// after a span's since (after: empty without one).
type topicOffsets struct {
	ends, starts, after kadm.ListedOffsets
}

// listOffsets lists topic's offsets, with the ACL a refusal needs named.
func listOffsets(ctx context.Context, opts []kgo.Opt, topic string, since time.Time) (topicOffsets, error) {
	var o topicOffsets
	meta, err := kgo.NewClient(opts...)
	if err != nil {
		return o, fmt.Errorf("reading %s: client: %w", topic, err)
	}
	defer meta.Close()
	adm := kadm.NewClient(meta)
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return o, fmt.Errorf("reading %s: %w", topic, kafka.NeedACL(err, "Read", "topic", topic))
	}
	if td, ok := md.Topics[topic]; ok && td.Err != nil {
		// A topic this principal may not describe looks missing unless its error is read.
		return o, fmt.Errorf("reading %s: %w", topic, kafka.NeedACL(td.Err, "Read", "topic", topic))
	}
	if o.ends, err = adm.ListCommittedOffsets(ctx, topic); err != nil {
		return o, fmt.Errorf("reading %s: listing last stable offsets: %w", topic, kafka.NeedACL(err, "Read", "topic", topic))
	}
	if o.starts, err = adm.ListStartOffsets(ctx, topic); err != nil {
		return o, fmt.Errorf("reading %s: listing start offsets: %w", topic, err)
	}
	if !since.IsZero() {
		if o.after, err = adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), topic); err != nil {
			return o, fmt.Errorf("reading %s: listing the offsets at %s: %w", topic, since.Format(time.RFC3339), err)
		}
	}
	return o, nil
}

// planRead decides, from topic's offsets, what of each partition sp reads: the partitions it skips, and where
// each other one starts (offsets: those with something to read).
func planRead(topic string, offs topicOffsets, sp span) (map[int32]*partitionRead, map[int32]kgo.Offset, error) {
	var only map[int32]bool
	if sp.only != nil {
		n := 0
		offs.ends.Each(func(o kadm.ListedOffset) {
			if o.Topic == topic {
				n++
			}
		})
		only = sp.only(n)
	}
	parts := map[int32]*partitionRead{}
	offsets := map[int32]kgo.Offset{}
	now := time.Now()
	var lerr error
	offs.ends.Each(func(o kadm.ListedOffset) {
		switch {
		case o.Topic != topic:
		case sp.only != nil && !only[o.Partition]:
			parts[o.Partition] = &partitionRead{readAt: now, done: true, skipped: true}
		case o.Err != nil:
			lerr = errors.Join(lerr, fmt.Errorf("reading %s[%d]: last stable offset: %w", topic, o.Partition, kafka.NeedACL(o.Err, "Read", "topic", topic)))
		default:
			r := planPartition(topic, o, offs, sp, now)
			parts[o.Partition] = r
			if !r.done {
				offsets[o.Partition] = kgo.NewOffset().At(r.start)
			}
		}
	})
	if lerr != nil {
		return nil, nil, lerr
	}
	if len(parts) == 0 {
		return nil, nil, fmt.Errorf("reading %s: topic not found", topic)
	}
	return parts, offsets, nil
}

// planPartition is where the read of one partition starts and ends.
func planPartition(topic string, o kadm.ListedOffset, offs topicOffsets, sp span, now time.Time) *partitionRead {
	r := &partitionRead{end: o.Offset, readAt: now}
	if s, ok := offs.starts.Lookup(topic, o.Partition); ok && s.Err == nil {
		r.start = s.Offset
	}
	if a, ok := offs.after.Lookup(topic, o.Partition); ok && a.Err == nil {
		// No record at or after since: -1, or the end.
		if at := a.Offset; at < 0 || at > r.end {
			a.Offset = r.end
		}
		if a.Offset >= r.start {
			r.start, r.from = a.Offset, sp.since
		}
	}
	if sp.max > 0 && r.end-sp.max > r.start {
		// The window holds more than max records: the newest max are read, and the partition covers only
		// from the first of them (coverage).
		r.start, r.from, r.cut = r.end-sp.max, time.Time{}, true
	}
	if r.start > 0 {
		r.gaps = append(r.gaps, gap{0, r.start})
	}
	r.next = r.start
	r.done = r.start >= r.end
	return r
}

// fetchPartitions reads parts from offsets to their ends, read_committed, calling fn for every data record.
func fetchPartitions(ctx context.Context, opts []kgo.Opt, topic string, parts map[int32]*partitionRead, offsets map[int32]kgo.Offset, fn func(*kgo.Record)) error {
	cl, err := kgo.NewClient(append(opts[:len(opts):len(opts)],
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(time.Second),
	)...)
	if err != nil {
		return fmt.Errorf("reading %s: client: %w", topic, err)
	}
	defer cl.Close()
	f := &fetching{parts: parts, pending: len(offsets), fn: fn}
	// A partition whose last records below its end are gone (aborted, or removed) never delivers the offset the
	// loop waits for; after idlePolls polls (of up to 2 s) without any record of a pending partition, the rest
	// count as read.
	const idlePolls = 5
	idle := 0
	for f.pending > 0 {
		// PollFetches returns only once records arrive; a bounded wait lets the loop notice that none will.
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fetches := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("reading %s: %w", topic, err)
		}
		var ferr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				ferr = errors.Join(ferr, fmt.Errorf("fetching %s[%d]: %w", t, p, err))
			}
		})
		if ferr != nil {
			return ferr
		}
		f.progress = false
		fetches.EachRecord(f.record)
		if f.progress {
			idle = 0
			continue
		}
		if idle++; idle >= idlePolls {
			f.finishAll()
		}
	}
	return nil
}

// fetching is the state of fetchPartitions' loop.
type fetching struct {
	parts    map[int32]*partitionRead
	pending  int // partitions not read to their end yet
	progress bool
	fn       func(*kgo.Record)
}

// record takes one fetched record: its partition's gaps and progress, and fn for a data record.
func (f *fetching) record(rec *kgo.Record) {
	r := f.parts[rec.Partition]
	if r == nil || r.done {
		return
	}
	f.progress = true
	if rec.Offset >= r.end { // written after the read began: everything below the end was delivered
		f.finish(r)
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
		f.fn(rec)
	}
	if r.next >= r.end {
		f.finish(r)
	}
}

// finish ends r's read; what is below its end and was not delivered is gone.
func (f *fetching) finish(r *partitionRead) {
	if r.next < r.end {
		r.gaps = append(r.gaps, gap{r.next, r.end}) // the tail below the end is gone
	}
	r.done = true
	f.pending--
}

// finishAll ends every partition's read still under way.
func (f *fetching) finishAll() {
	for _, r := range f.parts {
		if !r.done {
			f.finish(r)
		}
	}
}

// Run reads the namespace's topics (Read) and compares them (Compare).
func Run(ctx context.Context, opts []kgo.Opt, names kafka.Names, o Options) (*Report, error) {
	l, err := Read(ctx, opts, names)
	if err != nil {
		return nil, err
	}
	return Compare(l, o), nil
}
