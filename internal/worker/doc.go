// Package worker is the work-topic consumer: it runs every tick the leader emitted, once per delivery, in order
// per schedule and shard, with retries, dead letters, deadlines and outcome records.
//
// # Consumption
//
// A Worker consumes <ns>.work in group <ns>.workers with read_committed isolation (a tick from a transaction a
// fenced leader aborted is never seen), manual commits and the cooperative-sticky balancer. Each assigned
// partition gets a lane: a dispatcher that starts the partition's records by key (a schedule and shard): one
// key's ticks one at a time, in offset order, so they never overlap; different keys side by side. The records
// it starts go to the worker's Config.Concurrency runners, shared by every lane, so Concurrency bounds the
// handlers running at once.
//
// Held ticks (queue.go). The leader emits ticks up to its --lead before their instant (tick.Tick.NotBefore).
// The poll loop appends every batch to its lane's queue at once, so a lane keeps reading its partition while it
// holds ticks: it starts each scheduled tick on its instant (its start recorded in the ledger Config.PreStart
// ahead), lets manual triggers run without waiting behind held ticks (only behind a running tick of their key),
// and remembers the cancellations of paused and deleted schedules (tick.Cancel), which it applies to the ticks
// it holds (outcome cancelled). The committed offset stays below the first record not finished, whatever
// finished after it. A partition is paused while its queue holds laneQueueMax records, so memory stays bounded
// with a slow key and a fast one.
//
// Per record: consult the ledger (below), decode (an undecodable record or an unknown major version goes to
// <ns>.dlq at once), check the deadline (a tick that would start after tick.Tick.Deadline is skipped and
// recorded as skipped_late), skip it when a newer tick of its key is due and its overlap policy says so (see
// hints), run the handler up to its schedule's max_attempts (else Config.MaxAttempts) times in this delivery,
// each under its schedule's timeout (else Config.Timeout; none by default), with exponential backoff and jitter
// (an error marked Permanent is not retried), dead-letter it when it never succeeded, write
// its outcome to <ns>.results (keyed by tick ID), and only once the outcome is acknowledged mark the offset
// finished. A committer commits finished offsets as soon as they exist when the worker is idle, and at most
// every 100 ms under load (what a crash leaves uncommitted is not run again: the ledger has its outcome).
//
// # Lane states
//
//	assigned ──► takeover ──► dispatching (starts each key's next due tick) ...
//	   │            │
//	   │            ├─ revoked:  stop starting records, commit what the lane finished, forget the lane; its runs
//	   │            │            go on under their leases and write their outcomes (a run belongs to its worker)
//	   │            ├─ lost:     stop starting records; nothing is committed (another member may own it
//	   │            │            already); the runs go on under their leases, as after a revocation
//	   │            └─ shutdown: stop starting, commit, leave the group at once; the runs finish within
//	   │                         Config.Grace, then are cut
//
// A cut record has no outcome and is not committed: the partition's next owner finds it released (or started)
// in the ledger and runs it again as an interrupted tick.
//
// # Start offset of a new group
//
// A partition without a committed offset starts at Config.Start, by default DefaultStart: the first tick written
// in the last ten minutes when the group first receives the partition. A fleet started all at once (tickers
// and workers together) therefore loses no tick, and a brand-new group on an old work topic does not replay the
// days of ticks the topic retains. StartLatest and StartEarliest are opt-in (worker run --start). The resolved
// start is committed at once (pinned), so a worker that crashes before finishing its first tick does not
// resolve the start again later and skip the ticks written in between. An offset that fell out of the log
// (retention) resumes at the log start.
//
// # The execution ledger
//
// Offsets alone cannot say which ticks above a partition's committed offset already ran: commits are refused
// for as long as a classic-protocol rebalance lasts (after a crash, until the dead member's session expires),
// while live workers keep running ticks. So every lane also keeps a ledger, in <ns>.results: results partition
// p is work partition p's ledger (the results topic must have at least as many partitions as the work topic),
// one ordered log of claim, started, renewed, released and outcome entries. The ledger's protocol (claim,
// confirm, lease, takeover, the fold) lives in internal/ledger: a lane holds its partition through a
// ledger.Owner, and the worker writes and reads the ledger through one ledger.Log. A lane's life:
//
//	assigned ─► takeover ─► for each record: ledger says ─┬─ outcome:  not run again; committed past
//	                                                      ├─ started:  interrupted ─► wait until surely over ─┐
//	                                                      ├─ released: interrupted ───────────────────────────┤
//	                                                      └─ nothing ─────────────────────────────────────────┤
//	                                                           ┌──────────────────────────────────────────────┘
//	                                                           ▼
//	                        write started, read it back (no foreign claim before it) ─► run handler under lease
//	                        ─► write outcome ─► once acknowledged, the offset may be committed
//
// Takeover. The lane reads the committed offset's metadata ("tickgroup-ledger/1 from=<ledger offset>
// fence=<token>", written with every commit), starts reading the ledger partition at from, writes a claim with
// token fence+1 and reads up to its own claim. It then knows every entry written before its claim, by every
// former owner, about every tick at or above the committed offset. A tick with an outcome is skipped and
// committed past; it never runs again, however long the commits were refused.
//
// Fencing by log order. Only the latest claim's writer may start ticks: a lane confirms each started entry by
// reading the ledger back up to it, and a claim of another worker before it means the lane was replaced; it
// then stops without starting the handler. A worker frozen (SIGSTOP) past its session therefore cannot start
// anything when it wakes: it reads the newer claim first. The claim tokens strictly increase; the lane's
// token is the handler's fencing token (Attempt.Fence, TICK_FENCE, the Tickgroup-Fence header) for downstream
// stores that want to refuse a zombie's writes.
//
// Leases: two runs of one tick never overlap. A running handler holds a lease (Config.Lease) that its runner
// renews, every Lease/5, by writing a renewed entry of the run and reading it back: the renewal stands when no
// other worker started the tick in between, and the lease then runs until the renewal's send time plus Lease.
// The partition's ownership does not matter: a run outlives a rebalance. A handler whose lease runs out is
// cancelled, and an exec handler's supervisor process kills its process group at the lease's end by itself,
// even when the worker is frozen; when the worker dies, the supervisor kills the group at once. A worker that
// finds a tick started and not finished elsewhere (ledger.TickState.ProofAt) waits, for that key only, until its
// last proof (start or renewal, by its writer's timestamp and never later than when it was read) plus its lease
// plus Config.MaxClockSkew, a wait that each renewal pushes out and the run's outcome or release ends. It then
// starts the tick itself (its started entry ends the old run's renewals) and, should a renewal have slipped in
// before its start, waits for that one's lease too before the handler starts (ledger.Owner.SeizedUntil).
//
// Interrupted ticks: started (or released) with no outcome. Config.OnInterrupted decides: rerun (the default)
// runs the tick again, with Attempt.N counting on from the former owners' attempts and Attempt.Interrupted set
// (TICK_INTERRUPTED=1); skip records the outcome "interrupted" and never runs it again (at most once).
//
// # Guarantees, honestly
//
//   - No tick is lost: an offset is committed only after its record has an acknowledged outcome (ok, failed,
//     skipped_late, dead_lettered or interrupted) in <ns>.results.
//   - A tick with an outcome never runs again: not after a graceful stop, a kill -9, a rebalance of any length,
//     a broker restart or a worker that wakes from SIGSTOP.
//   - Two runs of one tick never overlap (leases, above), and a re-run only follows a run that was cut off.
//   - A rebalance does not cut a run, nor does the loss of the group membership (the broker went away); a crash,
//     a freeze beyond the lease, a broker away for longer than the lease or the end of the shutdown's grace
//     period does.
//   - A start whose handler never started (written as the broker went away and never confirmed, or cut before
//     the handler's instant) is taken back by its worker with a release marked unstarted (ledger.Entry.Unstarted):
//     the tick's next start is the same attempt, not an interrupted re-run (lane.takeBack, starting.go).
//   - The ledger takes only what the log proves (ledger.Fold.Apply): entries from the owner or runner of the
//     time, about work offsets that exist, for the tick the work record holds; every refusal is counted
//     (tickgroup_worker_ledger_refused_total) and warned about. A claim of another worker while the group
//     still assigns the partition to this one is forged: the lane claims again, and what was written under it
//     is disowned (foreignClaim, ledger.Fold.Disown). What the ledger cannot tell: an entry that copies the
//     current owner's worker ID and token (ACLs on <ns>.results are the defence).
//   - Cancels (tick.Cancel) count only when written in a transaction, as the leader writes them
//     (cancel.Genuine); any other is dead-lettered as forged_cancel.
//   - What still can run twice (with rerun): a tick whose handler had its effect and whose worker died or was
//     cut off before the outcome was acknowledged. The re-run carries TICK_INTERRUPTED=1, a higher TICK_ATTEMPT
//     and a higher TICK_FENCE; the tick ID is the idempotency key. With skip such a tick runs at most once.
//   - Exactly-once for forward mode: the forwarded record, the outcome and the consumed offsets are one Kafka
//     transaction (kgo.GroupTransactSession), so a read_committed reader of the forward topic sees each tick
//     once. Each forwarding process has its own transactional ID; KIP-447 fencing through the group generation
//     stops a zombie. Forward mode keeps no started entries: it has no external effect to interrupt. Its
//     engine is internal/forward's (forward.Engine), with the worker as its host (forward.go): the same decision
//     before a run (decide), outcome records and dead letters as the lanes.
//   - Dead letters are written before the outcome, so a crash in between can dead-letter a record twice.
package worker
