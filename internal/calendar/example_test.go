package calendar_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// A monthly job on the 1st at 06:00 New York time, moved to the next business day when the 1st is a weekend
// day or a US holiday. Each run keeps its slot as its identity (the tick is invoices@slot); only when it runs
// changes.
func Example() {
	sch, err := schedule.Spec{Name: "invoices", Cron: "0 6 1 * *", TZ: "America/New_York"}.Compile()
	if err != nil {
		panic(err)
	}
	us, err := calendar.ParseYAML(strings.NewReader(`
name: us-federal
tz: America/New_York
weekdays: [sat, sun]
dates: [2027-01-01, 2027-01-18, 2027-02-15, 2027-05-31, 2027-07-05]
`))
	if err != nil {
		panic(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	e := calendar.Exclusion{Calendars: []*calendar.Calendar{us}, Policy: calendar.NextBusinessDay, Location: ny}
	runs, err := e.Upcoming(sch.Next, time.Date(2026, 12, 31, 0, 0, 0, 0, ny), 5)
	if err != nil {
		panic(err)
	}
	for _, r := range runs {
		fmt.Printf("invoices@%s runs %s\n", r.Slot.Format(time.RFC3339), r.At.In(ny).Format("Mon 2006-01-02 15:04 MST"))
	}
	// Output:
	// invoices@2027-01-01T11:00:00Z runs Mon 2027-01-04 06:00 EST
	// invoices@2027-02-01T11:00:00Z runs Mon 2027-02-01 06:00 EST
	// invoices@2027-03-01T11:00:00Z runs Mon 2027-03-01 06:00 EST
	// invoices@2027-04-01T10:00:00Z runs Thu 2027-04-01 06:00 EDT
	// invoices@2027-05-01T10:00:00Z runs Mon 2027-05-03 06:00 EDT
}

// One slot at a time: a Berlin calendar tests the slot's date in Berlin, whatever the schedule's zone.
func ExampleExclusion_Resolve() {
	de, err := calendar.Spec{Name: "de-national", TZ: "Europe/Berlin", Weekdays: []string{"sat", "sun"},
		Dates: []string{"2027-03-26", "2027-03-29"}}.Compile() // Good Friday, Easter Monday
	if err != nil {
		panic(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	slot := time.Date(2027, 3, 25, 20, 0, 0, 0, ny) // Thursday 20:00 in New York, Good Friday 01:00 in Berlin
	for _, p := range []calendar.OnExcluded{calendar.Skip, calendar.NextBusinessDay, calendar.PreviousBusinessDay} {
		o, err := calendar.Exclusion{Calendars: []*calendar.Calendar{de}, Policy: p, Location: ny}.Resolve(slot)
		if err != nil {
			panic(err)
		}
		at := "-"
		if !o.At.IsZero() {
			at = o.At.In(ny).Format("Mon 01-02 15:04")
		}
		fmt.Printf("%-21s %-7s %s (excluded by %s)\n", p, o.Action, at, o.Calendar)
	}
	// Output:
	// skip                  skipped - (excluded by de-national)
	// next_business_day     moved   Mon 03-29 20:00 (excluded by de-national)
	// previous_business_day moved   Wed 03-24 20:00 (excluded by de-national)
}

// A holiday feed in iCalendar form, imported as a calendar's dates.
func ExampleImportICS() {
	const ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//example//holidays//EN\r\n" +
		"BEGIN:VEVENT\r\nUID:christmas\r\nDTSTART;VALUE=DATE:20271225\r\nDTEND;VALUE=DATE:20271227\r\n" +
		"RRULE:FREQ=YEARLY;COUNT=2\r\nSUMMARY:Christmas\r\nEND:VEVENT\r\n" +
		"BEGIN:VEVENT\r\nUID:unity\r\nDTSTART;VALUE=DATE:20271003\r\nSUMMARY:German Unity Day\r\nEND:VEVENT\r\n" +
		"END:VCALENDAR\r\n"
	s, err := calendar.ImportICS(strings.NewReader(ics), calendar.ImportOptions{Name: "de-national", TZ: "Europe/Berlin"})
	if err != nil {
		panic(err)
	}
	b, err := calendar.Encode(s)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	// Output:
	// {"v":1,"name":"de-national","tz":"Europe/Berlin","dates":["2027-10-03"],"ranges":[{"from":"2027-12-25","to":"2027-12-26"},{"from":"2028-12-25","to":"2028-12-26"}]}
}
