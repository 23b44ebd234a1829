// Package calendar is tickgroup's holiday calendars: named sets of excluded days that many schedules share, and
// what a schedule's policy does with a slot that falls on one. It is pure, like package schedule: no clock, no
// goroutines, no I/O beyond parsing a Reader.
//
// # Calendars
//
// A Calendar (compiled from a Spec) is a name, a zone (an IANA name, UTC by default) and the days it excludes:
// explicit dates, inclusive date ranges, and days of the week. A day is excluded when it is one of the dates,
// lies in a range, or falls on one of the weekdays. The stored form is JSON, and people write YAML, with the
// field names name, tz, dates, ranges (a list of {from, to}) and weekdays:
//
//	name: us-federal
//	tz: America/New_York
//	weekdays: [sat, sun]
//	dates: [2027-01-01, 2027-01-18, 2027-02-15]
//	ranges: [{from: 2027-12-24, to: 2027-12-31}]
//
// Validation refuses a bad name (the schedules' naming rule), an unknown zone, a malformed date, a range whose
// from is after its to, an unknown weekday and a calendar without working days (below), each as a FieldError
// naming the field. Duplicates are accepted and dropped: Calendar.Spec, and so Encode, give the normalized
// form, sorted, so that equal calendars are equal records.
//
// # Which date a calendar tests
//
// A calendar tests the date of the slot's instant in the calendar's own zone, whatever the schedule's zone. A
// schedule at 20:00 in America/New_York that names a calendar in Europe/Berlin runs at 01:00 or 02:00 of the
// next day in Berlin, so the calendar tests that next day: Good Friday, 2027-03-26, in a German calendar
// excludes the New York slot of Thursday evening, 2027-03-25 20:00 EDT (01:00 on Friday in Berlin), while
// Friday evening's slot tests Saturday. This is what "a German holiday" means for a job that touches German
// systems at night; a calendar meant for the schedule's own
// days should be in the schedule's zone. Each calendar of a schedule tests its own zone's date, and a slot is
// excluded when any of them excludes it.
//
// # Policies
//
// A schedule's OnExcluded policy says what happens to a slot that a calendar excludes:
//
//   - skip (the default): no run.
//   - next_business_day: the slot runs at the same wall-clock time of day, in the schedule's zone, on the first
//     later date on which no calendar excludes the instant of that time. previous_business_day: on the last
//     earlier such date.
//
// The wall-clock time is the slot's own, read in the schedule's zone. A business day is tested exactly as a
// slot is: the candidate instant's date in each calendar's zone. The moved run is therefore never on a day that
// a calendar excludes, and schedule and calendars in different zones need no other rule.
//
// When the target date skips or repeats that wall-clock time, the move follows the schedule package's cron DST
// rules: a time that clocks jumped over runs at the jump, the transition instant (a slot moved to 02:30 on
// 2027-03-14 in America/New_York runs at 03:00 EDT); a time that occurs twice runs at its first occurrence
// (01:30 on 2027-11-07 is 01:30 EDT). A slot that the gap rule itself placed at a transition (cron 02:30 run
// at 03:00 EDT on the day of the jump) keeps 03:00 when it moves: its instant is all that identifies it.
//
// # Slot identity and the merge rule
//
// A moved slot keeps its identity: its tick is still name@slot, only its run instant changes (Outcome.At,
// Run.At). That keeps tick IDs unique and stable, and a run's identity says which scheduled occurrence it is.
//
// Moving makes collisions. Under next_business_day a daily schedule's Saturday and Sunday slots both move to
// Monday, where the schedule has its own slot at the same time; a weekly schedule on Saturdays and Sundays
// moves both to the same Monday instant. Two readings are possible: every slot runs (Monday runs three times),
// or the business day runs once. tickgroup takes the second, because that is what the policies are for:
//
//   - Quartz's calendars and Temporal's exclude calendars only ever skip; a job that must run "on the business
//     day" has to be written as a schedule of business days. The schedulers that do move, enterprise ones with
//     holiday calendars, move days, not occurrences: Control-M's exception policy orders the job on the next (or
//     previous) confirmed day, and CA 7's ROLL refuses to roll onto a day the same schedule already runs on
//     ("DAY IS ALREADY SCHEDULED BY THIS ID"): one run per day.
//   - The typical uses are "the 1st of the month, or the next business day" and "every business day": a run
//     does its period's work. Three runs at the same Monday instant would do Monday's work three times, at
//     once; there is no Saturday work for the extra runs to do, Saturday being no business day.
//
// The rule, for the days and instants of the schedule's zone:
//
//  1. Each slot is resolved alone (Exclusion.Resolve): it runs in place, is skipped, or is moved to At.
//  2. A moved slot whose At falls on a day on which the schedule has a slot that runs in place is merged into
//     that day's run: the one at the same instant if there is one, else the day's first. Merged slots do not
//     run; they are "excluded", not missed.
//  3. The other moved slots run at their At, once per instant: of several landing on one instant, the earliest
//     original slot is the run's identity and the others merge into it.
//
// So a daily schedule under either move policy runs exactly once on each business day, each run its own slot,
// and a weekly schedule on excluded days runs once on the business day it moved to, as the earliest slot that
// moved there. The rule depends only on the schedule's slots and the calendars, so every replica, and a new
// leader after failover, derives the same runs: Exclusion.Runs lists them, Upcoming the next few.
//
// What a leader does with them: one tick per Run, named by Run.Slot and due at Run.At (plus the jitter of that
// instant); skipped and merged slots are counted as excluded, not missed. Runs are in the order of At, and
// their identities need not be (under previous_business_day a run's slot is after its At, so it can be after
// the slot of the run that follows), so a leader's progress is the At of the last run it emitted, not a slot.
//
// Apply turns a schedule and its calendars into the sequence the leader plans as any other: under Skip, the
// schedule of its included slots (schedule.Schedule.Skipping, skip.go); under a move, the schedule of its runs'
// instants, each named by its slot (schedule.Schedule.Moving and SlotOf, move.go). Either way the leader's
// state, the last emitted instant, only grows, and the leader, next runs, a backfill and the audit all step
// through that one sequence.
//
// # Limits
//
// A calendar record is data that anybody with write access can make, and every leader replica compiles it, so
// its cost is bounded:
//
//   - MaxEntries: at most 10,000 dates, ranges and weekdays. Dates and ranges are kept as one sorted list of
//     disjoint spans, so a range costs what a date does, and a test is a binary search.
//   - No working day: a calendar may not exclude all seven weekdays, nor more than MaxExcludedRun (366)
//     consecutive days counting dates, ranges and weekdays together. So every day a calendar excludes has a
//     working day within 366 days before and after it, and a move across any one calendar ends. (This also
//     bounds a range: a range longer than 366 days is refused whatever its weekdays.)
//   - MaxMoveDays: a move searches at most 400 days. Only several calendars that together exclude every day
//     for that long can exhaust it; the slot is then skipped and Resolve returns ErrNoBusinessDay.
//   - MaxRecordBytes: a stored record or YAML file of at most 1 MiB, refused before it is parsed.
//   - ImportICS: a file of at most MaxICSBytes (4 MiB) and MaxICSEvents (2,000) events, of which at most
//     MaxICSRecurring (200) recur; recurrences are expanded over at most ICSHorizonYears (10) years, to at most
//     MaxEntries entries. A hostile file costs at most a few seconds of one core.
//
// # iCalendar import
//
// ImportICS turns the VEVENTs of an .ics file (a public holiday feed, a company closure calendar) into a Spec:
// all-day events exclude their dates (DTEND is exclusive), timed events the dates they touch in the calendar's
// zone, and recurring events (RRULE, RDATE, EXDATE, overridden instances) every occurrence within the horizon.
// Cancelled events exclude nothing. The file is parsed with github.com/arran4/golang-ical and recurrences are
// expanded with github.com/teambition/rrule-go, in wall-clock time as RFC 5545 says.
package calendar
