// Package schedule is tickgroup's time logic: which instants a schedule fires at, when each is emitted, and what a
// leader does about the ones it missed. It is pure: no clock, no goroutines, no I/O beyond parsing a Reader.
//
// # Slots
//
// A schedule is a strictly increasing sequence of slots, whole-second instants in UTC. The slot after s is
// Next(s): slots come from the schedule, never from the clock, so a leader that wakes late (or a new leader after
// failover) computes the same slots and nothing drifts. A slot is a tick's identity (tick ID = name@slot), so
// an interval is a whole number of seconds and so is its offset.
//
//   - every: slots are the Unix epoch + offset + k*every for integer k. Real seconds, no zone, no DST: "every: 24h"
//     is 86400 s apart across a DST change; use cron with tz for "daily at 02:00 local".
//   - cron: wall-clock times in tz (default UTC) that match the expression, mapped to instants by the DST rules
//     below.
//
// Start and End clip the sequence: no slot before Start, none after End.
//
// # Due time and jitter
//
// The leader emits slot s at Due(s) = s + Jitter(s). Jitter(s) is in [0, jitter), a hash of the schedule name and
// the slot, so it spreads schedules that share a slot yet every replica computes the same instant for the same
// slot. For every-schedules jitter < every, so due times keep slot order; for cron it is at most an hour.
//
// # Catch-up
//
// Plan(base, now) takes the slots after base whose due time has passed (the candidates) and applies the policy:
// "all" (the default) emits every candidate, up to catchup_max of the latest; "latest" emits the last; "skip"
// emits the last only if it is at most SkipGrace late. Missed counts the rest. With the default, a failover or a
// short outage loses no slot, so Missed is a real loss. Plan's Next is the slot to sleep for.
//
// # Daylight saving time
//
// Cron expressions follow the classic (Vixie/ISC) cron rules in the schedule's zone:
//
//   - A wall-clock time that does not exist, because clocks jumped forward over it, runs at the jump: the
//     transition instant. All matches inside one gap collapse into that single slot. "30 2 * * *" in
//     America/New_York runs at 03:00 EDT on 2026-03-08.
//   - A wall-clock time that occurs twice, because clocks went back, runs once, at its first occurrence.
//     "30 1 * * *" in America/New_York runs at 01:30 EDT on 2026-11-01, not again at 01:30 EST.
//   - Except when every hour matches (hour field "*", "0-23", or @hourly), for example "*/15 * * * *" or
//     "0 * * * *". Such an expression is periodic within the day, so it is matched against the wall clock as it
//     actually runs: it fires in both occurrences of a repeated hour, and wall-clock times that a jump skipped
//     simply do not occur. Vixie cron treats these "wildcard" jobs the same way. Collapsing the gap for them would
//     be wrong: "5 * * * *" would fire at 03:00 and 03:05 EDT on 2026-03-08, five minutes apart, instead of once an
//     hour.
//
// Slots are strictly increasing instants under all three rules; a slot produced by the gap rule that coincides
// with a regular match (03:00 for "0,30 2-3 * * *") is one slot.
//
// Why not robfig/cron's SpecSchedule.Next: its parser is used (expressions mean what they mean in most Go
// schedulers), but its Next does not follow these rules. In America/New_York it skips "30 2 * * *" on 2026-03-08
// entirely and runs "30 1 * * *" twice on 2026-11-01 (01:30 EDT and 01:30 EST), and it searches field by field
// with time.Date, whose choice of offset for a missing or repeated wall-clock time is unspecified. Here, Next walks
// the zone's periods of constant UTC offset (time.Time.ZoneBounds) and matches wall-clock time within each, so
// every transition is handled explicitly.
//
// Day of month and day of week keep classic cron semantics: if both are restricted, a day matches when either
// does ("0 0 1 * mon" is the 1st and every Monday); if either is "*", both must match. As in the parser,
// day-of-week 7 is refused (use 0 for Sunday) and L, W and # are not supported. An expression that can never
// run ("0 0 30 2 *") is refused.
//
// Zone data is embedded (time/tzdata), so schedules mean the same in a scratch container as on a workstation.
//
// # Skipped slots
//
// A schedule's calendars (package calendar) take the slots of excluded days out of its sequence. This package
// knows no calendar: Skipping gives a copy of a schedule whose Next steps over the slots a Skip takes out, so
// that every plan (the catch-up policies count the kept slots only) and every reader of slots sees one sequence,
// still strictly increasing. Next's search is bounded (MaxSkip, MaxSkipSteps): a schedule whose every slot is
// taken out for longer has no next slot.
//
// # Moved slots
//
// Under a move policy (a business-day move) a slot runs at another instant: Moving gives a copy of a schedule
// whose sequence is its runs' instants, each run identified by one of the schedule's own slots (SlotOf). Next,
// the plans and the catch-up policies step through the instants, which strictly increase, so a leader's
// progress is the last instant it emitted; the tick of a run is still name@slot.
package schedule
