package calendar

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

// TestOracle checks a year of business-day schedules against an independent oracle: for 2027, US federal
// holidays (with their observed days) and weekends in America/New_York, German national holidays and weekends
// in Europe/Berlin, and eleven schedules on them (daily at 06:00 in each zone, times in the DST gap and repeat,
// weekly and monthly ones whose moved slots collide or run alone, an hourly one that runs twice in the
// repeated hour, a New York evening job under both calendars). Every slot of the year must agree under all
// three policies: whether it is excluded, by which calendar, and where each move puts it; and so must every
// run, with the slots merged into it.
//
// The oracle is scripts/calendar-oracle/oracle.py: the `holidays` package for the calendars, `dateutil.rrule`
// for the slots, `zoneinfo` with the `tzdata` package for the zones, and the merge rule written from doc.go, not
// from this package. Its output, testdata/oracle-2027.json, is committed, so this test needs no Python. To
// regenerate it (after a change of the rule, or of the pinned versions in requirements.txt):
//
//	python3 -m venv /tmp/oracle-venv
//	/tmp/oracle-venv/bin/pip install -r scripts/calendar-oracle/requirements.txt
//	/tmp/oracle-venv/bin/python scripts/calendar-oracle/oracle.py > internal/calendar/testdata/oracle-2027.json
//
// The calendars are built from the dates written in the file, so a new release of `holidays` changes the file,
// never the meaning of this test.
func TestOracle(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/oracle-2027.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Calendars []Spec
		Schedules []struct {
			Name, Cron, TZ string
			Calendars      []string
			After, Until   time.Time
			Slots          []json.RawMessage
			Runs           map[OnExcluded][]json.RawMessage
		}
	}
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	cals := map[string]*Calendar{}
	for _, s := range file.Calendars {
		cals[s.Name] = mustCal(t, s)
	}
	if len(cals) != 2 || len(file.Schedules) < 10 {
		t.Fatalf("the oracle file holds %d calendars and %d schedules", len(cals), len(file.Schedules))
	}
	for _, sch := range file.Schedules {
		t.Run(sch.Name, func(t *testing.T) {
			t.Parallel()
			s, err := schedule.Spec{Name: sch.Name, Cron: sch.Cron, TZ: sch.TZ}.Compile()
			if err != nil {
				t.Fatal(err)
			}
			loc := mustZone(t, sch.TZ)
			var excl []*Calendar
			for _, name := range sch.Calendars {
				excl = append(excl, cals[name])
			}
			show := func(ts time.Time) string { return ts.In(loc).Format("2006-01-02 15:04 MST") }

			// Every slot of the year, alone.
			slot := sch.After
			for i, raw := range sch.Slots {
				var want struct {
					slot, by, next, prev time.Time
					name                 string
				}
				if err := decodeOracleSlot(raw, &want.slot, &want.name, &want.next, &want.prev); err != nil {
					t.Fatalf("slot %d: %v", i, err)
				}
				if slot = s.Next(slot); !slot.Equal(want.slot) {
					t.Fatalf("slot %d: the schedule's is %s, the oracle's %s", i, show(slot), show(want.slot))
				}
				for _, p := range []OnExcluded{Skip, NextBusinessDay, PreviousBusinessDay} {
					got, err := Exclusion{Calendars: excl, Policy: p, Location: loc}.Resolve(slot)
					if err != nil {
						t.Fatal(err)
					}
					wantAction, wantAt := Runs, slot
					switch {
					case want.name == "":
					case p == Skip:
						wantAction, wantAt = Skipped, time.Time{}
					case p == NextBusinessDay:
						wantAction, wantAt = Moved, want.next
					default:
						wantAction, wantAt = Moved, want.prev
					}
					if got.Action != wantAction || !got.At.Equal(wantAt) || got.Calendar != want.name {
						t.Errorf("%s: slot %s: %s at %s by %q, the oracle says %s at %s by %q", p, show(slot),
							got.Action, show(got.At), got.Calendar, wantAction, show(wantAt), want.name)
					}
				}
			}
			if next := s.Next(slot); !next.After(sch.Until) {
				t.Errorf("the schedule has a slot at %s, after the oracle's last", show(next))
			}

			// The runs of the year, merged.
			for _, p := range []OnExcluded{Skip, NextBusinessDay, PreviousBusinessDay} {
				got, err := Exclusion{Calendars: excl, Policy: p, Location: loc}.Runs(s.Next, sch.After, sch.Until)
				if err != nil {
					t.Fatal(err)
				}
				want := sch.Runs[p]
				for i := range max(len(got), len(want)) {
					var w Run
					if i < len(want) {
						if err := decodeOracleRun(want[i], &w); err != nil {
							t.Fatalf("%s: run %d: %v", p, i, err)
						}
					}
					switch {
					case i >= len(got):
						t.Fatalf("%s: %d runs, the oracle has %d; the first missing is %s", p, len(got), len(want), runString(w, loc))
					case i >= len(want):
						t.Fatalf("%s: %d runs, the oracle has %d; the first extra is %s", p, len(got), len(want), runString(got[i], loc))
					}
					if runString(got[i], loc) != runString(w, loc) || !got[i].Slot.Equal(w.Slot) || !got[i].At.Equal(w.At) {
						t.Fatalf("%s: run %d is %s, the oracle's %s", p, i, runString(got[i], loc), runString(w, loc))
					}
					for j := range w.Merged {
						if !got[i].Merged[j].Equal(w.Merged[j]) {
							t.Fatalf("%s: run %d merges %v, the oracle's %v", p, i, got[i].Merged, w.Merged)
						}
					}
				}
				// What a leader steps through (Apply): the same runs, one Next at a time, each with its slot.
				applied := Exclusion{Calendars: excl, Policy: p, Location: loc}.Apply(s)
				i := 0
				for at := applied.Next(sch.After); !at.IsZero() && !at.After(sch.Until); at = applied.Next(at) {
					if i >= len(got) {
						t.Fatalf("%s: the applied schedule has a run at %s after the year's %d", p, show(at), len(got))
					}
					if slot := applied.SlotOf(at); !at.Equal(got[i].At) || !slot.Equal(got[i].Slot) {
						t.Fatalf("%s: the applied schedule's run %d is %s at %s, Runs' %s", p, i, show(slot), show(at), runString(got[i], loc))
					}
					i++
				}
				if i != len(got) {
					t.Fatalf("%s: the applied schedule has %d runs in the year, Runs %d", p, i, len(got))
				}
			}
		})
	}
}

// decodeOracleSlot reads a slot of the oracle file: "slot" when it runs, or ["slot", "calendar", "next at",
// "previous at"] when the calendar excludes it.
func decodeOracleSlot(raw json.RawMessage, slot *time.Time, by *string, next, prev *time.Time) error {
	if err := json.Unmarshal(raw, slot); err == nil {
		return nil
	}
	var parts []string
	if err := json.Unmarshal(raw, &parts); err != nil || len(parts) != 4 {
		return fmt.Errorf("not a slot: %s", raw)
	}
	*by = parts[1]
	for i, p := range []*time.Time{slot, next, prev} {
		if err := p.UnmarshalText([]byte(parts[[]int{0, 2, 3}[i]])); err != nil {
			return err
		}
	}
	return nil
}

// decodeOracleRun reads a run of the oracle file: ["slot"], ["slot", "at"] or ["slot", "at", ["merged", ...]].
func decodeOracleRun(raw json.RawMessage, r *Run) error {
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil || len(parts) == 0 || len(parts) > 3 {
		return fmt.Errorf("not a run: %s", raw)
	}
	if err := json.Unmarshal(parts[0], &r.Slot); err != nil {
		return err
	}
	r.At = r.Slot
	if len(parts) > 1 {
		if err := json.Unmarshal(parts[1], &r.At); err != nil {
			return err
		}
	}
	r.Moved = !r.At.Equal(r.Slot)
	if len(parts) > 2 {
		return json.Unmarshal(parts[2], &r.Merged)
	}
	return nil
}
