package schedule

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEncodeDecode(t *testing.T) {
	t.Parallel()
	start, end := mustTime(t, "2026-01-01T00:00:00Z"), mustTime(t, "2027-01-01T00:00:00+01:00")
	in := Spec{
		Name: "scan", Cron: "0 30 2 * * *", TZ: "Europe/Berlin", Jitter: Duration(90 * time.Second), Shards: 4,
		Payload: `{"x":1}`, Catchup: CatchupAll, CatchupMax: 10, Deadline: Duration(time.Hour), Start: &start, End: &end,
		Paused: true, Metrics: true,
	}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"name":"scan","cron":"0 30 2 * * *","tz":"Europe/Berlin","jitter":"1m30s","shards":4,"payload":"{\"x\":1}",` +
		`"catchup":"all","catchup_max":10,"deadline":"1h0m0s","start":"2026-01-01T00:00:00Z","end":"2027-01-01T00:00:00+01:00",` +
		`"paused":true,"metrics":true}`
	if string(b) != want {
		t.Errorf("Encode:\n got %s\nwant %s", b, want)
	}
	out, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}

	every, err := Encode(Spec{Name: "tick", Every: Duration(time.Minute), Offset: Duration(15 * time.Second)})
	if err != nil || string(every) != `{"v":1,"name":"tick","every":"1m0s","offset":"15s"}` {
		t.Errorf("Encode(every) = %s, %v", every, err)
	}
}

// TestEncodeDecodeExclude: the calendars a schedule excludes and its policy are the record's fields exclude and
// on_excluded. decodeFast does not know them (a list is no field of its), so such a record is read by
// encoding/json, with the same result.
func TestEncodeDecodeExclude(t *testing.T) {
	t.Parallel()
	in := Spec{Name: "close", Cron: "0 18 * * *", TZ: "Europe/Berlin", Exclude: []string{"de", "company"}, OnExcluded: OnExcludedPreviousBusinessDay}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"name":"close","cron":"0 18 * * *","tz":"Europe/Berlin","exclude":["de","company"],"on_excluded":"previous_business_day"}`
	if string(b) != want {
		t.Errorf("Encode:\n got %s\nwant %s", b, want)
	}
	if _, _, ok := decodeFast(b); ok {
		t.Error("decodeFast took a record with exclude: it cannot read the list")
	}
	out, err := Decode(b)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Errorf("round trip: got %+v, %v; want %+v", out, err, in)
	}
	if _, err := Decode([]byte(`{"v":1,"name":"a","every":"1h","exclude":["de"],"on_excluded":"next_business_day"}`)); err == nil {
		t.Error("Decode took an every schedule whose excluded slots move")
	}
	specs, err := ParseFile(strings.NewReader("- name: close\n  cron: \"0 18 * * *\"\n  exclude: [de, company]\n  on_excluded: next_business_day\n"))
	if err != nil || len(specs) != 1 || !reflect.DeepEqual(specs[0].Exclude, []string{"de", "company"}) || specs[0].OnExcluded != OnExcludedNextBusinessDay {
		t.Errorf("ParseFile = %+v, %v", specs, err)
	}
	if _, err := ParseFile(strings.NewReader("- name: close\n  cron: \"0 18 * * *\"\n  exclude: de\n")); err == nil || !strings.Contains(err.Error(), "field exclude") {
		t.Errorf("ParseFile of exclude as a scalar: %v, want an error naming the field", err)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"name":"a","every":60}`, `duration must be a string like "30s", got 60`},
		{`{"name":"a","every":"1x"}`, `time: unknown unit "x"`},
		{`{"name":"a","cron":"61 * * * *"}`, `schedule "a": cron "61 * * * *": minute 61 out of range 0-59`},
		{`not json`, `decoding schedule`},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
	// Stored specs from a newer build may carry fields this one does not know.
	if _, err := Decode([]byte(`{"name":"a","every":"1m","future":true}`)); err != nil {
		t.Errorf("Decode with an unknown field: %v", err)
	}
	if _, err := Encode(Spec{Name: "a"}); err == nil {
		t.Error("Encode accepted an invalid spec")
	}
}

func TestParseFile(t *testing.T) {
	t.Parallel()
	start := mustTime(t, "2026-05-01T00:00:00Z")
	want := []Spec{
		{Name: "scan", Cron: "*/5 * * * *", TZ: "Europe/Berlin", Jitter: Duration(30 * time.Second), Shards: 3},
		{Name: "report", Every: Duration(time.Hour), Offset: Duration(5 * time.Minute), Catchup: CatchupAll, CatchupMax: 24, Start: &start},
	}
	const list = `
- name: scan
  cron: "*/5 * * * *"
  tz: Europe/Berlin
  jitter: 30s
  shards: 3
- name: report
  every: 1h
  offset: 5m
  catchup: all
  catchup_max: 24
  start: 2026-05-01T00:00:00Z
`
	mapping := "schedules:\n" + strings.ReplaceAll(list, "\n", "\n  ")
	for name, doc := range map[string]string{"list": list, "mapping": mapping} {
		got, err := ParseFile(strings.NewReader(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

func TestParseFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, doc, want string }{
		{"unknown field", "- name: a\n  every: 1m\n  jiter: 5s\n", `[0] ("a"): line 3: unknown field "jiter"`},
		{"bad duration", "- name: a\n  every: 5\n", `[0] ("a"): line 2: field every: duration must be a string like "30s", got "5"`},
		{"invalid spec", "schedules:\n  - name: ok\n    every: 1m\n  - name: scan\n    cron: 61 * * * *\n",
			`schedules[1] ("scan"): line 4: schedule "scan": cron "61 * * * *": minute 61 out of range 0-59`},
		{"duplicate name", "- {name: a, every: 1m}\n- {name: a, cron: '@daily'}\n", `[1] ("a"): line 2: name "a" is already used by [0]`},
		{"repeated field", "- {name: a, every: 1m, every: 2m}\n", `[0] ("a"): line 1: field every is given twice`},
		{"unknown top level", "schedule:\n  - name: a\n", `unknown top-level field "schedule"`},
		{"scalar", "hello\n", `want a list of schedules`},
		{"entry not a mapping", "- a\n", `[0]: line 1: want a mapping of schedule fields`},
		{"empty", "", `the file is empty`},
		{"two documents", "- {name: a, every: 1m}\n---\n- {name: b, every: 1m}\n", `more than one YAML document`},
		{"wrong type", "- {name: a, every: 1m, shards: many}\n", `field shards`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			specs, err := ParseFile(strings.NewReader(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseFile = %v, %v; want an error containing %q", specs, err, tt.want)
			}
		})
	}
	// A validation problem stays a *FieldError through the wrapping.
	_, err := ParseFile(strings.NewReader("- {name: a, cron: '61 * * * *'}\n"))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "cron" {
		t.Errorf("errors.As(%v) found %+v", err, fe)
	}
}

func TestDecodeRefusesUnknownVersion(t *testing.T) {
	t.Parallel()
	if _, err := Decode([]byte(`{"v":99,"name":"x","every":"1s"}`)); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("v 99: err = %v, want ErrUnknownVersion", err)
	}
	if _, err := Decode([]byte(`{"name":"x","every":"1s"}`)); err != nil {
		t.Errorf("a record without v (written before versions): %v", err)
	}
}

func TestParseFileLimits(t *testing.T) {
	t.Parallel()
	big := strings.NewReader("- name: a\n  every: 1s\n  payload: " + strings.Repeat("x", MaxFileBytes) + "\n")
	if _, err := ParseFile(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file over %d bytes: err = %v, want a size refusal", MaxFileBytes, err)
	}
}
