// Package audit answers "did every slot run exactly once?" from Kafka alone: it reads a namespace's schedules,
// work and results topics (and its calendars, when a schedule excludes one) (Read), derives from each schedule's retained definitions the slots that should exist
// in a time range, and compares them with what was emitted and executed (Compare). `ticker audit` and
// `ticker history` print its Report.
//
// # What is read
//
//   - <ns>.schedules, every retained record: each is a version of one schedule (its offset is the version, its
//     LogAppendTime timestamp the change time; a tombstone is a deletion). The topic is compacted, so only the
//     latest version of a schedule may remain; Read notices gaps in the offsets and ticks that name a version
//     that is gone, and the report then says the history is partial.
//   - <ns>.work, read_committed, every retained tick record: one Emission per record, grouped by tick ID. A tick
//     ID emitted twice (two committed records) is doubled. Compaction (the topic is compact,delete, keyed by
//     tick ID) can merge a doubled tick back into one record, so doubling is only seen while both are retained.
//   - <ns>.results, read_committed: the execution ledger (package ledger). Claims decide which started entries
//     are valid (a start written by a worker that had lost the partition never ran); started, released and
//     outcome entries are kept per tick ID in log order. A tombstone (nil value) for a tick ID deletes that key's
//     earlier entries in its partition, as compaction will.
//
// ReadSince reads the work and results topics from an instant on. ReadSchedule reads what one schedule's page
// shows: only the partitions its shards can use (a tick's partition is a function of its schedule and shard,
// package tick), only its records kept, and at most a bound of records per partition, the newest; a partition
// the bound cuts is covered only from its first record read, so no earlier slot is called missing.
//
// # Expected slots
//
// A schedule's versions partition time: version i is in force from its change time T(i) to T(i+1). Its slots are
// Next(T(i)), Next of that, ... (the leader never catches up slots from before a change), up to the second of
// T(i+1); a paused or deleted version has none. Two kinds of slot are optional, counted when emitted and not
// missing when absent: those due within ChangeSlack of a change (the leader learns of a change some hundreds of
// milliseconds after it), and those after a change but not after the previous version's next slot (a running
// leader keeps that slot as its base, a new term starts from the change time). Each expected slot is expected
// once per shard of the version in force (the unit of every count is a tick: slot x shard).
//
// # Calendars
//
// A version that excludes calendars (on_excluded skip) expects only the slots its calendars leave. The calendars
// topic is read whole when a retained version excludes one, each record a version of its calendar; a slot is
// decided by the calendar versions in force from its due time less the lead to its instant: excluded when
// they all exclude it (Counts.Excluded: never missing, unexpected if emitted anyway), optional when they
// disagree or a calendar it names did not exist, expected otherwise (calendars.go). Before a calendar's oldest
// retained record (compaction), the calendar is taken as that record defines it, and the report says so.
//
// # Missing, passed over, pending
//
// An expected tick that was never emitted is missing once its due time is Grace in the past (before that it is
// pending). One that was emitted but has no outcome after Grace is missing too. A slot is passed over, not
// missing, when the schedule's catch-up policy allowed it: no leader was running when it fell due, seen in the
// log as "the first emission of any schedule at or after the slot's due time is the first emission of a new
// leader term (producer epoch), and that term's first emission of this schedule is a later slot"; under catch-up
// all it must also lie beyond catchup_max of the slots due when that term started. A slot passed over inside one
// leader term (a leader stalled for longer than a period) is reported as missing.
//
// # Re-runs and interruptions
//
// A tick re-ran when the ledger shows more than one started attempt, more than one run or outcome, or an outcome
// whose attempt count is above one. It was interrupted when an attempt was released, an entry is marked
// interrupted, its outcome is "interrupted", or it started and has no outcome after Grace.
//
// A re-run is of one of three classes (runs.go), from its runs in attempt order: a run is a started attempt, or
// an outcome or release whose start is gone. Each run after the first is
//
//   - marked: its started entry (or, with the start gone, its outcome or release) carries the interrupted mark:
//     the handler was told (Tick.Interrupted, TICK_INTERRUPTED=1);
//   - a retry: the run before it ended with a release marked retry, or was the same worker's and was neither
//     released nor finished (the worker's next attempt after a failure), or the run before it is not in the log;
//   - unmarked: otherwise, after a run that may have had its effects (an outcome, ok or other, or a cut).
//
// A tick ran twice (an exactly-once violation, like doubled; it fails the audit) when a later run is unmarked; it
// is a marked re-run when a later run is marked and none is unmarked, so two ok outcomes are a marked re-run when
// the later run was marked (a worker cut off from the broker whose handler still finished, and the run that took
// over); otherwise it was retried. Marked re-runs and retries fail the audit only with Options.Strict.
package audit
