package calendar

import (
	"errors"
	"testing"
	"time"
)

func mustCal(t testing.TB, s Spec) *Calendar {
	t.Helper()
	c, err := s.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func TestResolve(t *testing.T) {
	t.Parallel()
	ny, berlin := mustZone(t, "America/New_York"), mustZone(t, "Europe/Berlin")
	us := mustCal(t, Spec{Name: "us", TZ: "America/New_York", Weekdays: []string{"sat", "sun"},
		Dates: []string{"2027-01-01", "2027-01-18", "2027-03-15"}})
	de := mustCal(t, Spec{Name: "de", TZ: "Europe/Berlin", Weekdays: []string{"sat", "sun"},
		Dates: []string{"2027-03-26", "2027-03-29"}})
	saturdays := mustCal(t, Spec{Name: "saturdays", TZ: "America/New_York", Weekdays: []string{"sat"}})
	sundays := mustCal(t, Spec{Name: "sundays", TZ: "America/New_York", Weekdays: []string{"sun"}})
	mondays := mustCal(t, Spec{Name: "mondays", TZ: "America/New_York", Weekdays: []string{"mon"}})

	type want struct {
		action Action
		at     string // RFC 3339; "" for a skip
	}
	tests := []struct {
		name  string
		cals  []*Calendar
		loc   *time.Location
		slot  string
		skip  want
		next  want
		prev  want
		cal   string // the calendar named by an excluded slot's outcome
		where string // why, for the reader
	}{
		{"a working day", []*Calendar{us}, ny, "2026-12-31T06:00:00-05:00",
			want{Runs, "2026-12-31T06:00:00-05:00"}, want{Runs, "2026-12-31T06:00:00-05:00"}, want{Runs, "2026-12-31T06:00:00-05:00"}, "",
			"Thursday, no holiday"},
		{"a holiday on a Friday", []*Calendar{us}, ny, "2027-01-01T06:00:00-05:00",
			want{Skipped, ""}, want{Moved, "2027-01-04T06:00:00-05:00"}, want{Moved, "2026-12-31T06:00:00-05:00"}, "us",
			"next: over the weekend to Monday; previous: Thursday"},
		{"a Saturday before a Monday holiday", []*Calendar{us}, ny, "2027-01-16T06:00:00-05:00",
			want{Skipped, ""}, want{Moved, "2027-01-19T06:00:00-05:00"}, want{Moved, "2027-01-15T06:00:00-05:00"}, "us",
			"next: Sunday and MLK day are excluded too"},
		{"onto a spring-forward gap", []*Calendar{saturdays}, ny, "2027-03-13T02:30:00-05:00",
			want{Skipped, ""}, want{Moved, "2027-03-14T03:00:00-04:00"}, want{Moved, "2027-03-12T02:30:00-05:00"}, "saturdays",
			"02:30 on 2027-03-14 does not exist: the transition instant, 03:00 EDT"},
		{"onto a fall-back repeat", []*Calendar{saturdays}, ny, "2027-11-06T01:30:00-04:00",
			want{Skipped, ""}, want{Moved, "2027-11-07T01:30:00-04:00"}, want{Moved, "2027-11-05T01:30:00-04:00"}, "saturdays",
			"01:30 on 2027-11-07 occurs twice: the first, EDT"},
		{"back onto a gap", []*Calendar{mondays}, ny, "2027-03-15T02:30:00-04:00",
			want{Skipped, ""}, want{Moved, "2027-03-16T02:30:00-04:00"}, want{Moved, "2027-03-14T03:00:00-04:00"}, "mondays",
			"previous: 02:30 on the Sunday of the jump is 03:00 EDT"},
		{"over a weekend", []*Calendar{us}, ny, "2027-03-15T02:30:00-04:00",
			want{Skipped, ""}, want{Moved, "2027-03-16T02:30:00-04:00"}, want{Moved, "2027-03-12T02:30:00-05:00"}, "us",
			"previous skips the weekend, so the day of the jump is no candidate"},
		{"a gap slot keeps its wall-clock time", []*Calendar{sundays}, ny, "2027-03-14T03:00:00-04:00",
			want{Skipped, ""}, want{Moved, "2027-03-15T03:00:00-04:00"}, want{Moved, "2027-03-13T03:00:00-05:00"}, "sundays",
			"cron 02:30 ran at 03:00 EDT; only the instant is known, so 03:00 it is"},
		{"the second occurrence of a repeated hour", []*Calendar{sundays}, ny, "2027-11-07T01:30:00-05:00",
			want{Skipped, ""}, want{Moved, "2027-11-08T01:30:00-05:00"}, want{Moved, "2027-11-06T01:30:00-04:00"}, "sundays",
			"an hourly schedule's 01:30 EST moves as 01:30"},
		{"a calendar in another zone", []*Calendar{de}, ny, "2027-03-25T20:00:00-04:00",
			want{Skipped, ""}, want{Moved, "2027-03-29T20:00:00-04:00"}, want{Moved, "2027-03-24T20:00:00-04:00"}, "de",
			"20:00 in New York is 01:00 of Good Friday in Berlin; the next free Berlin date at 20:00 New York is Tuesday"},
		{"two calendars, two zones", []*Calendar{us, de}, ny, "2027-03-12T20:00:00-05:00",
			want{Skipped, ""}, want{Moved, "2027-03-16T20:00:00-04:00"}, want{Moved, "2027-03-11T20:00:00-05:00"}, "de",
			"Friday 20:00 EST is Saturday in Berlin; Monday is a US holiday"},
		{"the schedule in Berlin", []*Calendar{de}, berlin, "2027-03-26T06:00:00+01:00",
			want{Skipped, ""}, want{Moved, "2027-03-30T06:00:00+02:00"}, want{Moved, "2027-03-25T06:00:00+01:00"}, "de",
			"Good Friday to Tuesday after Easter Monday, across the change to CEST"},
		{"no zone is UTC", []*Calendar{mustCal(t, Spec{Name: "utc", Dates: []string{"2027-06-01"}})}, nil, "2027-06-01T23:00:00Z",
			want{Skipped, ""}, want{Moved, "2027-06-02T23:00:00Z"}, want{Moved, "2027-05-31T23:00:00Z"}, "utc", ""},
		{"no calendars", nil, ny, "2027-01-01T06:00:00-05:00",
			want{Runs, "2027-01-01T06:00:00-05:00"}, want{Runs, "2027-01-01T06:00:00-05:00"}, want{Runs, "2027-01-01T06:00:00-05:00"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			slot := mustTime(t, tt.slot)
			for _, pw := range []struct {
				policy OnExcluded
				want   want
			}{{"", tt.skip}, {Skip, tt.skip}, {NextBusinessDay, tt.next}, {PreviousBusinessDay, tt.prev}, {"unknown", tt.skip}} {
				e := Exclusion{Calendars: tt.cals, Policy: pw.policy, Location: tt.loc}
				got, err := e.Resolve(slot)
				if err != nil {
					t.Fatalf("%s: %v", pw.policy, err)
				}
				var at time.Time
				if pw.want.at != "" {
					at = mustTime(t, pw.want.at)
				}
				cal := tt.cal
				if pw.want.action == Runs {
					cal = ""
				}
				if !got.Slot.Equal(slot) || got.Action != pw.want.action || !got.At.Equal(at) || got.Calendar != cal {
					t.Errorf("%q: Resolve(%s) = {%s %s at %s by %q}, want {%s at %s by %q} (%s)", pw.policy, tt.slot,
						got.Slot.Format(time.RFC3339), got.Action, got.At.Format(time.RFC3339), got.Calendar,
						pw.want.action, pw.want.at, cal, tt.where)
				}
				if got.Action == Moved && got.At.Location() != time.UTC {
					t.Errorf("%s: At is in %v, want UTC", pw.policy, got.At.Location())
				}
				if e.Excludes(slot) != (pw.want.action != Runs) {
					t.Errorf("Excludes(%s) = %v", tt.slot, e.Excludes(slot))
				}
			}
		})
	}
}

// Calendars that are each valid can together exclude every day: a move then ends, skipped, with
// ErrNoBusinessDay; a skip never searches.
func TestResolveNoBusinessDay(t *testing.T) {
	t.Parallel()
	early := mustCal(t, Spec{Name: "early", Weekdays: []string{"mon", "tue", "wed"}})
	late := mustCal(t, Spec{Name: "late", Weekdays: []string{"thu", "fri", "sat", "sun"}})
	slot := mustTime(t, "2027-06-01T12:00:00Z")
	for _, p := range []OnExcluded{NextBusinessDay, PreviousBusinessDay} {
		got, err := Exclusion{Calendars: []*Calendar{early, late}, Policy: p}.Resolve(slot)
		if !errors.Is(err, ErrNoBusinessDay) || got.Action != Skipped || got.Calendar != "early" || !got.At.IsZero() {
			t.Errorf("%s: Resolve = %+v, %v; want a skip by \"early\" and ErrNoBusinessDay", p, got, err)
		}
		want := "moving slot 2027-06-01T12:00:00Z (2027-06-01 12:00:00 UTC) to the " + string(p) +
			": the calendars leave no day free within 400 days: no business day within reach"
		if err.Error() != want {
			t.Errorf("%s: error\n got %v\nwant %s", p, err, want)
		}
	}
	if got, err := (Exclusion{Calendars: []*Calendar{early, late}}).Resolve(slot); err != nil || got.Action != Skipped {
		t.Errorf("skip: Resolve = %+v, %v", got, err)
	}
	// The longest run one calendar allows, 366 days, is within reach from both ends.
	year := mustCal(t, Spec{Name: "leap", Ranges: []Range{{From: "2028-01-01", To: "2028-12-31"}}})
	e := Exclusion{Calendars: []*Calendar{year}, Policy: NextBusinessDay}
	if got, err := e.Resolve(mustTime(t, "2028-01-01T08:00:00Z")); err != nil || !got.At.Equal(mustTime(t, "2029-01-01T08:00:00Z")) {
		t.Errorf("next across a year: %+v, %v", got, err)
	}
	e.Policy = PreviousBusinessDay
	if got, err := e.Resolve(mustTime(t, "2028-12-31T08:00:00Z")); err != nil || !got.At.Equal(mustTime(t, "2027-12-31T08:00:00Z")) {
		t.Errorf("previous across a year: %+v, %v", got, err)
	}
}

func TestActionString(t *testing.T) {
	t.Parallel()
	for a, want := range map[Action]string{Runs: "runs", Skipped: "skipped", Moved: "moved", 7: "Action(7)"} {
		if got := a.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", a, got, want)
		}
	}
}
