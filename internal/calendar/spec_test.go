package calendar

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	many := make([]string, MaxEntries+1)
	for i := range many {
		many[i] = "2027-01-01"
	}
	tests := []struct {
		name string
		spec Spec
		want string // the whole message of the first FieldError
	}{
		{"bad name", Spec{Name: "US Federal"},
			`calendar "US Federal": name "US Federal": must be 1 to 128 characters of a-z, 0-9, '.', '_' and '-'`},
		{"empty name", Spec{},
			`calendar: name: must be 1 to 128 characters of a-z, 0-9, '.', '_' and '-'`},
		{"long name", Spec{Name: strings.Repeat("a", 129)},
			`calendar "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"... (129 bytes): name "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"... (129 bytes): must be 1 to 128 characters of a-z, 0-9, '.', '_' and '-'`},
		{"dots", Spec{Name: ".."},
			`calendar "..": name "..": must not be made only of dots: "." and ".." cannot be named in a URL path`},
		{"unknown zone", Spec{Name: "us", TZ: "Mars/Olympus"},
			`calendar "us": tz "Mars/Olympus": unknown time zone (want an IANA name such as "Europe/Berlin"): unknown time zone Mars/Olympus`},
		{"local zone", Spec{Name: "us", TZ: "Local"},
			`calendar "us": tz "Local": unknown time zone: "Local" depends on the host; name an IANA zone such as "Europe/Berlin"`},
		{"malformed date", Spec{Name: "us", Dates: []string{"2027-01-01", "2027-1-18"}},
			`calendar "us": dates[1] "2027-1-18": not a date (want YYYY-MM-DD)`},
		{"impossible date", Spec{Name: "us", Dates: []string{"2027-02-29"}},
			`calendar "us": dates[0] "2027-02-29": not a date (want YYYY-MM-DD): day out of range`},
		{"month out of range", Spec{Name: "us", Dates: []string{"2027-13-01"}},
			`calendar "us": dates[0] "2027-13-01": not a date (want YYYY-MM-DD): month out of range`},
		{"date with a time", Spec{Name: "us", Dates: []string{"2027-01-01T00:00:00Z"}},
			`calendar "us": dates[0] "2027-01-01T00:00:00Z": not a date (want YYYY-MM-DD): extra text: "T00:00:00Z"`},
		{"bad range from", Spec{Name: "us", Ranges: []Range{{From: "24.12.2027", To: "2027-12-31"}}},
			`calendar "us": ranges[0].from "24.12.2027": not a date (want YYYY-MM-DD)`},
		{"missing range to", Spec{Name: "us", Ranges: []Range{{From: "2027-12-24"}}},
			`calendar "us": ranges[0].to: not a date (want YYYY-MM-DD)`},
		{"range backwards", Spec{Name: "us", Ranges: []Range{{From: "2027-12-31", To: "2027-12-24"}}},
			`calendar "us": ranges[0] "2027-12-31/2027-12-24": from is after to`},
		{"unknown weekday", Spec{Name: "us", Weekdays: []string{"sat", "sonntag"}},
			`calendar "us": weekdays[1] "sonntag": not a day of the week (want mon, tue, wed, thu, fri, sat or sun)`},
		{"every weekday", Spec{Name: "us", Weekdays: []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}},
			`calendar "us": weekdays "mon,tue,wed,thu,fri,sat,sun": excludes all seven days of the week: the calendar would have no working day`},
		{"every weekday, mixed names", Spec{Name: "us", Weekdays: []string{"Monday", "TUE", "wed", "thursday", "fri", "sat", "sun", "sun"}},
			`calendar "us": weekdays "Monday,TUE,wed,thursday,fri,sat,sun,sun": excludes all seven days of the week: the calendar would have no working day`},
		{"too long a range", Spec{Name: "us", Ranges: []Range{{From: "2027-01-01", To: "2028-01-02"}}},
			`calendar "us": ranges "2027-01-01/2028-01-02": excludes 367 consecutive days (with the weekdays), more than 366: a calendar must leave a working day in every 367 days, so that a slot it excludes can move to one`},
		{"a year and a day through weekends", Spec{Name: "us", Weekdays: []string{"sat", "sun"},
			// 2027-01-04 is a Monday, 2028-01-07 a Friday: with the weekends around them, 2027-01-02 to 2028-01-09.
			Ranges: []Range{{From: "2027-01-04", To: "2027-07-02"}, {From: "2027-07-05", To: "2028-01-07"}}},
			`calendar "us": ranges "2027-01-02/2028-01-09": excludes 373 consecutive days (with the weekdays), more than 366: a calendar must leave a working day in every 367 days, so that a slot it excludes can move to one`},
		{"dates alone", Spec{Name: "us", Dates: consecutive("2027-01-01", 367)},
			`calendar "us": dates "2027-01-01/2028-01-02": excludes 367 consecutive days (with the weekdays), more than 366: a calendar must leave a working day in every 367 days, so that a slot it excludes can move to one`},
		{"too many entries", Spec{Name: "us", Dates: many},
			`calendar "us": dates: the calendar lists 10001 dates, ranges and weekdays, more than the limit of 10000`},
		{"too many weekdays", Spec{Name: "us", Weekdays: many},
			`calendar "us": weekdays: the calendar lists 10001 dates, ranges and weekdays, more than the limit of 10000`},
		{"a long run of dates beside a range", Spec{Name: "us", Dates: consecutive("2027-01-01", 367), Ranges: []Range{{"2029-01-01", "2029-01-31"}}},
			`calendar "us": dates "2027-01-01/2028-01-02": excludes 367 consecutive days (with the weekdays), more than 366: a calendar must leave a working day in every 367 days, so that a slot it excludes can move to one`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.spec.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *FieldError", err)
			}
			if got := fe.Error(); got != tt.want {
				t.Errorf("Validate():\n got %s\nwant %s", got, tt.want)
			}
			if _, cerr := tt.spec.Compile(); cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("Compile() = %v, want the error of Validate", cerr)
			}
		})
	}
}

// consecutive returns n consecutive dates from the date first.
func consecutive(first string, n int) []string {
	d, err := parseDate(first)
	if err != nil {
		panic(err)
	}
	out := make([]string, n)
	for i := range out {
		out[i] = formatDay(d + int64(i))
	}
	return out
}

// A whole year (366 days, a leap year) is the longest run a calendar may exclude; a range of 2027 with the
// surrounding weekends is 366 days too, and valid.
func TestLongestRunAllowed(t *testing.T) {
	t.Parallel()
	for _, s := range []Spec{
		{Name: "leap", Ranges: []Range{{From: "2028-01-01", To: "2028-12-31"}}},
		{Name: "year", Dates: consecutive("2027-01-01", 366)},
		// 2027-01-04 (Mon) to 2027-12-31 (Fri), with weekends: from 2027-01-02 to 2028-01-02, 366 days.
		{Name: "weekends", Weekdays: []string{"sat", "sun"}, Ranges: []Range{{From: "2027-01-04", To: "2027-12-31"}}},
	} {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
	}
	if err := (Spec{Name: "leap", Ranges: []Range{{From: "2028-01-01", To: "2029-01-01"}}}).Validate(); err == nil {
		t.Error("a range of 367 days is valid")
	}
}

// Validate lists every problem (up to 20, then a count).
func TestValidateListsAll(t *testing.T) {
	t.Parallel()
	err := Spec{Name: "Bad", TZ: "Nowhere/X", Dates: []string{"x"}, Weekdays: []string{"y"}}.Validate()
	var lines []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		lines = append(lines, e.Error())
	}
	want := []string{
		`calendar "Bad": name "Bad": must be 1 to 128 characters of a-z, 0-9, '.', '_' and '-'`,
		`calendar "Bad": tz "Nowhere/X": unknown time zone (want an IANA name such as "Europe/Berlin"): unknown time zone Nowhere/X`,
		`calendar "Bad": dates[0] "x": not a date (want YYYY-MM-DD)`,
		`calendar "Bad": weekdays[0] "y": not a day of the week (want mon, tue, wed, thu, fri, sat or sun)`,
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("Validate():\n got %q\nwant %q", lines, want)
	}

	bad := make([]string, 50)
	for i := range bad {
		bad[i] = fmt.Sprint(i)
	}
	err = Spec{Name: "many", Dates: bad}.Validate()
	errs := err.(interface{ Unwrap() []error }).Unwrap()
	if len(errs) != 21 || errs[20].Error() != `calendar "many": 30 more problems` {
		t.Errorf("Validate() of 50 bad dates: %d errors, the last %v", len(errs), errs[len(errs)-1])
	}
}

func TestCompileNormalizes(t *testing.T) {
	t.Parallel()
	c, err := Spec{
		Name:     "de",
		TZ:       "Europe/Berlin",
		Dates:    []string{"2027-12-26", "2027-01-01", "2027-12-25", "2027-01-01"},
		Ranges:   []Range{{"2027-08-01", "2027-08-14"}, {"2027-07-01", "2027-07-02"}, {"2027-08-01", "2027-08-14"}},
		Weekdays: []string{"Sunday", "sat", "SUN"},
	}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{
		Name:     "de",
		TZ:       "Europe/Berlin",
		Dates:    []string{"2027-01-01", "2027-12-25", "2027-12-26"},
		Ranges:   []Range{{"2027-07-01", "2027-07-02"}, {"2027-08-01", "2027-08-14"}},
		Weekdays: []string{"sat", "sun"},
	}
	if got := c.Spec(); !reflect.DeepEqual(got, want) {
		t.Errorf("Spec():\n got %+v\nwant %+v", got, want)
	}
	if c.Name() != "de" || c.Location().String() != "Europe/Berlin" {
		t.Errorf("Name, Location = %q, %v", c.Name(), c.Location())
	}
	// The Spec is the caller's to change.
	s := c.Spec()
	s.Dates[0] = "2030-01-01"
	if c.Spec().Dates[0] != "2027-01-01" {
		t.Error("changing Spec's result changed the calendar")
	}
}

func TestExcludes(t *testing.T) {
	t.Parallel()
	c, err := Spec{
		Name:     "de",
		TZ:       "Europe/Berlin",
		Dates:    []string{"2027-10-04", "2027-12-25"},
		Ranges:   []Range{{"2027-12-28", "2027-12-30"}, {"2027-12-29", "2028-01-01"}}, // overlapping: merged
		Weekdays: []string{"sun"},
	}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		at   string
		want bool
	}{
		{"2027-10-04T12:00:00+02:00", true},  // a date
		{"2027-10-03T21:59:59Z", true},       // 23:59:59 on Sunday 2027-10-03 in Berlin: a weekday
		{"2027-10-03T22:00:00Z", true},       // 00:00 on 2027-10-04 in Berlin
		{"2027-10-04T22:00:00Z", false},      // 00:00 on 2027-10-05 in Berlin
		{"2027-10-04T21:59:59Z", true},       // still the 4th in Berlin
		{"2027-12-27T12:00:00+01:00", false}, // Monday between a date and a range
		{"2027-12-28T00:00:00+01:00", true},
		{"2027-12-31T23:59:59+01:00", true},
		{"2028-01-01T23:59:59+01:00", true},
		{"2028-01-02T00:00:00+01:00", true}, // a Sunday
		{"2028-01-03T00:00:00+01:00", false},
		{"2027-12-24T23:30:00Z", true}, // 00:30 on the 25th in Berlin
		{"2027-12-24T22:59:59Z", false},
	}
	for _, tt := range tests {
		at, err := time.Parse(time.RFC3339, tt.at)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Excludes(at); got != tt.want {
			t.Errorf("Excludes(%s) = %v, want %v", tt.at, got, tt.want)
		}
	}
	for _, tt := range []struct {
		y    int
		m    time.Month
		d    int
		want bool
	}{{2027, 12, 25, true}, {2027, 12, 26, true}, {2027, 12, 27, false}, {2027, 12, 30, true}, {2028, 1, 1, true}, {2027, 12, 32, true}} {
		if got := c.ExcludesDate(tt.y, tt.m, tt.d); got != tt.want {
			t.Errorf("ExcludesDate(%d, %d, %d) = %v, want %v", tt.y, tt.m, tt.d, got, tt.want)
		}
	}
}

func TestWeekdayOfDayNumber(t *testing.T) {
	t.Parallel()
	for d := time.Date(1899, 12, 25, 0, 0, 0, 0, time.UTC); d.Year() < 2101; d = d.AddDate(0, 0, 13) {
		n := dayNumber(d.Date())
		if got := weekday(n); got != d.Weekday() {
			t.Fatalf("weekday(%s) = %v, want %v", d.Format(dateLayout), got, d.Weekday())
		}
		if got := formatDay(n); got != d.Format(dateLayout) {
			t.Fatalf("formatDay(dayNumber(%s)) = %s", d.Format(dateLayout), got)
		}
	}
}
