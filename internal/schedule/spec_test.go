package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	start := mustTime(t, "2026-01-01T00:00:00Z")
	before := start.Add(-time.Hour)
	tests := []struct {
		name      string
		spec      Spec
		wantField string
		want      string // the whole message of the first FieldError
	}{
		{"bad cron minute", Spec{Name: "scan", Cron: "61 * * * *"}, "cron",
			`schedule "scan": cron "61 * * * *": minute 61 out of range 0-59`},
		{"bad cron hour in seconds form", Spec{Name: "scan", Cron: "0 0 24 * * *"}, "cron",
			`schedule "scan": cron "0 0 24 * * *": hour 24 out of range 0-23`},
		{"bad cron dow 7", Spec{Name: "scan", Cron: "0 0 * * 7"}, "cron",
			`schedule "scan": cron "0 0 * * 7": day-of-week 7 out of range 0-6 (0 is Sunday)`},
		{"bad cron word", Spec{Name: "scan", Cron: "0 0 * foo *"}, "cron",
			`schedule "scan": cron "0 0 * foo *": month "foo" is not a number`},
		{"bad cron step", Spec{Name: "scan", Cron: "*/0 * * * *"}, "cron",
			`schedule "scan": cron "*/0 * * * *": minute step "0" must be a positive number`},
		{"bad cron backwards", Spec{Name: "scan", Cron: "0 5-2 * * *"}, "cron",
			`schedule "scan": cron "0 5-2 * * *": hour range 5-2 runs backwards (wrap-around ranges are not supported)`},
		{"bad cron field count", Spec{Name: "scan", Cron: "* * * *"}, "cron",
			`schedule "scan": cron "* * * *": has 4 fields, want 5 (minute hour day-of-month month day-of-week) or 6 (with leading seconds)`},
		{"bad cron empty list", Spec{Name: "scan", Cron: "1,,2 * * * *"}, "cron",
			`schedule "scan": cron "1,,2 * * * *": minute field "1,,2" has an empty list element`},
		{"cron never fires", Spec{Name: "scan", Cron: "0 0 31 4,6 *"}, "cron",
			`schedule "scan": cron "0 0 31 4,6 *": day-of-month never occurs in the months given, so the schedule would never run`},
		{"cron @every", Spec{Name: "scan", Cron: "@every 1m"}, "cron",
			`schedule "scan": cron "@every 1m": @every is not supported here; use the every field`},
		{"cron TZ prefix", Spec{Name: "scan", Cron: "CRON_TZ=Europe/Berlin 0 2 * * *"}, "cron",
			`schedule "scan": cron "CRON_TZ=Europe/Berlin 0 2 * * *": CRON_TZ= and TZ= prefixes are not supported; use the tz field`},
		{"cron unknown macro", Spec{Name: "scan", Cron: "@fortnightly"}, "cron",
			`schedule "scan": cron "@fortnightly": unknown macro @fortnightly (want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)`},
		{"unknown zone", Spec{Name: "scan", Cron: "0 2 * * *", TZ: "Mars/Olympus"}, "tz",
			`schedule "scan": tz "Mars/Olympus": unknown time zone (want an IANA name such as "Europe/Berlin"): unknown time zone Mars/Olympus`},
		{"local zone", Spec{Name: "scan", Cron: "0 2 * * *", TZ: "Local"}, "tz", ""},
		{"bad name", Spec{Name: "Scan Job", Every: Duration(time.Minute)}, "name",
			`schedule "Scan Job": name "Scan Job": must be 1 to 128 characters of a-z, 0-9, '.', '_' and '-'`},
		{"empty name", Spec{Every: Duration(time.Minute)}, "name",
			`schedule: name: must be 1 to 128 characters of a-z, 0-9, '.', '_' and '-'`},
		{"long name", Spec{Name: strings.Repeat("a", 129), Every: Duration(time.Minute)}, "name", ""},
		{"every too short", Spec{Name: "scan", Every: Duration(500 * time.Millisecond)}, "every",
			`schedule "scan": every "500ms": must be at least 1s`},
		{"every fractional", Spec{Name: "scan", Every: Duration(1500 * time.Millisecond)}, "every",
			`schedule "scan": every "1.5s": must be a whole number of seconds`},
		{"both every and cron", Spec{Name: "scan", Every: Duration(time.Minute), Cron: "* * * * *"}, "cron",
			`schedule "scan": cron "* * * * *": set either every or cron, not both`},
		{"neither every nor cron", Spec{Name: "scan"}, "every",
			`schedule "scan": every: one of every or cron is required (or after, for a chain)`},
		{"offset too big", Spec{Name: "scan", Every: Duration(time.Minute), Offset: Duration(time.Minute)}, "offset",
			`schedule "scan": offset "1m0s": must be at least 0 and less than every (1m0s)`},
		{"offset with cron", Spec{Name: "scan", Cron: "* * * * *", Offset: Duration(time.Second)}, "offset", ""},
		{"oversize payload", Spec{Name: "scan", Every: Duration(time.Minute), Payload: strings.Repeat("x", MaxPayload+1)}, "payload",
			`schedule "scan": payload: is 65537 bytes, more than the limit of 65536`},
		{"bad catchup", Spec{Name: "scan", Every: Duration(time.Minute), Catchup: "some"}, "catchup",
			`schedule "scan": catchup "some": must be "skip", "latest" or "all"`},
		{"negative timeout", Spec{Name: "scan", Every: Duration(time.Minute), Timeout: Duration(-time.Second)}, "timeout",
			`schedule "scan": timeout "-1s": must be between 0 and 168h0m0s (0 means the worker's --timeout)`},
		{"timeout over a week", Spec{Name: "scan", Every: Duration(time.Minute), Timeout: Duration(200 * time.Hour)}, "timeout", ""},
		{"max attempts over the limit", Spec{Name: "scan", Every: Duration(time.Minute), MaxAttempts: MaxMaxAttempts + 1}, "max_attempts",
			`schedule "scan": max_attempts "101": must be between 0 and 100 (0 means the worker's --max-attempts)`},
		{"tz with every", Spec{Name: "scan", Every: Duration(time.Hour), TZ: "Europe/Berlin"}, "tz",
			`schedule "scan": tz "Europe/Berlin": only applies to cron schedules (every is counted in real time from the Unix epoch)`},
		{"jitter not below every", Spec{Name: "scan", Every: Duration(time.Minute), Jitter: Duration(time.Minute)}, "jitter", ""},
		{"cron jitter over an hour", Spec{Name: "scan", Cron: "@daily", Jitter: Duration(2 * time.Hour)}, "jitter", ""},
		{"shards", Spec{Name: "scan", Every: Duration(time.Minute), Shards: MaxShards + 1}, "shards", ""},
		{"catchup_max", Spec{Name: "scan", Every: Duration(time.Minute), CatchupMax: -1}, "catchup_max", ""},
		{"deadline", Spec{Name: "scan", Every: Duration(time.Minute), Deadline: Duration(-time.Second)}, "deadline", ""},
		{"a chain to itself", Spec{Name: "scan", After: "scan"}, "after", `schedule "scan": after "scan": is the schedule itself: a chain runs after another schedule`},
		{"a chain with a cron", Spec{Name: "report", After: "scan", Cron: "@daily"}, "cron", `schedule "report": cron: does not apply to a chain (after): it runs when scan's slots end, not on slots of its own`},
		{"a chain's unknown when", Spec{Name: "report", After: "scan", When: "always"}, "when", ""},
		{"when without after", Spec{Name: "report", Every: Duration(time.Minute), When: WhenAny}, "when", ""},
		{"finish_by before start_by", Spec{Name: "scan", Every: Duration(time.Minute), StartBy: Duration(time.Minute), FinishBy: Duration(30 * time.Second)}, "finish_by",
			`schedule "scan": finish_by "30s": must be after start_by (1m0s): a run cannot finish before it starts`},
		{"start_by under a second", Spec{Name: "scan", Every: Duration(time.Minute), StartBy: Duration(time.Millisecond)}, "start_by",
			`schedule "scan": start_by "1ms": must be between 1s and 168h0m0s (0 means none)`},
		{"finish_by over a week", Spec{Name: "scan", Every: Duration(time.Minute), FinishBy: Duration(200 * time.Hour)}, "finish_by", ""},
		{"end before start", Spec{Name: "scan", Every: Duration(time.Minute), Start: &start, End: &before}, "end", ""},
		{"exclude a bad name", Spec{Name: "scan", Cron: "@daily", Exclude: []string{"ok", "Bank Holidays"}}, "exclude",
			`schedule "scan": exclude "Bank Holidays": is no calendar name: 1 to 128 characters of a-z, 0-9, '.', '_' and '-', not only dots`},
		{"exclude dots", Spec{Name: "scan", Cron: "@daily", Exclude: []string{".."}}, "exclude", ""},
		{"exclude twice", Spec{Name: "scan", Cron: "@daily", Exclude: []string{"de", "de"}}, "exclude",
			`schedule "scan": exclude "de": is listed twice`},
		{"exclude too many", Spec{Name: "scan", Cron: "@daily", Exclude: strings.Split("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q", ",")}, "exclude",
			`schedule "scan": exclude: lists 17 calendars, more than the limit of 16`},
		{"unknown on_excluded", Spec{Name: "scan", Cron: "@daily", Exclude: []string{"de"}, OnExcluded: "next_day"}, "on_excluded",
			`schedule "scan": on_excluded "next_day": must be "skip", "next_business_day" or "previous_business_day"`},
		{"on_excluded alone", Spec{Name: "scan", Cron: "@daily", OnExcluded: OnExcludedSkip}, "on_excluded",
			`schedule "scan": on_excluded "skip": is only for a schedule that excludes calendars (exclude)`},
		{"every moved", Spec{Name: "scan", Every: Duration(time.Hour), Exclude: []string{"de"}, OnExcluded: OnExcludedNextBusinessDay}, "on_excluded",
			`schedule "scan": on_excluded "next_business_day": only applies to cron schedules: an every schedule's excluded slots are skipped (on_excluded: skip, the default)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.spec.Validate()
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate() = %v, want a *FieldError", err)
			}
			if fe.Field != tt.wantField {
				t.Errorf("field = %q, want %q (%v)", fe.Field, tt.wantField, err)
			}
			if tt.want != "" && fe.Error() != tt.want {
				t.Errorf("message:\n got %s\nwant %s", fe.Error(), tt.want)
			}
			if _, cerr := tt.spec.Compile(); cerr == nil {
				t.Errorf("Compile accepted what Validate refused")
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	err := Spec{Name: "BAD", Cron: "61 * * * *", Catchup: "some"}.Validate()
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("%v is not a *FieldError", e)
		}
		fields = append(fields, fe.Field)
	}
	if got, want := strings.Join(fields, ","), "name,cron,catchup"; got != want {
		t.Errorf("fields = %s, want %s", got, want)
	}
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	start, end := mustTime(t, "2026-01-01T00:00:00Z"), mustTime(t, "2027-01-01T00:00:00Z")
	for _, s := range []Spec{
		{Name: "a", Every: Duration(time.Second)},
		{Name: "scan.v2_x-1", Every: Duration(time.Hour), Offset: Duration(15 * time.Minute), Jitter: Duration(59 * time.Minute),
			Shards: MaxShards, Payload: strings.Repeat("x", MaxPayload), Catchup: CatchupAll, CatchupMax: MaxCatchupMax,
			Deadline: Duration(time.Minute), Start: &start, End: &end, Paused: true, Metrics: true},
		{Name: "c", Cron: "0 30 2 * * *", TZ: "Australia/Lord_Howe", Jitter: Duration(time.Hour), Catchup: CatchupSkip},
		{Name: "d", Cron: " @hourly "},
		{Name: "e", Cron: "0 0 29 2 *"},
		{Name: "f", Cron: "0 0 31 * mon"}, // day-of-month OR day-of-week: runs on Mondays
		{Name: "g", Cron: "0 9 ? * MON-FRI"},
		{Name: "h", Cron: "0 9 1 * *", Exclude: []string{"de", "us.federal"}, OnExcluded: OnExcludedPreviousBusinessDay},
		{Name: "i", Every: Duration(time.Hour), Exclude: []string{"de"}, OnExcluded: OnExcludedSkip},
		{Name: "j", Every: Duration(time.Hour), Exclude: strings.Split("a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p", ",")},
	} {
		if err := s.Validate(); err != nil {
			t.Errorf("Validate(%s) = %v", s.Name, err)
		}
	}
}

func TestSpecIsCopied(t *testing.T) {
	t.Parallel()
	start := mustTime(t, "2026-01-01T00:00:00Z")
	s := Spec{Name: "a", Every: Duration(time.Minute), Start: &start}
	sch := mustCompile(t, s)
	start = start.Add(time.Hour) // the caller's variable changes; the schedule must not
	got := sch.Spec()
	*got.Start = got.Start.Add(time.Hour) // nor may a returned copy write through
	if want := mustTime(t, "2026-01-01T00:00:00Z"); !sch.Next(time.Time{}).Equal(want) {
		t.Errorf("first slot = %s, want %s", sch.Next(time.Time{}), want)
	}
}

func TestValidateRefusesNULInPayload(t *testing.T) {
	err := Spec{Name: "nul", Every: Duration(time.Second), Payload: "a\x00b"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("payload with a NUL byte: err = %v, want a NUL refusal", err)
	}
}

// TestDotNamesRefusedOnWrite: a name made only of dots is refused for a definition to write (an apply file
// included), and still read from a record an earlier release wrote.
func TestDotNamesRefusedOnWrite(t *testing.T) {
	t.Parallel()
	for _, name := range []string{".", "..", "..."} {
		s := Spec{Name: name, Every: Duration(time.Minute)}
		var fe *FieldError
		if err := s.ValidateNew(); !errors.As(err, &fe) || fe.Field != "name" || !strings.Contains(err.Error(), "only of dots") {
			t.Errorf("ValidateNew(%q) = %v, want a refusal of the name", name, err)
		}
		if _, err := ParseFile(strings.NewReader("- name: \"" + name + "\"\n  every: 1m\n")); err == nil || !strings.Contains(err.Error(), "only of dots") {
			t.Errorf("ParseFile of %q = %v, want a refusal of the name", name, err)
		}
		got, err := Decode([]byte(`{"v":1,"name":"` + name + `","every":"1m0s"}`))
		if err != nil || got.Name != name {
			t.Errorf("Decode of a record named %q = %+v, %v; want it read", name, got, err)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("Validate(%q) = %v: a reader refuses what an earlier release wrote", name, err)
		}
	}
	for _, name := range []string{".a", "a.", "a..b", "_.", "-"} {
		if err := (Spec{Name: name, Every: Duration(time.Minute)}).ValidateNew(); err != nil {
			t.Errorf("ValidateNew(%q) = %v", name, err)
		}
	}
	err := Spec{Name: "..", Cron: "61 * * * *"}.ValidateNew()
	if j, ok := err.(interface{ Unwrap() []error }); !ok || len(j.Unwrap()) != 2 {
		t.Errorf("ValidateNew of two problems = %v, want both, joined", err)
	}
}

// TestLocation: a cron schedule's slots are read in its TZ; every other schedule's, and one whose TZ Validate
// refuses, in UTC.
func TestLocation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Cron: "0 2 * * *", TZ: "Europe/Paris"}, "Europe/Paris"},
		{Spec{Cron: "0 2 * * *"}, "UTC"},
		{Spec{Every: Duration(time.Minute)}, "UTC"},
		{Spec{Every: Duration(time.Minute), TZ: "Europe/Paris"}, "UTC"}, // refused by Validate: an interval has no zone
		{Spec{Cron: "0 2 * * *", TZ: "Local"}, "UTC"},
		{Spec{Cron: "0 2 * * *", TZ: "Mars/Olympus"}, "UTC"},
	} {
		if got := tc.spec.Location().String(); got != tc.want {
			t.Errorf("%+v: Location %s, want %s", tc.spec, got, tc.want)
		}
	}
}

// TestCatchupPolicy: a Spec without a policy, and its compiled Schedule, read as DefaultCatchup.
func TestCatchupPolicy(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"", CatchupSkip, CatchupLatest, CatchupAll} {
		s := Spec{Name: "s", Every: Duration(time.Minute), Catchup: c}
		want := c
		if c == "" {
			want = DefaultCatchup
		}
		sch, err := s.Compile()
		if err != nil {
			t.Fatal(err)
		}
		if s.CatchupPolicy() != want || sch.Catchup() != want {
			t.Errorf("catchup %q: Spec.CatchupPolicy %q, Schedule.Catchup %q; want %q", c, s.CatchupPolicy(), sch.Catchup(), want)
		}
	}
}
