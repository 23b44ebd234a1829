package dispatch

import (
	"encoding/json"
	"maps"
	"os"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/schedule"
	"github.com/tickgroup/tickgroup/internal/store"
)

// TestPlannerYearAgainstOracle: what a leader emits over a year of the independent oracle's schedules
// (internal/calendar/testdata/oracle-2027.json, made by scripts/calendar-oracle/oracle.py from Python's
// `holidays` and `dateutil.rrule`: US federal and German national holidays and weekends in their zones) agrees
// with the oracle's runs under each policy, skip and both moves: one tick per run, named by the run's slot and
// due at its instant, none other. Midway through the year, at a weekend (where the moves are), the term ends and
// a new one is built from the state the first wrote: together they emit every run once.
func TestPlannerYearAgainstOracle(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../calendar/testdata/oracle-2027.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Calendars []calendar.Spec
		Schedules []struct {
			Name, Cron, TZ string
			Calendars      []string
			After, Until   time.Time
			Runs           map[calendar.OnExcluded][][]json.RawMessage
		}
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	cals := newCalendarSet(t, file.Calendars...)
	const lead = 10 * time.Second
	for _, sch := range file.Schedules {
		for _, p := range []calendar.OnExcluded{calendar.Skip, calendar.NextBusinessDay, calendar.PreviousBusinessDay} {
			t.Run(sch.Name+"/"+string(p), func(t *testing.T) {
				t.Parallel()
				spec := schedule.Spec{Name: sch.Name, Cron: sch.Cron, TZ: sch.TZ, Catchup: "all", Exclude: sch.Calendars, OnExcluded: string(p)}
				entries := map[string]store.Entry{sch.Name: entry(t, spec, sch.After)}
				var want []emittedRun
				for _, raw := range sch.Runs[p] {
					want = append(want, oracleRun(t, raw))
				}
				// The first term runs to the Saturday nearest the middle of the year (UTC noon).
				mid := sch.After.Add(sch.Until.Sub(sch.After) / 2)
				for mid.Weekday() != time.Saturday {
					mid = mid.Add(24 * time.Hour)
				}
				mid = time.Date(mid.Year(), mid.Month(), mid.Day(), 12, 0, 0, 0, time.UTC)
				one := newPlannerFrom(1, maps.All(entries), nil, lead, cals.get)
				got := runUntil(t, one, sch.After, mid)
				state := map[string]stored{}
				if len(got) > 0 {
					state[sch.Name] = stored{LastSlot: got[len(got)-1].at} // what appendRecords writes: the last instant
				}
				two := newPlannerFrom(1, maps.All(entries), state, lead, cals.get)
				got = append(got, runUntil(t, two, mid, sch.Until.Add(-lead))...)
				if len(got) != len(want) {
					t.Errorf("%d runs emitted, the oracle has %d", len(got), len(want))
				}
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("run %d: emitted %s at %s, the oracle's is %s at %s", i, got[i].slot.Format(time.RFC3339), got[i].at.Format(time.RFC3339),
							want[i].slot.Format(time.RFC3339), want[i].at.Format(time.RFC3339))
					}
				}
			})
		}
	}
}

// emittedRun is a tick a planner emitted: its slot (its identity) and the instant it runs at.
type emittedRun struct{ slot, at time.Time }

// runUntil drives p from now to end (simulated), as a term's loop does, and returns the runs it emitted, each
// as appendRecords names it.
func runUntil(t *testing.T, p *planner, now, end time.Time) []emittedRun {
	t.Helper()
	var out []emittedRun
	for {
		at, ok := p.nextWake()
		if !ok || at.After(end) {
			return out
		}
		now = maxTime(now, at)
		for _, em := range p.collect(&batch{}, now, 100) {
			for _, s := range em.slots {
				if due := em.due(s); due.Sub(now) > lead(p) {
					t.Fatalf("run at %s emitted at %s, more than the lead ahead", s, now)
				}
				out = append(out, emittedRun{slot: em.slot(s), at: s})
			}
		}
	}
}

func lead(p *planner) time.Duration { return p.lead }

// oracleRun reads a run of the oracle file: ["slot"], ["slot", "at"] or ["slot", "at", ["merged", ...]].
func oracleRun(t *testing.T, parts []json.RawMessage) emittedRun {
	t.Helper()
	var r emittedRun
	if err := json.Unmarshal(parts[0], &r.slot); err != nil {
		t.Fatal(err)
	}
	r.at = r.slot
	if len(parts) > 1 {
		if err := json.Unmarshal(parts[1], &r.at); err != nil {
			t.Fatal(err)
		}
	}
	r.slot, r.at = r.slot.UTC(), r.at.UTC()
	return r
}
