package calendar

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

func importFile(t *testing.T, name string, opt ImportOptions) (Spec, error) {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return ImportICS(f, opt)
}

func TestImportICS(t *testing.T) {
	t.Parallel()
	christmases := func(from, to int) []Range {
		var out []Range
		for y := from; y <= to; y++ {
			out = append(out, Range{From: fmt.Sprintf("%d-12-25", y), To: fmt.Sprintf("%d-12-26", y)})
		}
		return out
	}
	tests := []struct {
		file string
		opt  ImportOptions
		want Spec
	}{
		// All-day events, the zone from X-WR-TIMEZONE: DTEND is exclusive, no DTEND is one day, DURATION, a
		// cancelled event excludes nothing; folded lines, CRLF, a nested VALARM.
		{"allday.ics", ImportOptions{Name: "closures"}, Spec{
			Name:   "closures",
			TZ:     "Europe/Berlin",
			Dates:  []string{"2027-08-01", "2027-12-25", "2027-12-26"},
			Ranges: []Range{{From: "2027-06-15", To: "2027-06-16"}, {From: "2027-12-27", To: "2027-12-31"}},
		}},
		// Timed events exclude the dates they touch in the calendar's zone, up to but not including their end.
		{"timed.ics", ImportOptions{Name: "windows", TZ: "Europe/Berlin"}, Spec{
			Name:   "windows",
			TZ:     "Europe/Berlin",
			Dates:  []string{"2027-03-06", "2027-03-10", "2027-04-01", "2027-04-10"},
			Ranges: []Range{{From: "2027-03-20", To: "2027-03-22"}},
		}},
		// The same file in New York: the maintenance is on its own date, the UTC hour on the 10th, the floating
		// event (now New York time) still touches three dates.
		{"timed.ics", ImportOptions{Name: "windows", TZ: "America/New_York"}, Spec{
			Name:   "windows",
			TZ:     "America/New_York",
			Dates:  []string{"2027-03-05", "2027-03-10", "2027-04-01", "2027-04-10"},
			Ranges: []Range{{From: "2027-03-20", To: "2027-03-22"}},
		}},
		// Recurring events: yearly for ten years from DTSTART, COUNT, a weekly rule with UNTIL in UTC, EXDATE,
		// RDATE and an overridden instance, monthly from the end with INTERVAL.
		{"rrule.ics", ImportOptions{Name: "recurring", TZ: "America/New_York"}, Spec{
			Name: "recurring",
			TZ:   "America/New_York",
			Dates: []string{"2026-11-26", "2027-01-04", "2027-01-12", "2027-01-25", "2027-01-31", "2027-02-01", "2027-02-03",
				"2027-07-31", "2027-11-25", "2028-11-23"},
			Ranges: christmases(2020, 2029),
		}},
		// Over a window: only what falls in it, and the yearly rule expanded there rather than from 2020.
		{"rrule.ics", ImportOptions{Name: "recurring", TZ: "America/New_York", From: "2027-01-05", To: "2036-12-25"}, Spec{
			Name:   "recurring",
			TZ:     "America/New_York",
			Dates:  []string{"2027-01-12", "2027-01-25", "2027-01-31", "2027-02-01", "2027-02-03", "2027-07-31", "2027-11-25", "2028-11-23", "2036-12-25"},
			Ranges: christmases(2027, 2035),
		}},
	}
	for _, tt := range tests {
		got, err := importFile(t, tt.file, tt.opt)
		if err != nil {
			t.Errorf("%s in %s: %v", tt.file, tt.opt.TZ, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s in %s:\n got %+v\nwant %+v", tt.file, tt.opt.TZ, got, tt.want)
		}
	}
}

func TestImportICSErrors(t *testing.T) {
	t.Parallel()
	event := func(lines ...string) string {
		return "BEGIN:VCALENDAR\nVERSION:2.0\nBEGIN:VEVENT\nUID:x@example.com\nSUMMARY:Holiday\n" + strings.Join(lines, "\n") + "\nEND:VEVENT\nEND:VCALENDAR\n"
	}
	nested := "BEGIN:VCALENDAR\n" + strings.Repeat("BEGIN:X\n", 8) + strings.Repeat("END:X\n", 8) + "END:VCALENDAR\n"
	var many strings.Builder
	many.WriteString("BEGIN:VCALENDAR\n")
	for i := range MaxICSEvents + 1 {
		fmt.Fprintf(&many, "BEGIN:VEVENT\nUID:%d\nDTSTART;VALUE=DATE:20270101\nEND:VEVENT\n", i)
	}
	many.WriteString("END:VCALENDAR\n")
	recurring := func(n int) string {
		var b strings.Builder
		b.WriteString("BEGIN:VCALENDAR\n")
		for i := range n {
			fmt.Fprintf(&b, "BEGIN:VEVENT\nUID:%d\nDTSTART;VALUE=DATE:20270101\nRRULE:FREQ=YEARLY;COUNT=1\nEND:VEVENT\n", i)
		}
		return b.String() + "END:VCALENDAR\n"
	}
	daily := func(uid string) string {
		return "BEGIN:VEVENT\nUID:" + uid + "\nDTSTART;VALUE=DATE:20270101\nRRULE:FREQ=DAILY\nEND:VEVENT\n"
	}

	tests := []struct {
		name, in string
		opt      ImportOptions
		want     string
	}{
		{"empty", "", ImportOptions{}, "parsing iCalendar: no BEGIN:VCALENDAR: not an iCalendar file"},
		{"not ics", "name: us\ndates: [2027-01-01]\n", ImportOptions{},
			"parsing iCalendar: line 1: NAME outside BEGIN:VCALENDAR"},
		{"garbage line", "BEGIN:VCALENDAR\nthis is not a property\nEND:VCALENDAR\n", ImportOptions{},
			`parsing iCalendar: line 2: not a content line (want NAME:value or NAME;PARAM=x:value): "this is not a property"`},
		{"unended event", "", ImportOptions{}, "parsing iCalendar: line 13: END:VCALENDAR, but VEVENT (line 9) is not ended"},
		{"unended calendar", "BEGIN:VCALENDAR\nBEGIN:VEVENT\nEND:VEVENT\n", ImportOptions{},
			"parsing iCalendar: BEGIN:VCALENDAR (line 1) is not ended"},
		{"end without begin", "BEGIN:VCALENDAR\nEND:VCALENDAR\nEND:VEVENT\n", ImportOptions{}, "parsing iCalendar: line 3: END:VEVENT without BEGIN"},
		{"event outside", "BEGIN:VEVENT\nEND:VEVENT\n", ImportOptions{}, "parsing iCalendar: line 1: BEGIN:VEVENT before BEGIN:VCALENDAR"},
		{"property outside", "VERSION:2.0\n", ImportOptions{}, "parsing iCalendar: line 1: VERSION outside BEGIN:VCALENDAR"},
		{"two calendars", "BEGIN:VCALENDAR\nEND:VCALENDAR\nBEGIN:VCALENDAR\nEND:VCALENDAR\n", ImportOptions{},
			"parsing iCalendar: line 3: a second VCALENDAR; import one calendar per file"},
		{"too deep", nested, ImportOptions{}, "parsing iCalendar: line 9: components nested more than 8 deep"},
		{"too many events", many.String(), ImportOptions{Name: "x"}, "parsing iCalendar: line 8002: more than 2000 events; split the file"},
		{"too large", strings.Repeat(" ", MaxICSBytes+1), ImportOptions{}, "reading iCalendar: the file is larger than 4 MiB"},
		{"no DTSTART", event("DTEND;VALUE=DATE:20270102"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DTSTART is missing`},
		{"bad date", event("DTSTART;VALUE=DATE:20271301"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DTSTART: "20271301" is not a date (want YYYYMMDD)`},
		{"bad date-time", event("DTSTART:2027-01-01T09:00"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DTSTART: "2027-01-01T09:00" is not a date or date-time (want YYYYMMDD or YYYYMMDDTHHMMSS, with Z for UTC)`},
		{"Windows zone", event("DTSTART;TZID=W. Europe Standard Time:20270101T090000"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DTSTART: TZID "W. Europe Standard Time": unknown time zone (want an IANA name such as "Europe/Berlin"): unknown time zone W. Europe Standard Time (VTIMEZONE definitions are not read; use IANA names)`},
		{"end before start", event("DTSTART;VALUE=DATE:20270105", "DTEND;VALUE=DATE:20270101"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DTEND "20270101" is before DTSTART`},
		{"end of another type", event("DTSTART;VALUE=DATE:20270105", "DTEND:20270106T000000Z"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DTEND "20270106T000000Z" is not of the same type as DTSTART (both dates or both date-times)`},
		{"end and duration", event("DTSTART;VALUE=DATE:20270105", "DTEND;VALUE=DATE:20270106", "DURATION:P1D"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): both DTEND and DURATION are given (RFC 5545 allows one)`},
		{"bad duration", event("DTSTART;VALUE=DATE:20270105", "DURATION:PT12H"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DURATION "PT12H": an all-day event's duration must be whole days or weeks`},
		{"too long", event("DTSTART;VALUE=DATE:20270101", "DTEND;VALUE=DATE:20290101"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): lasts 17544h0m0s, more than the 366 days a calendar may exclude in a row`},
		{"old", event("DTSTART;VALUE=DATE:17760704", "RRULE:FREQ=YEARLY"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DTSTART "17760704": the year must be between 1900 and 2999`},
		{"hourly", event("DTSTART:20270101T000000Z", "RRULE:FREQ=HOURLY;COUNT=3"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): RRULE "FREQ=HOURLY;COUNT=3": FREQ=HOURLY is not supported: a calendar excludes days; repeat the event daily or list its days`},
		{"Easter", event("DTSTART;VALUE=DATE:20270101", "RRULE:FREQ=YEARLY;BYEASTER=1"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): RRULE "FREQ=YEARLY;BYEASTER=1": unknown part "BYEASTER"`},
		{"bad rule", event("DTSTART;VALUE=DATE:20270101", "RRULE:FREQ=YEARLY;BYMONTH=13"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): RRULE "FREQ=YEARLY;BYMONTH=13": bymonth must be between 1 and 12`},
		{"bad until", event("DTSTART;VALUE=DATE:20270101", "RRULE:FREQ=YEARLY;UNTIL=soon"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): RRULE "FREQ=YEARLY;UNTIL=soon": UNTIL: "soon" is not a date or date-time (want YYYYMMDD or YYYYMMDDTHHMMSS, with Z for UTC)`},
		{"EXRULE", event("DTSTART;VALUE=DATE:20270101", "RRULE:FREQ=YEARLY", "EXRULE:FREQ=YEARLY;INTERVAL=2"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): EXRULE is not supported (RFC 5545 deprecates it); list the exceptions with EXDATE`},
		{"RDATE period", event("DTSTART;VALUE=DATE:20270101", "RDATE;VALUE=PERIOD:20270201T000000Z/PT1H"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): RDATE: VALUE=PERIOD is not supported; give the dates or date-times`},
		{"two DTSTARTs", event("DTSTART;VALUE=DATE:20270101", "DTSTART;VALUE=DATE:20270102"), ImportOptions{Name: "x"},
			`importing iCalendar: event 1 (line 3, UID "x@example.com", "Holiday"): DTSTART is given 2 times`},
		{"too many recurring events", recurring(MaxICSRecurring + 1), ImportOptions{Name: "x"},
			`importing iCalendar: event 201 (line 1002, UID "200"): more than 200 recurring events; split the file`},
		{"too many occurrences", "BEGIN:VCALENDAR\n" + daily("a") + daily("b") + daily("c") + "END:VCALENDAR\n", ImportOptions{Name: "x"},
			`importing iCalendar: event 3 (line 12, UID "c"): the events expand to more than 10000 occurrences, the most a calendar can list`},
		{"no working day", event("DTSTART;VALUE=DATE:20270101", "RRULE:FREQ=DAILY;COUNT=400"), ImportOptions{Name: "x"},
			`importing iCalendar: calendar "x": dates "2027-01-01/2028-02-04": excludes 400 consecutive days (with the weekdays), more than 366: a calendar must leave a working day in every 367 days, so that a slot it excludes can move to one`},
		{"bad name", event("DTSTART;VALUE=DATE:20270101"), ImportOptions{Name: "X"},
			`importing iCalendar: calendar "X": name "X": must be 1 to 128 characters of a-z, 0-9, '.', '_' and '-'`},
		{"bad zone", event("DTSTART;VALUE=DATE:20270101"), ImportOptions{Name: "x", TZ: "Nowhere"},
			`importing iCalendar: tz "Nowhere": unknown time zone (want an IANA name such as "Europe/Berlin"): unknown time zone Nowhere`},
		{"half a window", event("DTSTART;VALUE=DATE:20270101"), ImportOptions{Name: "x", From: "2027-01-01"},
			`importing iCalendar: set both the start and the end of the window, or neither`},
		{"long window", event("DTSTART;VALUE=DATE:20270101"), ImportOptions{Name: "x", From: "2027-01-01", To: "2037-01-01"},
			`importing iCalendar: the window 2027-01-01 to 2037-01-01 is longer than 10 years`},
		{"window backwards", event("DTSTART;VALUE=DATE:20270101"), ImportOptions{Name: "x", From: "2027-01-02", To: "2027-01-01"},
			`importing iCalendar: the window ends (2027-01-01) before it starts (2027-01-02)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var err error
			if tt.name == "unended event" {
				_, err = importFile(t, "malformed.ics", ImportOptions{Name: "x"})
			} else {
				_, err = ImportICS(strings.NewReader(tt.in), tt.opt)
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("ImportICS:\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}

// What the parser library does with hostile input, the importer turns into errors: never a panic.
func FuzzImportICS(f *testing.F) {
	for _, name := range []string{"allday.ics", "timed.ics", "rrule.ics", "malformed.ics"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;TZID=\"x:20270101T000000\nEND:VEVENT\nEND:VCALENDAR\n"))
	f.Add([]byte("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART;VALUE=DATE:20270101\nRRULE:FREQ=YEARLY;BYSETPOS=-400;BYDAY=MO\nEND:VEVENT\nEND:VCALENDAR\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ImportICS(strings.NewReader(string(b)), ImportOptions{Name: "fuzz"})
		if err == nil {
			if verr := s.Validate(); verr != nil {
				t.Fatalf("ImportICS returned an invalid spec: %v", verr)
			}
		}
	})
}
