package calendar

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/schedule"
)

func mustSchedule(t testing.TB, s schedule.Spec) *schedule.Schedule {
	t.Helper()
	if s.Name == "" {
		s.Name = "x"
	}
	c, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestApplySkip: a schedule under its calendars steps over the slots whose date a calendar excludes, in the
// calendar's zone, whatever the schedule's zone; a whole excluded day is passed over in one step, across DST
// days of 23 and 25 hours and a zone whose midnight does not exist on the day of its jump.
func TestApplySkip(t *testing.T) {
	t.Parallel()
	hourly := schedule.Spec{Every: schedule.Duration(time.Hour)}
	for _, tc := range []struct {
		name  string
		sched schedule.Spec
		cals  []Spec
		after string
		want  []string // UTC
	}{
		{"a UTC date", hourly, []Spec{{Name: "xmas", Dates: []string{"2027-12-25"}}}, "2027-12-24T21:30:00Z",
			[]string{"2027-12-24T22:00:00Z", "2027-12-24T23:00:00Z", "2027-12-26T00:00:00Z", "2027-12-26T01:00:00Z"}},
		{"the calendar's zone, not the schedule's", hourly, []Spec{{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2027-12-25"}}}, "2027-12-24T21:30:00Z",
			// Berlin is UTC+1 in December: its 25th is 2027-12-24T23:00Z to 2027-12-25T23:00Z.
			[]string{"2027-12-24T22:00:00Z", "2027-12-25T23:00:00Z", "2027-12-26T00:00:00Z"}},
		{"a day of 23 hours (spring forward)", hourly, []Spec{{Name: "us", TZ: "America/New_York", Dates: []string{"2027-03-14"}}}, "2027-03-14T03:30:00Z",
			// 2027-03-14 in New York: 05:00Z (00:00 EST) to 2027-03-15T04:00Z (00:00 EDT).
			[]string{"2027-03-14T04:00:00Z", "2027-03-15T04:00:00Z", "2027-03-15T05:00:00Z"}},
		{"a day of 25 hours (fall back)", hourly, []Spec{{Name: "us", TZ: "America/New_York", Dates: []string{"2027-11-07"}}}, "2027-11-07T02:30:00Z",
			// 2027-11-07 in New York: 04:00Z (00:00 EDT) to 2027-11-08T05:00Z (00:00 EST).
			[]string{"2027-11-07T03:00:00Z", "2027-11-08T05:00:00Z", "2027-11-08T06:00:00Z"}},
		{"a midnight that does not exist", hourly, []Spec{{Name: "cl", TZ: "America/Santiago", Dates: []string{"2026-09-06"}}}, "2026-09-06T02:30:00Z",
			// Santiago jumps from 2026-09-06 00:00 -04 to 01:00 -03: its 6th starts at 04:00Z and ends at
			// 2026-09-07T03:00Z.
			[]string{"2026-09-06T03:00:00Z", "2026-09-07T03:00:00Z"}},
		{"a cron schedule in another zone (Good Friday)", schedule.Spec{Cron: "0 20 * * *", TZ: "America/New_York"},
			[]Spec{{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2027-03-26"}}}, "2027-03-24T00:00:00Z",
			// The Thursday 20:00 EDT slot is Friday 01:00 in Berlin: excluded; Friday evening's is Saturday there.
			[]string{"2027-03-25T00:00:00Z", "2027-03-27T00:00:00Z", "2027-03-28T00:00:00Z"}},
		{"several calendars: any excludes", hourly, []Spec{
			{Name: "a", Dates: []string{"2027-01-02"}},
			{Name: "b", TZ: "Asia/Tokyo", Dates: []string{"2027-01-03"}}, // 2027-01-02T15:00Z to 2027-01-03T15:00Z
		}, "2027-01-01T22:30:00Z", []string{"2027-01-01T23:00:00Z", "2027-01-03T15:00:00Z"}},
		{"weekends", schedule.Spec{Cron: "0 9 * * *", TZ: "Europe/Berlin"}, []Spec{{Name: "w", TZ: "Europe/Berlin", Weekdays: []string{"sat", "sun"}}},
			"2027-01-07T12:00:00Z", // a Thursday
			[]string{"2027-01-08T08:00:00Z", "2027-01-11T08:00:00Z", "2027-01-12T08:00:00Z"}},
		{"the end within an excluded span", schedule.Spec{Every: schedule.Duration(time.Hour), End: ptrTime(mustTime(t, "2027-12-25T12:00:00Z"))},
			[]Spec{{Name: "xmas", Dates: []string{"2027-12-25"}}}, "2027-12-24T22:30:00Z", []string{"2027-12-24T23:00:00Z", "zero"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cals := map[string]*Calendar{}
			for _, c := range tc.cals {
				cals[c.Name] = mustCal(t, c)
				tc.sched.Exclude = append(tc.sched.Exclude, c.Name)
			}
			s, missing := Apply(mustSchedule(t, tc.sched), Getter(cals))
			if len(missing) > 0 || !s.Skipped() {
				t.Fatalf("Apply: missing %v, skipped %v", missing, s.Skipped())
			}
			var got []string
			after := mustTime(t, tc.after)
			for range tc.want {
				next := s.Next(after)
				if next.IsZero() {
					got = append(got, "zero")
					if s.SkipExhausted(after) {
						t.Error("SkipExhausted at the schedule's end")
					}
					break
				}
				got = append(got, next.Format(time.RFC3339))
				after = next
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, tc.want)
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }

// TestApplySparse: a schedule whose next slot is years away (a late start, a leap day) is not cut short by the
// search's bounds, whose excluded slot passes to the next one years later.
func TestApplySparse(t *testing.T) {
	t.Parallel()
	cals := map[string]*Calendar{"hol": mustCal(t, Spec{Name: "hol", Dates: []string{"2028-02-29"}})}
	for _, tc := range []struct {
		sched schedule.Spec
		want  string
	}{
		{schedule.Spec{Every: schedule.Duration(time.Hour), Start: ptrTime(mustTime(t, "2099-01-01T00:00:00Z"))}, "2099-01-01T00:00:00Z"},
		{schedule.Spec{Cron: "0 12 29 2 *"}, "2032-02-29T12:00:00Z"},
	} {
		tc.sched.Exclude = []string{"hol"}
		s, _ := Apply(mustSchedule(t, tc.sched), Getter(cals))
		if got := s.Next(mustTime(t, "2026-12-06T00:00:00Z")); got.Format(time.RFC3339) != tc.want {
			t.Errorf("%s: Next = %v, want %s", tc.sched.Describe(), got, tc.want)
		}
	}
}

// TestApplyOracle: over a year of slots, the skipping schedule's sequence is exactly the schedule's own slots
// that Exclusion.Excludes keeps, for schedules and calendars in several zones.
func TestApplyOracle(t *testing.T) {
	t.Parallel()
	cals := map[string]*Calendar{
		"us": mustCal(t, Spec{Name: "us", TZ: "America/New_York", Weekdays: []string{"sat", "sun"},
			Dates: []string{"2027-01-01", "2027-03-14", "2027-07-05", "2027-11-07", "2027-11-25"}}),
		"de":  mustCal(t, Spec{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2027-03-26", "2027-03-28", "2027-10-31"}, Ranges: []Range{{From: "2027-12-24", To: "2027-12-31"}}}),
		"nz":  mustCal(t, Spec{Name: "nz", TZ: "Pacific/Auckland", Weekdays: []string{"wed"}}),
		"utc": mustCal(t, Spec{Name: "utc", Ranges: []Range{{From: "2027-08-01", To: "2027-08-20"}}}),
	}
	for _, tc := range []struct {
		sched   schedule.Spec
		exclude []string
	}{
		{schedule.Spec{Every: schedule.Duration(37 * time.Minute)}, []string{"us"}},
		{schedule.Spec{Every: schedule.Duration(time.Hour), Offset: schedule.Duration(30 * time.Minute)}, []string{"de", "nz"}},
		{schedule.Spec{Cron: "30 2 * * *", TZ: "America/New_York"}, []string{"us", "de"}},
		{schedule.Spec{Cron: "0 */4 * * MON-FRI", TZ: "Europe/Berlin"}, []string{"de", "utc", "nz"}},
		{schedule.Spec{Cron: "15 0 * * *", TZ: "Pacific/Auckland"}, []string{"nz", "us"}},
	} {
		tc.sched.Exclude = tc.exclude
		raw := mustSchedule(t, tc.sched)
		e, _ := Of(raw, Getter(cals))
		s := e.Apply(raw)
		from, until := mustTime(t, "2026-12-31T00:00:00Z"), mustTime(t, "2028-01-02T00:00:00Z")
		var want, got []time.Time
		for x := raw.Next(from); !x.After(until); x = raw.Next(x) {
			if !e.Excludes(x) {
				want = append(want, x)
			}
		}
		for x := s.Next(from); !x.After(until); x = s.Next(x) {
			got = append(got, x)
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("%s excluding %v: %d slots, want %d", tc.sched.Describe(), tc.exclude, len(got), len(want))
		}
	}
}

// TestApplyExhausted: calendars that together exclude every day for longer than schedule.MaxSkip leave the
// schedule no next slot, found in about one step per day, not one per slot; SkipExhausted says why.
func TestApplyExhausted(t *testing.T) {
	t.Parallel()
	week := mustCal(t, Spec{Name: "week", Weekdays: []string{"mon", "tue", "wed", "thu", "fri"}})
	weekend := mustCal(t, Spec{Name: "weekend", Weekdays: []string{"sat", "sun"}})
	every := mustSchedule(t, schedule.Spec{Every: schedule.Duration(time.Second), Exclude: []string{"week", "weekend"}})
	e, _ := Of(every, Getter(map[string]*Calendar{"week": week, "weekend": weekend}))
	calls := 0
	s := every.Skipping(func(slot time.Time) (bool, time.Time) {
		calls++
		return e.Skip(slot)
	})
	after := mustTime(t, "2027-01-01T00:00:00Z")
	if next := s.Next(after); !next.IsZero() {
		t.Errorf("Next = %v, want none", next)
	}
	if !s.SkipExhausted(after) {
		t.Error("SkipExhausted = false")
	}
	if limit := max(int(schedule.MaxSkip/(24*time.Hour)), schedule.MaxSkipSteps) + 2; calls > 2*limit { // Next, then SkipExhausted
		t.Errorf("%d calls of the Skip, want about one a day (%d)", calls, limit)
	}
	if got := s.Upcoming(after, 3); len(got) != 0 {
		t.Errorf("Upcoming = %v", got)
	}
	// A plan after a long outage: nothing to emit, nothing missed, no next slot, and no spin.
	if p := s.Plan(after, after.Add(72*time.Hour)); len(p.Emit) != 0 || p.Missed != 0 || !p.Next.IsZero() {
		t.Errorf("Plan = %+v", p)
	}
}

// TestApplyPlans: the catch-up policies count the included slots only: after an outage across an excluded day,
// latest emits the last included slot (not an excluded one), all emits up to catchup_max of the included ones,
// and the slots of the excluded day are neither emitted nor missed.
func TestApplyPlans(t *testing.T) {
	t.Parallel()
	xmas := map[string]*Calendar{"xmas": mustCal(t, Spec{Name: "xmas", Dates: []string{"2027-12-25"}})}
	base, now := mustTime(t, "2027-12-24T20:00:00Z"), mustTime(t, "2027-12-25T10:00:30Z")
	for _, tc := range []struct {
		catchup string
		max     int
		emit    []string
		missed  int64
	}{
		{schedule.CatchupLatest, 0, []string{"2027-12-24T23:00:00Z"}, 2},
		{schedule.CatchupAll, 2, []string{"2027-12-24T22:00:00Z", "2027-12-24T23:00:00Z"}, 1},
		{schedule.CatchupAll, 10, []string{"2027-12-24T21:00:00Z", "2027-12-24T22:00:00Z", "2027-12-24T23:00:00Z"}, 0},
		{schedule.CatchupSkip, 0, nil, 3},
	} {
		raw := mustSchedule(t, schedule.Spec{Every: schedule.Duration(time.Hour), Catchup: tc.catchup, CatchupMax: tc.max, Exclude: []string{"xmas"}})
		s, _ := Apply(raw, Getter(xmas))
		p := s.PlanAhead(base, now, now.Add(10*time.Second))
		var emit []string
		for _, x := range p.Emit {
			emit = append(emit, x.Format(time.RFC3339))
		}
		if !slices.Equal(emit, tc.emit) || p.Missed != tc.missed || !p.Next.Equal(mustTime(t, "2027-12-26T00:00:00Z")) {
			t.Errorf("%s max %d: emit %v missed %d next %v; want %v missed %d next 2027-12-26T00:00:00Z",
				tc.catchup, tc.max, emit, p.Missed, p.Next, tc.emit, tc.missed)
		}
	}
}

// TestOfMissing: a calendar that the lookup does not find is named, and Apply then leaves the schedule as it
// is, for the caller to hold rather than run.
func TestOfMissing(t *testing.T) {
	t.Parallel()
	raw := mustSchedule(t, schedule.Spec{Every: schedule.Duration(time.Hour), Exclude: []string{"a", "b", "c"}})
	a := mustCal(t, Spec{Name: "a", Weekdays: []string{"sun"}})
	s, missing := Apply(raw, Getter(map[string]*Calendar{"a": a}))
	if s != raw || strings.Join(missing, ",") != "b,c" {
		t.Errorf("Apply = %p (raw %p), missing %v", s, raw, missing)
	}
	if s, missing := Apply(mustSchedule(t, schedule.Spec{Every: schedule.Duration(time.Hour)}), Getter(nil)); s.Skipped() || missing != nil {
		t.Errorf("a schedule without calendars: skipped %v, missing %v", s.Skipped(), missing)
	}
}
