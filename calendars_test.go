package tickgroup

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/changelog"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

// ends returns the end offset of each of the namespace's topics that the calendar changes write (summed over
// partitions; 0 for a topic that does not exist), to tell that a refused change wrote nothing.
func ends(t *testing.T, s *Schedules) map[string]int64 {
	t.Helper()
	topics := []string{s.names.Calendars, s.names.Schedules, s.names.Changes, s.names.Limits}
	listed, err := kadm.NewClient(s.cl).ListEndOffsets(t.Context(), topics...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	listed.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[o.Topic] += o.Offset
		}
	})
	return out
}

// unchanged checks that the topics' ends are still before.
func unchanged(t *testing.T, s *Schedules, what string, before map[string]int64) {
	t.Helper()
	if after := ends(t, s); !reflect.DeepEqual(after, before) {
		t.Errorf("%s: the topics' ends went from %v to %v: a refused change was written", what, before, after)
	}
}

func cron(name, expr string) Schedule { return Schedule{Name: name, Cron: expr, TZ: "Europe/Berlin"} }

// TestCalendarsLifecycle: a calendar is validated before anything is written; a schedule excludes only calendars
// that exist, whatever its policy for an excluded slot; its
// next runs skip the days they exclude, and a calendar is deleted only once no schedule excludes it; every
// change is in the change log, confirmed, with the calendars before and after. No refusal writes anything.
func TestCalendarsLifecycle(t *testing.T) {
	t.Parallel()
	s, ctx := newKfakeSchedules(t, "calendars-test")
	start := time.Now().Add(-time.Second)
	if err := s.ensureCalendarsTopic(ctx); err != nil {
		t.Fatal(err)
	}
	before := ends(t, s)
	refused(t, "no working day", s.PutCalendar(ctx, Calendar{Name: "de", Weekdays: strings.Split("mon,tue,wed,thu,fri,sat,sun", ",")}), "no working day")
	refused(t, "a malformed date", s.PutCalendar(ctx, Calendar{Name: "de", Dates: []string{"2026-12-32"}}), `dates[0] "2026-12-32": not a date`)
	refused(t, "an unknown zone", s.PutCalendar(ctx, Calendar{Name: "de", TZ: "Europe/Bonn", Weekdays: []string{"sun"}}), `tz "Europe/Bonn": unknown time zone`)
	refused(t, "a bad name", s.PutCalendar(ctx, Calendar{Name: "DE", Weekdays: []string{"sun"}}), `name "DE"`)
	refused(t, "a reason with a control character", s.PutCalendar(ctx, Calendar{Name: "de", Weekdays: []string{"sun"}}, Reason("a\x1b")), "reason")
	refused(t, "a range backwards", s.PutCalendar(ctx, Calendar{Name: "de", Ranges: []DateRange{{From: "2026-12-31", To: "2026-12-24"}}}), "from is after to")
	unchanged(t, s, "refused calendars", before)
	if cs, err := s.Calendars(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("Calendars after refused puts = %+v, %v; want none", cs, err)
	}

	de := Calendar{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-26", "2026-12-25"}, Weekdays: []string{"Sunday", "sat"}}
	if err := s.PutCalendar(ctx, de, Reason("holidays"), By("deploy-7")); err != nil {
		t.Fatal(err)
	}
	stored := Calendar{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-25", "2026-12-26"}, Weekdays: []string{"sat", "sun"}}
	if got, err := s.GetCalendar(ctx, "de"); err != nil || !reflect.DeepEqual(got, stored) {
		t.Errorf("GetCalendar = %+v, %v; want it as stored, %+v", got, err, stored)
	}
	if _, err := s.GetCalendar(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetCalendar of an unknown calendar: %v", err)
	}
	if err := s.DeleteCalendar(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteCalendar of an unknown calendar: %v", err)
	}

	// A schedule that moves its excluded slots is written as one that skips them: a move of an unknown calendar
	// is refused as such.
	daily := cron("close", "0 18 * * *")
	daily.Exclude = []string{"de"}
	moved := daily
	moved.Name, moved.OnExcluded, moved.Exclude = "moved", OnExcludedNextBusinessDay, []string{"nope"}
	before = ends(t, s)
	refused(t, "a move of an unknown calendar", s.Put(ctx, moved), `schedule "moved": exclude: calendar "nope": no such calendar`)
	unchanged(t, s, "a schedule moving by an unknown calendar", before)

	unknown := daily
	unknown.Name, unknown.Exclude = "typo", []string{"de", "dee"}
	refused(t, "an unknown calendar", s.Put(ctx, unknown), `schedule "typo": exclude: calendar "dee": no such calendar (create it first: ticker calendar put dee ...)`)
	refused(t, "Apply of it", func() error { _, err := s.Apply(ctx, []Schedule{unknown}, false); return err }(), "no such calendar")
	unchanged(t, s, "a schedule excluding an unknown calendar", before)
	if err := s.Put(ctx, daily); err != nil {
		t.Fatalf("a schedule excluding the calendar: %v", err)
	}
	if got, err := s.Get(ctx, "close"); err != nil || !reflect.DeepEqual(got.Schedule.Exclude, []string{"de"}) {
		t.Errorf("Get(close) = %+v, %v", got, err)
	}
	noWeekends(t, s, "close") // its next runs skip the days the calendar excludes, as the leader does
	for i := range 6 {
		sc := daily
		sc.Name = fmt.Sprintf("job-%d", i)
		if err := s.Put(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	before = ends(t, s)
	refused(t, "deleting an excluded calendar", s.DeleteCalendar(ctx, "de"),
		`calendar "de": still excluded by 7 schedules ("close", "job-0", "job-1", "job-2", "job-3" and 2 more)`)
	unchanged(t, s, "deleting an excluded calendar", before)

	// A change of the calendar is allowed while it is excluded; once no schedule excludes it, it goes.
	if err := s.PutCalendar(ctx, Calendar{Name: "de", TZ: "Europe/Berlin", Weekdays: []string{"sun"}}, Reason("fewer")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, nil, true); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteCalendar(ctx, "de", Reason("unused")); err != nil {
		t.Fatal(err)
	}
	if cs, err := s.Calendars(ctx); err != nil || len(cs) != 0 {
		t.Errorf("Calendars after the deletion = %+v, %v", cs, err)
	}

	log, stats, err := s.ChangeLog(ctx, "", start)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var cals []ChangeRecord
	for _, r := range log {
		if r.Calendar == "" {
			continue
		}
		cals = append(cals, r)
		got = append(got, string(r.Op)+":"+r.Calendar+":"+r.Reason)
		if !r.Confirmed || r.Schedule != "" || r.Limit != "" || r.Before != nil || r.After != nil {
			t.Errorf("calendar change %+v: not confirmed, or another kind's fields set", r)
		}
	}
	if want := []string{"calendar_put:de:holidays", "calendar_put:de:fewer", "calendar_delete:de:unused"}; !reflect.DeepEqual(got, want) || stats != (ChangeLogStats{}) {
		t.Fatalf("the calendars' changes: %q, %+v; want %q", got, stats, want)
	}
	if first := cals[0]; first.CalendarBefore != nil || first.CalendarAfter == nil || !reflect.DeepEqual(*first.CalendarAfter, stored) || first.By.Name != "deploy-7" {
		t.Errorf("the first put: %+v", first)
	}
	if last := cals[2]; last.CalendarAfter != nil || last.CalendarBefore == nil || !reflect.DeepEqual(last.CalendarBefore.Weekdays, []string{"sun"}) {
		t.Errorf("the delete: %+v", last)
	}
}

// noWeekends checks that the next runs of schedule name skip the weekends in Berlin (which calendar de excludes).
func noWeekends(t *testing.T, s *Schedules, name string) {
	t.Helper()
	berlin, _ := time.LoadLocation("Europe/Berlin")
	next, err := s.Next(t.Context(), name, 6)
	if err != nil || len(next) != 6 {
		t.Fatalf("Next(%s) = %v, %v", name, next, err)
	}
	for _, x := range next {
		if d := x.In(berlin).Weekday(); d == time.Saturday || d == time.Sunday {
			t.Errorf("Next(%s): %s is a %s, which de excludes", name, x, d)
		}
	}
}

// TestApplyFileWritesCalendarsFirst: an apply file's calendars are planned and written with its limits and
// schedules, first, and checked as they will be once written: a schedule may exclude a calendar the same file
// defines, and one excluding a calendar nobody defines is refused with nothing written. A file whose schedule
// moves excluded slots (which this build does not honour) is refused whole; its calendars alone are written.
func TestApplyFileWritesCalendarsFirst(t *testing.T) {
	t.Parallel()
	s, ctx := newKfakeSchedules(t, "applyfile-calendars")
	const file = `calendars:
  - name: de
    tz: Europe/Berlin
    dates: [2026-12-25, 2026-12-26]
    ranges: [2026-12-28..2026-12-31]
    weekdays: [sat, sun]
limits:
  - {name: api, concurrency: 2}
schedules:
  - name: close
    cron: "0 18 * * *"
    tz: Europe/Berlin
    limit: api
    exclude: [de]
    on_excluded: previous_business_day
`
	f, err := ParseApplyFile(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Calendars) != 1 || !reflect.DeepEqual(f.Calendars[0].Ranges, []DateRange{{From: "2026-12-28", To: "2026-12-31"}}) ||
		f.Schedules[0].OnExcluded != OnExcludedPreviousBusinessDay {
		t.Fatalf("ParseApplyFile = %+v", f)
	}
	var p FilePlan
	p, err = s.PlanFile(ctx, f, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Calendars) != 1 || p.Calendars[0].Op != ChangeCreate || p.Calendars[0].Calendar.Describe() != "2 dates, 1 range, weekdays sat,sun, tz Europe/Berlin" ||
		len(p.Limits) != 1 || len(p.Schedules) != 1 {
		t.Fatalf("PlanFile = %+v", p)
	}
	if err := s.WriteFile(ctx, p, Reason("first")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, "close"); err != nil || !reflect.DeepEqual(got.Schedule.Exclude, []string{"de"}) || got.Schedule.OnExcluded != OnExcludedPreviousBusinessDay {
		t.Errorf("Get(close) = %+v, %v", got, err)
	}
	if p, err := s.PlanFile(ctx, f, false); err != nil || len(p.Calendars)+len(p.Limits)+len(p.Schedules) != 0 {
		t.Errorf("PlanFile of what is written = %+v, %v; want nothing", p, err)
	}
	// The same calendar written otherwise (another order, other spellings) is no change.
	same := f
	same.Calendars = []Calendar{{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-26", "2026-12-25"}, Ranges: f.Calendars[0].Ranges, Weekdays: []string{"Sunday", "saturday"}}}
	if p, err := s.PlanFile(ctx, same, false); err != nil || len(p.Calendars) != 0 {
		t.Errorf("PlanFile of the same calendar written otherwise = %+v, %v", p, err)
	}

	// A schedule excluding a calendar nobody defines: nothing of the file is written.
	before := ends(t, s)
	typo := cron("typo", "0 9 * * *")
	typo.Exclude = []string{"fr"}
	bad := ApplyFile{Calendars: []Calendar{{Name: "us", Weekdays: []string{"sun"}}}, Schedules: []Schedule{typo}}
	_, err = s.PlanFile(ctx, bad, false)
	refused(t, "a misspelt calendar", err, `calendar "fr": no such calendar`)
	refused(t, "WriteFile of it", s.WriteFile(ctx, FilePlan{Calendars: []CalendarChange{{Op: ChangeCreate, Name: "us", Calendar: bad.Calendars[0]}},
		Schedules: []Change{{Op: ChangeCreate, Name: "typo", Schedule: typo}}}), "no such calendar")
	refused(t, "WriteFile of a calendar under another name", s.WriteFile(ctx, FilePlan{Calendars: []CalendarChange{{Op: ChangeCreate, Name: "fr", Calendar: bad.Calendars[0]}}}),
		`the definition is of "us"`)
	unchanged(t, s, "a refused file", before)
}

// TestParseApplyFileCalendars: an apply file's calendars section, and its mistakes.
func TestParseApplyFileCalendars(t *testing.T) {
	t.Parallel()
	f, err := ParseApplyFile(strings.NewReader("calendars:\n  - {name: weekend, weekdays: [sat, sun]}\n"))
	if err != nil || len(f.Calendars) != 1 || f.Calendars[0].Name != "weekend" || len(f.Schedules)+len(f.Limits) != 0 {
		t.Errorf("calendars alone: %+v, %v", f, err)
	}
	for src, want := range map[string]string{
		"{}\n":                           `want a mapping with a list under "schedules", "limits" or "calendars"`,
		"calendars: []\ncalendars: []\n": `"calendars" is given twice`,
		"calendars:\n  - {name: de, weekday: [sun]}\n":                                  `calendars[0] ("de"): line 2: field "weekday": unknown field`,
		"calendars:\n  - name: de\n    weekdays: [mon, tue, wed, thu, fri, sat, sun]\n": `no working day`,
		"schedules:\n  - {name: x, every: 1m, on_excluded: skip}\n":                     `on_excluded "skip": is only for a schedule that excludes calendars`,
	} {
		if _, err := ParseApplyFile(strings.NewReader(src)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseApplyFile(%q) = %v, want an error saying %q", src, err, want)
		}
	}
	if _, err := ParseSchedules(strings.NewReader("calendars:\n  - {name: de, weekdays: [sun]}\n")); err == nil || !strings.Contains(err.Error(), "ParseApplyFile") {
		t.Errorf("ParseSchedules of a file with calendars: %v", err)
	}
}

// TestCalendarConversions: a Calendar is package calendar's Spec field for field, shares no memory with it, and
// Describe says what it excludes.
func TestCalendarConversions(t *testing.T) {
	t.Parallel()
	c := Calendar{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-25"}, Ranges: []DateRange{{From: "2026-12-28", To: "2026-12-31"}}, Weekdays: []string{"sun"}}
	in := c.internal()
	want := calendar.Spec{Name: "de", TZ: "Europe/Berlin", Dates: []string{"2026-12-25"}, Ranges: []calendar.Range{{From: "2026-12-28", To: "2026-12-31"}}, Weekdays: []string{"sun"}}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("internal = %+v, want %+v", in, want)
	}
	if back := fromCalendarSpec(in); !reflect.DeepEqual(back, c) {
		t.Errorf("fromCalendarSpec(internal) = %+v, want %+v", back, c)
	}
	in.Dates[0], in.Ranges[0].From, in.Weekdays[0] = "x", "x", "x"
	if c.Dates[0] != "2026-12-25" || c.Ranges[0].From != "2026-12-28" || c.Weekdays[0] != "sun" {
		t.Errorf("internal shares memory with the Calendar: %+v", c)
	}
	// Every field of the record is carried: the Spec's fields and the Calendar's are the same, by name.
	pub, spec := reflect.TypeFor[Calendar](), reflect.TypeFor[calendar.Spec]()
	if pub.NumField() != spec.NumField() {
		t.Errorf("Calendar has %d fields, calendar.Spec %d", pub.NumField(), spec.NumField())
	}
	for i := range spec.NumField() {
		f, ok := pub.FieldByName(spec.Field(i).Name)
		if !ok || f.Tag.Get("json") != spec.Field(i).Tag.Get("json") || f.Tag.Get("yaml") != spec.Field(i).Tag.Get("yaml") {
			t.Errorf("calendar.Spec.%s: no Calendar field of that name and tags", spec.Field(i).Name)
		}
	}
	for _, tc := range []struct {
		c    Calendar
		want string
	}{
		{c, "1 date, 1 range, weekdays sun, tz Europe/Berlin"},
		{Calendar{Name: "x", Dates: []string{"2026-01-01", "2026-01-02"}, TZ: "UTC"}, "2 dates"},
		{Calendar{Name: "x"}, "no day"},
	} {
		if got := tc.c.Describe(); got != tc.want {
			t.Errorf("Describe(%+v) = %q, want %q", tc.c, got, tc.want)
		}
	}
	if err := (Calendar{Name: "x", Weekdays: []string{"someday"}}).Validate(); err == nil || !strings.Contains(err.Error(), `weekdays[0] "someday"`) {
		t.Errorf("Validate = %v", err)
	}
}

// TestOnExcludedConstants: the API's policies are the values packages schedule and calendar read and write, and
// the change log's calendar ops are the internal ones.
func TestOnExcludedConstants(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ got, want, alsoWant string }{
		{string(OnExcludedSkip), schedule.OnExcludedSkip, string(calendar.Skip)},
		{string(OnExcludedNextBusinessDay), schedule.OnExcludedNextBusinessDay, string(calendar.NextBusinessDay)},
		{string(OnExcludedPreviousBusinessDay), schedule.OnExcludedPreviousBusinessDay, string(calendar.PreviousBusinessDay)},
		{string(ChangeLogCalendarPut), changelog.OpCalendarPut, changelog.OpCalendarPut},
		{string(ChangeLogCalendarDelete), changelog.OpCalendarDelete, changelog.OpCalendarDelete},
	} {
		if c.got != c.want || c.got != c.alsoWant {
			t.Errorf("constant %q, want %q and %q", c.got, c.want, c.alsoWant)
		}
	}
	if calendar.DefaultOnExcluded != calendar.Skip {
		t.Errorf("the default policy is %q; Schedule.OnExcluded says skip", calendar.DefaultOnExcluded)
	}
}

// TestImportICS: an iCalendar file becomes a Calendar; a malformed one is refused with its line.
func TestImportICS(t *testing.T) {
	t.Parallel()
	const ics = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\nUID:x@t\r\nDTSTART;VALUE=DATE:20261225\r\n" +
		"DTEND;VALUE=DATE:20261227\r\nSUMMARY:Christmas\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
	c, err := ImportICS(strings.NewReader(ics), ICSOptions{Name: "de", TZ: "Europe/Berlin"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Calendar{Name: "de", TZ: "Europe/Berlin", Ranges: []DateRange{{From: "2026-12-25", To: "2026-12-26"}}}); !reflect.DeepEqual(c, want) {
		t.Errorf("ImportICS = %+v, want %+v", c, want)
	}
	broken := strings.Replace(ics, "END:VEVENT\r\n", "", 1)
	if _, err := ImportICS(strings.NewReader(broken), ICSOptions{Name: "de"}); err == nil || !strings.Contains(err.Error(), "line") {
		t.Errorf("ImportICS of a malformed file: %v, want an error naming its line", err)
	}
}

// TestNextExcluding: next runs under the calendars a schedule excludes skip their days, in each calendar's zone;
// a calendar the list lacks is an error naming it, and a schedule without calendars lists its own slots.
func TestNextExcluding(t *testing.T) {
	t.Parallel()
	after := time.Date(2026, 12, 24, 12, 0, 0, 0, time.UTC) // a Thursday
	hourly := Schedule{Name: "h", Every: 6 * Duration(time.Hour), Exclude: []string{"xmas", "tokyo"}}
	cals := []Calendar{{Name: "xmas", Dates: []string{"2026-12-25"}}, {Name: "tokyo", TZ: "Asia/Tokyo", Dates: []string{"2026-12-27"}}}
	got, err := hourly.NextExcluding(after, 6, cals)
	var s []string
	for _, x := range got {
		s = append(s, x.Format("01-02T15"))
	}
	// Tokyo's 27th is 2026-12-26T15:00Z to 2026-12-27T15:00Z.
	if want := "12-24T18 12-26T00 12-26T06 12-26T12 12-27T18 12-28T00"; err != nil || strings.Join(s, " ") != want {
		t.Errorf("NextExcluding = %s, %v; want %s", strings.Join(s, " "), err, want)
	}
	if _, err := hourly.NextExcluding(after, 3, cals[:1]); err == nil || err.Error() != `schedule "h" excludes calendar "tokyo", which the namespace does not have: its leader emits nothing until it exists` {
		t.Errorf("a calendar missing: %v", err)
	}
	plain := Schedule{Name: "p", Every: Duration(time.Hour)}
	if got, err := plain.NextExcluding(after, 2, nil); err != nil || len(got) != 2 || !got[0].Equal(after.Add(time.Hour)) {
		t.Errorf("without calendars: %v, %v", got, err)
	}
}
