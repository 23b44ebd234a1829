package calendarstore

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/tickgroup/tickgroup/internal/calendar"
)

// parseList parses src, a YAML list, as an apply file's calendars.
func parseList(t *testing.T, src string) ([]calendar.Spec, error) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	return ParseList(doc.Content[0], "calendars")
}

func TestParseList(t *testing.T) {
	t.Parallel()
	got, err := parseList(t, `
- name: de
  tz: Europe/Berlin
  dates: [2026-12-25, "2026-12-26"]
  ranges:
    - {from: 2026-12-28, to: 2026-12-31}
    - 2027-08-01..2027-08-14
  weekdays: [sat, sun]
- name: weekends
  weekdays: [Saturday, sunday]
`)
	want := []calendar.Spec{
		{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-25", "2026-12-26"},
			Ranges:   []calendar.Range{{From: "2026-12-28", To: "2026-12-31"}, {From: "2027-08-01", To: "2027-08-14"}},
			Weekdays: []string{"sat", "sun"}},
		{Name: "weekends", Weekdays: []string{"Saturday", "sunday"}},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseList = %+v, %v; want %+v", got, err, want)
	}
}

func TestParseListErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		"{}":                             `line 1: want a list under "calendars"`,
		"- name: de\n  weekday: [sun]\n": `calendars[0] ("de"): line 2: field "weekday": unknown field (want name, tz, dates, ranges, weekdays)`,
		"- name: de\n  dates: [x]\n":     `calendars[0] ("de"): line 1: calendar "de": dates[0] "x": not a date (want YYYY-MM-DD)`,
		"- name: de\n  weekdays: [sun]\n  tz: Mars\n":                         `calendars[0] ("de"): line 1: calendar "de": tz "Mars": unknown time zone`,
		"- name: de\n  weekdays: [mon, tue, wed, thu, fri, sat, sun]\n":       `excludes all seven days of the week: the calendar would have no working day`,
		"- name: de\n  ranges: [{from: 2026-12-24}]\n":                        `calendars[0] ("de"): line 2: field "ranges": ranges[0]: line 2: want both from and to`,
		"- name: de\n  ranges: [{from: 2026-12-24, to: 2026-12-25, by: x}]\n": `field "by": unknown field (want from and to)`,
		"- name: de\n  ranges: [2026-12-24]\n":                                `range "2026-12-24": want FROM..TO`,
		"- name: de\n  ranges: 2026-12-24..2026-12-25\n":                      `want a list of ranges`,
		"- name: de\n  weekdays: [sun]\n- name: de\n  weekdays: [sat]\n":      `calendars[1] ("de"): line 3: name "de" is already used by calendars[0]`,
		"- name: de\n  name: us\n  weekdays: [sun]\n":                         `field "name" is given twice`,
		"- [de]\n": `calendars[0]: line 1: want a mapping of calendar fields`,
	} {
		if _, err := parseList(t, src); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseList(%q) = %v, want an error saying %q", src, err, want)
		}
	}
}

func TestParseRange(t *testing.T) {
	t.Parallel()
	if r, err := ParseRange(" 2026-12-24..2026-12-31 "); err != nil || r != (calendar.Range{From: "2026-12-24", To: "2026-12-31"}) {
		t.Errorf("ParseRange = %+v, %v", r, err)
	}
	for _, bad := range []string{"2026-12-24", "..2026-12-31", "2026-12-24..", ""} {
		if _, err := ParseRange(bad); err == nil {
			t.Errorf("ParseRange(%q) accepted", bad)
		}
	}
}
