// Package worker is the work-topic consumer: it runs every tick the leader emitted, once per delivery, in order
// per partition, with retries, dead letters, deadlines and outcome records.
//
// # Consumption
//
// A Worker consumes <ns>.work in group <ns>.workers with read_committed isolation (a tick from a transaction a
// fenced leader aborted is never seen), manual commits and the cooperative-sticky balancer. Each assigned
// partition gets a lane: a goroutine that runs the partition's records one after the other, so the ticks of one
// schedule and shard (which share a partition) never overlap. Config.Concurrency bounds how many lanes run a
// handler at once. The poll loop hands each partition's batch to its lane and pauses the partition until the lane
// is done with it, so memory stays bounded by one batch per partition.
//
// Per record: decode (an undecodable record or an unknown major version goes to <ns>.dlq at once), check the
// deadline (a tick that would start after tick.Tick.Deadline is skipped and recorded as skipped_late), run the
// handler up to Config.MaxAttempts times with exponential backoff and jitter (an error marked Permanent is not
// retried), dead-letter it when it never succeeded, write its outcome to <ns>.results (keyed by tick ID), and
// only once the outcome is acknowledged mark the offset finished. A committer commits finished offsets as soon
// as they exist (commits coalesce under load).
//
// # Lane states
//
//	assigned ──► running ──(batch done)──► idle (partition resumed) ──► running ...
//	   │            │
//	   │            ├─ revoked: cancel the in-flight handler (exec: SIGTERM/SIGKILL to its process group), wait,
//	   │            │           commit what the lane finished, forget the lane; nothing is committed later
//	   │            ├─ lost:    cancel, wait, forget; nothing is committed (another member may own it already)
//	   │            └─ shutdown: finish the current record (all its attempts) within Config.Grace, then cancel;
//	   │                        write outcomes, commit, leave the group
//
// A cancelled record has no outcome and is not committed: the partition's next owner runs it again.
//
// # Start offset of a new group
//
// A partition without a committed offset starts at Config.Start, by default StartLatest: the partition's last
// stable offset when the group first receives it. A brand-new group therefore does not replay the days of ticks
// the work topic retains (running a week of old jobs by accident is worse than missing the ticks emitted before
// the first worker existed). Start workers before or together with the tickers; to pick up recent ticks use
// StartAgo (worker run --start 10m) or StartEarliest. The resolved start is committed at once (pinned), so a
// worker that crashes before finishing its first tick does not resolve "latest" again later and skip the ticks
// written in between. An offset that fell out of the log (retention) resumes at the log start.
//
// # Guarantees, honestly
//
//   - Every committed tick has run to an outcome (ok, failed, skipped_late or dead_lettered) and that outcome is
//     in <ns>.results. No tick is lost: an offset is committed only after its record is finished.
//   - At-least-once for handlers with external effects (exec, http): a worker that crashes after a handler's
//     effect and before the commit, or a partition revoked mid-run, means the tick runs again elsewhere. Handlers
//     should use the tick ID as an idempotency key (the http handler sends it as Idempotency-Key).
//   - Exactly-once for forward mode: the forwarded record, the outcome and the consumed offsets are one Kafka
//     transaction (kgo.GroupTransactSession), so a read_committed reader of the forward topic sees each tick
//     once. Each forwarding process has its own transactional ID; KIP-447 fencing through the group generation
//     stops a zombie.
//   - Attempts are counted within one delivery: TICK_ATTEMPT (and the attempt argument of Handle) starts at 1
//     each time a worker receives the tick. Offsets alone cannot tell a worker that a previous owner already
//     started the tick, so after a crash or a revocation a tick can run again with attempt 1. Such re-executions
//     are limited to ticks that were in flight (started, no outcome committed) at the crash. Outcome records make
//     them visible: a tick with two outcome records, or an execution without one, ran more than once.
//   - Dead letters are written before the commit, so a crash in between can dead-letter a record twice.
package worker
