// Package backfill runs a schedule's past slots again, on request: `ticker schedule backfill` and
// Schedules.Backfill. It holds the records and their validation (backfill.go), the fold of the topics
// (fold.go), the reprocess decisions (decide.go), and the Runner that a leader term runs (runner.go, requests.go,
// outcomes.go, step.go).
//
// # Records
//
// A backfill is three kinds of record, on two compacted topics of one partition each (each key keeps its
// newest record):
//
//   - the request, on <ns>.backfills keyed by the backfill's ID, written by the client: the schedule, the range,
//     and the exact list of slots to run (the client decides them, --reprocess included, so that a dry run
//     lists exactly what runs);
//   - its cancellation, on <ns>.backfills keyed ID.cancel, written by the client: the leader emits no more of
//     its slots;
//   - its progress, on <ns>.backfills.progress keyed by the ID, written only by the leader of the schedule, in
//     the same transaction as the ticks it emits: how many of the slots are emitted, which of those have no
//     outcome yet, and whether the backfill has ended. Only the ticker role may write that topic (operators
//     may write requests, so a progress record on their topic could be forged, and compaction would then drop
//     the genuine one), and a progress record not written in a transaction is ignored too.
//
// # Running: the state model
//
// A backfill's progress (Progress) is Next, the index of its first slot not emitted, Running, the indices
// emitted whose ticks have not all an outcome yet, the shards and pool it was emitted with, and Ended once it
// ends (an End constant). In the leader's memory a backfill it works through is a run: the same figures, plus
// the IDs of the ticks without an outcome.
//
//	request read ──► waiting (its schedule not read yet, for deletedAfter; its pool not ready)
//	     │                 │
//	     ▼                 ▼
//	   begun ──► emitting ◄──► full (MaxRunning slots without an outcome) ──► ended (done, cancelled,
//	                                                                             refused, schedule deleted)
//
// The leader term's Runner is driven by the term's loop only: the records of the requests topic, the outcomes
// its followers read, and the term's timer make it Step. A step writes, in one transaction of the term's
// producer: each backfill's next ticks (as many slots as keep MaxRunning without an outcome, at most
// maxStepTicks ticks a transaction), the progress of each backfill whose figures changed, the deletion of those
// ended more than keepEnded ago, and (leader 0) the dead-lettering of invalid requests. So the progress commits
// exactly when the ticks it counts do; the in-memory runs of a step whose transaction fails are never used, as
// the failure ends the term.
//
// A new leader reads the committed progress after fencing every earlier one, and only once no open
// transaction holds the progress topic back, so it goes on from exactly the slot the last committed transaction
// reached: no slot of a backfill is emitted twice or skipped, whatever happens to the leaders. Its running
// slots' outcomes are read again from a little before the oldest of them was emitted. The leader keeps at most
// MaxRunning slots emitted without an outcome, reading the outcomes the workers write to the results topic; a
// tick whose outcome is lost to the results topic's retention holds its place until the backfill is cancelled.
package backfill
