#!/usr/bin/env python3
"""An independent oracle for package internal/calendar.

For 2027, it computes what holiday calendars do to a few schedules: every slot's outcome under each policy
(skip, next_business_day, previous_business_day) and the resulting runs under the merge rule of
internal/calendar/doc.go. It is written from that documented rule, not from the Go code: the calendars come
from the `holidays` package, the slots from `dateutil.rrule` (or, for a schedule whose every hour matches, from
the wall clock as it runs), and time zones from `zoneinfo` with the `tzdata` package.

The Go test (internal/calendar/oracle_test.go) builds the same calendars from the dates written here and checks
every slot and every run; it needs no Python, since the output is committed:

    python3 -m venv /tmp/oracle-venv
    /tmp/oracle-venv/bin/pip install -r scripts/calendar-oracle/requirements.txt
    /tmp/oracle-venv/bin/python scripts/calendar-oracle/oracle.py > internal/calendar/testdata/oracle-2027.json
"""

import bisect
import collections
import datetime as dt
import json
import platform
import sys
import zoneinfo
from importlib import metadata

import holidays
from dateutil import rrule

# Zones from the tzdata package only, not the host's: the output must not depend on the machine.
zoneinfo.reset_tzpath(to=[])

UTC = dt.timezone.utc
YEARS = [2026, 2027, 2028]  # the calendars cover the year and its neighbours, for moves across New Year
SLOTS_FROM = dt.datetime(2026, 10, 1)  # slots are generated well around 2027, so that every move into or out
SLOTS_TO = dt.datetime(2028, 4, 1)  # of the year, and every merge, is seen
MAX_MOVE_DAYS = 400
POLICIES = ["skip", "next_business_day", "previous_business_day"]


class Calendar:
    """Days excluded in a zone: explicit dates plus days of the week."""

    def __init__(self, name, tz, dates, weekdays):
        self.name, self.tz = name, tz
        self.zone = zoneinfo.ZoneInfo(tz)
        self.dates = set(dates)
        self.weekdays = set(weekdays)  # Python's numbering: Monday is 0

    def excludes(self, instant):
        """Whether the calendar excludes the date of instant (aware) in the calendar's zone."""
        day = instant.astimezone(self.zone).date()
        return day in self.dates or day.weekday() in self.weekdays

    def to_json(self):
        names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        return {
            "name": self.name,
            "tz": self.tz,
            "weekdays": [names[d] for d in sorted(self.weekdays)],
            "dates": sorted(d.isoformat() for d in self.dates),
        }


def localize(naive, zone):
    """The instant of a wall-clock time in zone, by the cron DST rules of package schedule: a time that a jump
    forward skipped is the jump itself (the transition instant), a time that occurs twice its first occurrence."""
    first = naive.replace(tzinfo=zone, fold=0)  # PEP 495: fold=0 is the earlier of two occurrences
    if first.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == naive:
        return first.astimezone(UTC)
    # In a gap the two folds use the offsets before and after the jump; the jump lies between their instants.
    a = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
    b = naive.replace(tzinfo=zone, fold=1).astimezone(UTC)
    lo, hi = min(a, b), max(a, b)
    after = hi.astimezone(zone).utcoffset()
    while hi - lo > dt.timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        mid = mid.replace(microsecond=0)
        if mid.astimezone(zone).utcoffset() == after:
            hi = mid
        else:
            lo = mid
    return hi


class Schedule:
    def __init__(self, name, cron, tz, calendars, slots):
        self.name, self.cron, self.tz, self.calendars = name, cron, tz, calendars
        self.zone = zoneinfo.ZoneInfo(tz)
        self.slots = sorted(set(slots))

    def excluded_by(self, instant):
        for c in self.calendars:
            if c.excludes(instant):
                return c.name
        return ""

    def resolve(self, slot, policy):
        """(action, run instant or None, excluding calendar) of one slot taken alone."""
        by = self.excluded_by(slot)
        if not by:
            return "runs", slot, ""
        if policy == "skip":
            return "skipped", None, by
        step = 1 if policy == "next_business_day" else -1
        local = slot.astimezone(self.zone)
        wall, day = local.time(), local.date()  # the slot's own wall-clock time, in the schedule's zone
        for k in range(1, MAX_MOVE_DAYS + 1):
            candidate = localize(dt.datetime.combine(day + dt.timedelta(days=step * k), wall), self.zone)
            if not self.excluded_by(candidate):
                return "moved", candidate, by
        raise RuntimeError(f"{self.name}: no business day for {slot}")

    def runs(self, policy, after, until):
        """The runs with after < at <= until, by the merge rule of doc.go."""
        own = collections.defaultdict(list)  # local date -> runs in place, in order
        moved = []
        for s in self.slots:
            action, at, _ = self.resolve(s, policy)
            if action == "runs":
                own[s.astimezone(self.zone).date()].append({"slot": s, "at": s, "merged": []})
            elif action == "moved":
                moved.append((s, at))
        runs = [r for day in own.values() for r in day]
        at_instant = {}
        for s, at in moved:  # in slot order
            day = own.get(at.astimezone(self.zone).date())
            if day:
                same = [r for r in day if r["at"] == at]
                (same[0] if same else day[0])["merged"].append(s)
            elif at in at_instant:
                at_instant[at]["merged"].append(s)
            else:
                at_instant[at] = {"slot": s, "at": at, "merged": []}
                runs.append(at_instant[at])
        runs = [r for r in runs if after < r["at"] <= until]
        runs.sort(key=lambda r: r["at"])
        return runs


def rrule_slots(zone, **kw):
    """Slots of a fixed-hour cron expression: dateutil's wall-clock occurrences, localized."""
    return [localize(w, zone) for w in rrule.rrule(dtstart=SLOTS_FROM, until=SLOTS_TO, **kw)]


def wall_clock_slots(zone, minute, weekday):
    """Slots of a cron expression whose every hour matches ("0 * * * 0"): every instant whose wall clock, as it
    actually runs, shows the minute on the weekday; both occurrences of a repeated hour, none in a gap."""
    out = []
    t = SLOTS_FROM.replace(tzinfo=UTC)
    end = SLOTS_TO.replace(tzinfo=UTC)
    while t < end:
        local = t.astimezone(zone)
        if local.minute == minute and local.second == 0 and local.weekday() == weekday:
            out.append(t)
        t += dt.timedelta(minutes=15)
    return out


def iso(t):
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def main():
    us = Calendar("us-federal", "America/New_York", holidays.US(years=YEARS).keys(), {5, 6})
    de = Calendar("de-national", "Europe/Berlin", holidays.Germany(years=YEARS).keys(), {5, 6})
    ny, berlin = zoneinfo.ZoneInfo("America/New_York"), zoneinfo.ZoneInfo("Europe/Berlin")
    MO, TU, WE, TH, FR, SA, SU = rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA, rrule.SU

    schedules = [
        # The schedules of the issue: a business-day job in New York and in Berlin.
        Schedule("us-daily", "0 6 * * *", "America/New_York", [us],
                 rrule_slots(ny, freq=rrule.DAILY, byhour=6, byminute=0, bysecond=0)),
        Schedule("de-daily", "0 6 * * *", "Europe/Berlin", [de],
                 rrule_slots(berlin, freq=rrule.DAILY, byhour=6, byminute=0, bysecond=0)),
        # Times that DST skips or repeats: daily, and on Sundays (the days of the changes), where every slot
        # moves and the moved slot of the day of a change keeps its own wall-clock time. Twice a day, so that a
        # moved slot merges into the target day's run at its instant, or (the 03:00 of the day of the jump) into
        # the day's first.
        Schedule("us-daily-0230-1230", "30 2,12 * * *", "America/New_York", [us],
                 rrule_slots(ny, freq=rrule.DAILY, byhour=(2, 12), byminute=30, bysecond=0)),
        Schedule("us-sundays-0230", "30 2 * * 0", "America/New_York", [us],
                 rrule_slots(ny, freq=rrule.WEEKLY, byweekday=SU, byhour=2, byminute=30, bysecond=0)),
        Schedule("us-sundays-0130", "30 1 * * 0", "America/New_York", [us],
                 rrule_slots(ny, freq=rrule.WEEKLY, byweekday=SU, byhour=1, byminute=30, bysecond=0)),
        Schedule("de-sundays-0230", "30 2 * * 0", "Europe/Berlin", [de],
                 rrule_slots(berlin, freq=rrule.WEEKLY, byweekday=SU, byhour=2, byminute=30, bysecond=0)),
        # Every hour of Sundays: the repeated 02:00 of 2027-10-31 runs twice, and both move to one instant.
        Schedule("de-sundays-hourly", "0 * * * 0", "Europe/Berlin", [de], wall_clock_slots(berlin, 0, 6)),
        # Moved slots that collide with each other (no slot of their own on the target day).
        Schedule("us-weekends", "0 6 * * 0,6", "America/New_York", [us],
                 rrule_slots(ny, freq=rrule.WEEKLY, byweekday=(SA, SU), byhour=6, byminute=0, bysecond=0)),
        Schedule("de-saturdays-twice", "0 9,15 * * 6", "Europe/Berlin", [de],
                 rrule_slots(berlin, freq=rrule.WEEKLY, byweekday=SA, byhour=(9, 15), byminute=0, bysecond=0)),
        # The first of the month, or the nearest business day.
        Schedule("us-monthly", "0 6 1 * *", "America/New_York", [us],
                 rrule_slots(ny, freq=rrule.MONTHLY, bymonthday=1, byhour=6, byminute=0, bysecond=0)),
        # A New York evening job under both calendars: the German one tests the Berlin date, the next day.
        Schedule("us-evenings-both", "0 20 * * 1-5", "America/New_York", [us, de],
                 rrule_slots(ny, freq=rrule.WEEKLY, byweekday=(MO, TU, WE, TH, FR), byhour=20, byminute=0, bysecond=0)),
    ]

    out = {
        "generator": "scripts/calendar-oracle/oracle.py",
        "versions": {
            "python": platform.python_version(),
            "holidays": metadata.version("holidays"),
            "python-dateutil": metadata.version("python-dateutil"),
            "tzdata": metadata.version("tzdata"),
        },
        "calendars": [us.to_json(), de.to_json()],
        "schedules": [],
    }
    for s in schedules:
        # The year 2027 in the schedule's zone: runs after its last second of 2026, up to its last of 2027.
        after = localize(dt.datetime(2027, 1, 1), s.zone) - dt.timedelta(seconds=1)
        until = localize(dt.datetime(2028, 1, 1), s.zone) - dt.timedelta(seconds=1)
        # A slot is "slot" when it runs in place, and ["slot", "calendar", "next at", "previous at"] when a calendar
        # excludes it: skipped under skip, moved to those instants under the two moves.
        slots = []
        for slot in s.slots:
            if not after < slot <= until:
                continue
            by = s.excluded_by(slot)
            if not by:
                slots.append(iso(slot))
                continue
            entry = [iso(slot), by]
            for policy in POLICIES[1:]:
                action, at, _ = s.resolve(slot, policy)
                entry.append(iso(at))
            slots.append(entry)
        runs = {}
        for policy in POLICIES:
            # A run is [slot], [slot, at] when moved, and [slot, at, [merged slots]] when others merged into it.
            runs[policy] = []
            for r in s.runs(policy, after, until):
                run = [iso(r["slot"])]
                if r["at"] != r["slot"] or r["merged"]:
                    run.append(iso(r["at"]))
                if r["merged"]:
                    run.append([iso(m) for m in sorted(r["merged"])])
                runs[policy].append(run)
        out["schedules"].append({
            "name": s.name, "cron": s.cron, "tz": s.tz, "calendars": [c.name for c in s.calendars],
            "after": iso(after), "until": iso(until), "slots": slots, "runs": runs,
        })
    write(out)


def write(out):
    """JSON with one slot, outcome or run per line: small, and a regeneration diffs line by line."""
    def dumps(v):
        return json.dumps(v, separators=(",", ":"))

    w = sys.stdout.write
    w("{\n")
    w(f' "generator": {dumps(out["generator"])},\n "versions": {dumps(out["versions"])},\n')
    w(' "calendars": [\n' + ",\n".join("  " + dumps(c) for c in out["calendars"]) + "\n ],\n")
    w(' "schedules": [\n')
    for i, s in enumerate(out["schedules"]):
        w("  {\n")
        for key in ("name", "cron", "tz", "calendars", "after", "until"):
            w(f"   {dumps(key)}: {dumps(s[key])},\n")
        w('   "slots": [\n' + ",\n".join("    " + dumps(x) for x in s["slots"]) + "\n   ],\n")
        w('   "runs": {\n')
        w(",\n".join(f"    {dumps(p)}: [\n" + ",\n".join("     " + dumps(r) for r in runs) + "\n    ]"
                     for p, runs in s["runs"].items()))
        w("\n   }\n  }" + ("," if i < len(out["schedules"]) - 1 else "") + "\n")
    w(" ]\n}\n")


if __name__ == "__main__":
    main()
