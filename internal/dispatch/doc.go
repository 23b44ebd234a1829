// Package dispatch is the leader's loop: it turns schedules into tick records, exactly once per slot.
//
// A term (see package leader) runs Lead:
//
//  1. A new producer with the transactional ID shared by every replica. ProducerID (InitProducerID) bumps the
//     epoch: every earlier transaction under that ID is now committed or aborted, and every earlier producer is
//     fenced for good. This is the optimistic concurrency of "one of five hosts scans a table every 30 s, and
//     a conditional write on a last-scan-time item decides which": the epoch is the version, InitProducerID
//     the conditional write.
//  2. Read the ticker topic (compacted: schedule name -> last emitted slot) from its start to its last stable
//     offset, read_committed. This is that last-scan-time item. A standby keeps it warm while it waits
//     (Dispatcher.Follow): its new term then reads only the records written after the ones it followed, up to
//     the same last stable offset, and ends with the same state (see leaderstate.Follower for why).
//  3. A timer heap over all schedules, keyed by each schedule's next due time (slot + jitter). One goroutine and
//     one timer, whatever the number of schedules.
//  4. Config.Lead before each due instant: every due schedule's slots (the late ones after its catch-up policy,
//     and every one due within the lead) become tick records on the work topic and one state record each on the
//     ticker topic, all in one transaction. Many schedules due together share a transaction (up to
//     Config.MaxBatch schedules). Each tick carries its due instant (tick.NotBefore); workers hold it until then,
//     so a failover shorter than the lead delays no slot.
//  5. Any error of the producer, a fencing error above all, ends the term: the producer is closed and Lead
//     returns. It never re-initialises the producer itself: a zombie that did so would fence the rightful
//     leader. Leadership comes back only through a new assignment of partition 0.
//  6. A transaction (or the fencing) left unconfirmed for Config.StallTimeout (half the lead, at least 5 s) ends
//     the term too (ErrStalled, stall.go): a leader that keeps partition 0 while it cannot commit is silent, and
//     its healthy group membership keeps every other replica from leading. An idle term has nothing to confirm
//     and is never stalled.
//
// Why emission is exactly once: a tick and its schedule's state record commit atomically; a leader reads the
// state only after fencing everyone before it, and nobody else can commit under the ID until someone fences
// it in turn. A slot is therefore committed at most once, and (with catch-up `all`) at least once. Slots are
// derived from the schedule and the stored last slot (the slot after s is Next(s)), never from the clock: a
// leader's clock decides only when a slot is emitted, so clock skew between hosts can make a tick early or
// late, never double.
//
// Changes against emitted ticks. Per schedule name, slots are emitted in increasing order whatever happens to
// the schedule (see planner): a change applies from the first slot after those emitted already; a deleted
// schedule's state stays until its emitted slots are past, so a schedule created again under the name continues
// after them. A pause or a deletion with slots ahead writes a cancel record (tick.Cancel) to every work
// partition, in a transaction of the term, so that workers do not start the ticks emitted for slots after it
// (`ticker schedule` writes one too, right after the change). Cancels only ever take ticks away.
//
// Calendars. A schedule that excludes calendars has as slots its own slots that no calendar excludes (skip, the
// one policy this build honours): the planner plans that sequence like any other, so a slot's state stays its
// last emitted slot and the argument above holds unchanged. A calendar change applies from the first slot not
// emitted yet; a schedule whose calendar is not read yet waits; a new term reads the calendars to their end
// before it plans (calendars.go).
//
// Backfills. The term also runs a backfill.Runner over the schedules it owns: the term's loop hands it the
// records and outcomes it reads and makes it step, and it commits through the term's producer (backfillTerm), so
// a backfill's ticks and progress are fenced with the term.
package dispatch
