package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/cancel"
	"github.com/tickgroup/tickgroup/internal/kafka"
	"github.com/tickgroup/tickgroup/internal/ledger"
	"github.com/tickgroup/tickgroup/internal/tick"
)

// Scope bounds ReadSchedule to one schedule's records.
type Scope struct {
	// Schedule is the schedule's name.
	Schedule string
	// Pool is its pool ("": the default). Only the topics of the pools the schedule has run in are read: Pool's,
	// and those of the pools its retained versions name (a schedule moved between pools ran in both).
	Pool string
	// Shards is its shard count (0 means 1). The shard counts of its retained versions count too: the read
	// takes the largest.
	Shards int
	// Since starts the work and results partitions at their first record stamped at or after it (zero: at their
	// start), as ReadSince does.
	Since time.Time
	// MaxPerPartition, when positive, reads at most this many records of each partition, the newest: a bound on
	// the read whatever the window holds. A partition it cuts short of Since is covered only from its first
	// record read, and Log.Truncated is set.
	MaxPerPartition int64
	// Latest, when set, is the schedule's newest record, known by whoever asks (a catalog that follows the
	// schedules topic): the topic is then not read, which at ten million records is most of the cost. The
	// versions before it are unknown, as compacted ones are: the slots before it are not derived
	// (Definition.Partial).
	Latest *Version
}

// maxLead is the longest lead a ticker takes (--lead, dispatch.MaxLead): a tick is emitted at most this long
// before its slot (plus jitter) is due.
const maxLead = 5 * time.Minute

// ReadSchedule is ReadSince of one schedule: what a page about it shows, at a cost bounded by that schedule's
// records, not by the namespace's.
//
//   - The schedules topic is read whole (it holds one live record per schedule), and only the records keyed by
//     s.Schedule are folded; or, with s.Latest, not at all.
//   - Of each pool's work topic (see Scope.Pool), only the partitions that can hold the schedule's ticks are
//     fetched: tick.Partition of each shard, as the leader, a trigger and a backfill all place them; of its
//     results topic, the same partitions modulo its partition count, where the workers write their ledger. The
//     Log's partition counts are the topics' real ones, and the partitions not read are covered from the read
//     on (no slot of the schedule can be in them).
//   - Of the records of those partitions, the schedule's are folded. The work records of other schedules are
//     decoded but not kept: only the first and last emission of each leader term among them is, so that
//     Compare tells a slot passed over after an outage from one a running term missed (in the partitions read:
//     with one ticker leader that is exact; with several, their terms overlap and it is close). Their ledger
//     entries are skipped by key, or by a byte search of batch records; claims are folded, as they decide which
//     starts are valid.
//   - With s.MaxPerPartition, each partition starts at max(its offset at Since, its end - MaxPerPartition). A
//     partition so cut is covered from its first record read (a work partition a ticker's longest lead later:
//     the ticks of the slots due by then may have been emitted before the cut), so Compare calls no earlier
//     slot missing; Log.Truncated says older records were not read.
//
// Undecodable and ForgedCancels count the schedule's records only.
func ReadSchedule(ctx context.Context, opts []kgo.Opt, names kafka.Names, s Scope) (*Log, error) {
	return readSchedule(ctx, opts, names, s, newReader())
}

// readSchedule is ReadSchedule folding into r (a test watches the records it is given).
func readSchedule(ctx context.Context, opts []kgo.Opt, names kafka.Names, s Scope, r *reader) (*Log, error) {
	switch {
	case s.Schedule == "":
		return nil, errors.New("reading a schedule: no schedule named")
	case s.MaxPerPartition < 0:
		return nil, fmt.Errorf("reading schedule %s: MaxPerPartition %d: want 0 (no bound) or more", s.Schedule, s.MaxPerPartition)
	}
	name := s.Schedule
	r.only, r.prefix = func(s string) bool { return s == name }, name+"@"
	if v := s.Latest; v != nil {
		r.l.AddVersion(name, v.Offset, v.At, v.Schedule)
		r.l.scheduleGaps = []gap{{0, v.Offset}} // the versions before it are not read
	} else {
		parts, err := readTopic(ctx, opts, names.Schedules, func(rec *kgo.Record) {
			r.seen(rec)
			if string(rec.Key) == name {
				r.schedule(rec)
			}
		}, span{})
		if err != nil {
			return nil, err
		}
		if p := parts[0]; p != nil {
			r.l.scheduleGaps = p.gaps // of every key: a version of this one may be in any gap
		}
	}
	if err := r.readCalendars(ctx, opts, names); err != nil {
		return nil, err
	}
	shards, pools := s.reach(names, r.l.Definitions[name])
	limits := limitsOf(r.l.Definitions[name])
	for _, pool := range pools {
		n := names.Pool(pool)
		r.pool = n.PoolName
		var work map[int32]bool
		parts, err := readTopic(ctx, opts, n.Work, r.scopedWork, span{since: s.Since, max: s.MaxPerPartition, only: func(n int) map[int32]bool {
			work = map[int32]bool{}
			for _, p := range tick.SchedulePartitions(name, shards, limits, n) {
				work[p] = true
			}
			return work
		}})
		if err != nil {
			return nil, err
		}
		c := &Coverage{WorkPartitions: len(parts), WorkFrom: r.workCoverage(parts)}
		// A work partition p's ledger is in results partition p (modulo the count: package ledger).
		if parts, err = readTopic(ctx, opts, n.Results, r.scopedResult, span{since: s.Since, max: s.MaxPerPartition, only: func(n int) map[int32]bool {
			res := map[int32]bool{}
			for p := range work {
				res[p%int32(max(n, 1))] = true
			}
			return res
		}}); err != nil {
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

// reach returns the shard count to read (the largest of s.Shards and the retained versions') and the pools:
// s.Pool and those the retained versions name, sorted.
func (s Scope) reach(names kafka.Names, d *Definition) (int, []string) {
	shards := max(s.Shards, 1)
	pools := []string{names.Pool(s.Pool).PoolName}
	if d != nil {
		for _, v := range d.Versions {
			if v.Schedule == nil {
				continue
			}
			shards = max(shards, v.Schedule.Spec().Shards)
			if p := names.Pool(v.Schedule.Pool()).PoolName; !slices.Contains(pools, p) {
				pools = append(pools, p)
			}
		}
	}
	slices.Sort(pools)
	return shards, pools
}

// limitsOf returns the limits the retained versions of d name (their ticks are on those limits' partitions).
func limitsOf(d *Definition) []string {
	var out []string
	if d == nil {
		return nil
	}
	for _, v := range d.Versions {
		if v.Schedule != nil && v.Schedule.Limit() != "" && !slices.Contains(out, v.Schedule.Limit()) {
			out = append(out, v.Schedule.Limit())
		}
	}
	return out
}

// seen is called with every record a read folds or skips (a test's hook).
func (r *reader) seen(rec *kgo.Record) {
	if r.onRecord != nil {
		r.onRecord(rec)
	}
}

// scopedWork applies a work-topic record of the schedules r keeps (r.only); of another schedule's tick it keeps
// the leader term's first and last emission only.
func (r *reader) scopedWork(rec *kgo.Record) {
	r.seen(rec)
	if rec.Value == nil {
		return
	}
	if cancel.Is(rec) {
		name, named := bytes.CutPrefix(rec.Key, []byte(tick.CancelKeyPrefix))
		if named && r.only(string(name)) || !named && r.onlyID(string(rec.Key)) {
			r.work(rec) // counted when forged (a key that names no schedule: in one of Stream's passes)
		}
		return
	}
	tk, err := tick.Decode(rec.Value)
	switch {
	case err != nil:
		r.undecodable(rec.Key)
	case r.only(tk.Schedule): // whatever its key (a tick's key is its ID, but a worker reads the value)
		r.emission(rec, tk)
	case !tk.Trigger && tk.Backfill == "" && !IsTrigger(tk.ID) && !IsBackfill(tk.ID): // a leader's
		at := tk.EmittedAt
		if at.IsZero() {
			at = rec.Timestamp
		}
		r.l.term(tk.LeaderEpoch, at.UTC())
	}
}

// scopedResult applies a results-topic record that may hold an entry of the ticks r keeps, or a claim; others
// are skipped undecoded. A tick's entry is keyed by its ID; a batch record holds the IDs of its entries in its
// value, as does an outcome keyed otherwise (the coordinates of a work record without a key): with r.prefix
// (one schedule), a value without it is skipped; otherwise it is decoded, and entry keeps the entries of the
// ticks r keeps.
func (r *reader) scopedResult(rec *kgo.Record) {
	r.seen(rec)
	switch {
	case ledger.IsClaimKey(rec.Key):
		r.result(rec)
	case r.prefix != "":
		if bytes.HasPrefix(rec.Key, []byte(r.prefix)) || (rec.Value != nil && bytes.Contains(rec.Value, []byte(r.prefix))) {
			r.result(rec) // entry drops the entries of other ticks
		}
	case ledger.IsBatchKey(rec.Key) || ledger.IsBreachKey(rec.Key) || !bytes.Contains(rec.Key, []byte("@")):
		r.result(rec)
	case r.onlyID(string(rec.Key)):
		r.result(rec)
	}
}

// term records an emission at at by leader term epoch of a tick that is not kept.
func (l *Log) term(epoch int64, at time.Time) {
	if l.terms == nil {
		l.terms = map[int64]termSpan{}
	}
	s, ok := l.terms[epoch]
	if !ok {
		l.terms[epoch] = termSpan{at, at}
		return
	}
	if at.Before(s.first) {
		s.first = at
	}
	if at.After(s.last) {
		s.last = at
	}
	l.terms[epoch] = s
}

// termSpan is the first and last emission of one leader term among the ticks read but not kept.
type termSpan struct{ first, last time.Time }
