package calendar

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestEncodeDecode(t *testing.T) {
	t.Parallel()
	in := Spec{
		Name:     "us-federal",
		TZ:       "America/New_York",
		Dates:    []string{"2027-01-18", "2027-01-01", "2027-01-18"},
		Ranges:   []Range{{From: "2027-12-24", To: "2027-12-31"}},
		Weekdays: []string{"Sunday", "sat"},
	}
	b, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"name":"us-federal","tz":"America/New_York","dates":["2027-01-01","2027-01-18"],` +
		`"ranges":[{"from":"2027-12-24","to":"2027-12-31"}],"weekdays":["sat","sun"]}`
	if string(b) != want {
		t.Errorf("Encode:\n got %s\nwant %s", b, want)
	}
	c, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	norm := Spec{Name: "us-federal", TZ: "America/New_York", Dates: []string{"2027-01-01", "2027-01-18"},
		Ranges: []Range{{From: "2027-12-24", To: "2027-12-31"}}, Weekdays: []string{"sat", "sun"}}
	if got := c.Spec(); !reflect.DeepEqual(got, norm) {
		t.Errorf("round trip: got %+v, want %+v", got, norm)
	}
	// Encoding the normalized spec again gives the same bytes.
	if b2, err := Encode(c.Spec()); err != nil || string(b2) != string(b) {
		t.Errorf("Encode(Decode(b)) = %s, %v", b2, err)
	}

	minimal, err := Encode(Spec{Name: "weekends", Weekdays: []string{"sat", "sun"}})
	if err != nil || string(minimal) != `{"v":1,"name":"weekends","weekdays":["sat","sun"]}` {
		t.Errorf("Encode(minimal) = %s, %v", minimal, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"name":"a","dates":["2027-02-30"]}`, `decoding calendar: calendar "a": dates[0] "2027-02-30": not a date (want YYYY-MM-DD): day out of range`},
		{`{"name":"a","dates":"2027-01-01"}`, `decoding calendar: json: cannot unmarshal string into Go struct field`},
		{`{"name":"a","ranges":[{"from":"2027-01-02","to":"2027-01-01"}]}`, `from is after to`},
		{`not json`, `decoding calendar: invalid character`},
		{`{"v":2,"name":"a"}`, `decoding calendar: version 2: unknown calendar record version`},
		{`{"name":"a","dates":["` + strings.Repeat("2", MaxRecordBytes) + `"]}`, `decoding calendar: the record is 1048601 bytes, more than the limit of 1048576`},
	}
	for _, tt := range tests {
		_, err := Decode([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Decode(%.60s) = %v, want an error containing %q", tt.in, err, tt.want)
		}
	}
	if _, err := Decode([]byte(`{"v":2,"name":"a"}`)); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("Decode(v2) = %v, want ErrUnknownVersion", err)
	}
	// Records of a newer build may carry fields this one does not know; a record without "v" is version 1.
	if _, err := Decode([]byte(`{"name":"a","weekdays":["sun"],"future":true}`)); err != nil {
		t.Errorf("Decode with an unknown field: %v", err)
	}
	if _, err := Encode(Spec{Name: "a", Weekdays: []string{"noday"}}); err == nil || !strings.HasPrefix(err.Error(), `encoding calendar: calendar "a": weekdays[0]`) {
		t.Errorf("Encode(invalid) = %v", err)
	}
}

func TestParseYAML(t *testing.T) {
	t.Parallel()
	c, err := ParseYAML(strings.NewReader(`
name: us-federal
tz: America/New_York
weekdays: [sat, sun]
dates: [2027-01-01, 2027-01-18, "2027-02-15"]
ranges:
  - {from: 2027-12-24, to: 2027-12-31}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Spec{Name: "us-federal", TZ: "America/New_York", Dates: []string{"2027-01-01", "2027-01-18", "2027-02-15"},
		Ranges: []Range{{From: "2027-12-24", To: "2027-12-31"}}, Weekdays: []string{"sat", "sun"}}
	if got := c.Spec(); !reflect.DeepEqual(got, want) {
		t.Errorf("ParseYAML:\n got %+v\nwant %+v", got, want)
	}
	// Writing the normalized spec as YAML and reading it back is the identity.
	out, err := yaml.Marshal(c.Spec())
	if err != nil {
		t.Fatal(err)
	}
	wantYAML := "name: us-federal\ntz: America/New_York\ndates:\n    - \"2027-01-01\"\n    - \"2027-01-18\"\n    - \"2027-02-15\"\n" +
		"ranges:\n    - from: \"2027-12-24\"\n      to: \"2027-12-31\"\nweekdays:\n    - sat\n    - sun\n"
	if string(out) != wantYAML {
		t.Errorf("yaml.Marshal:\n got %s\nwant %s", out, wantYAML)
	}
	back, err := ParseYAML(strings.NewReader(string(out)))
	if err != nil || !reflect.DeepEqual(back.Spec(), want) {
		t.Errorf("ParseYAML(yaml.Marshal(spec)) = %+v, %v", back, err)
	}
	// And JSON's field names are YAML's.
	var fromJSON Spec
	b, _ := json.Marshal(want)
	if err := yaml.Unmarshal(b, &fromJSON); err != nil || !reflect.DeepEqual(fromJSON, want) {
		t.Errorf("JSON read as YAML: %+v, %v", fromJSON, err)
	}
}

func TestParseYAMLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"name: a\nweekday: [sun]\n", "parsing calendar: yaml: unmarshal errors:\n  line 2: field weekday not found in type calendar.Spec"},
		{"name: a\ndates: [2027-01-32]\n", `parsing calendar: calendar "a": dates[0] "2027-01-32": not a date (want YYYY-MM-DD): day out of range`},
		{"", "parsing calendar: the file is empty"},
		{"name: a\n---\nname: b\n", "parsing calendar: the file holds more than one YAML document; write one calendar per file"},
		{"name: a\ndates: {x: 1}\n", "parsing calendar: yaml: unmarshal errors:\n  line 2: cannot unmarshal !!map into []string"},
		{strings.Repeat("#", MaxRecordBytes+1), "reading calendar: the file is larger than 1 MiB"},
	}
	for _, tt := range tests {
		_, err := ParseYAML(strings.NewReader(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParseYAML(%.40q):\n got %v\nwant %s", tt.in, err, tt.want)
		}
	}
}

func TestOnExcluded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want OnExcluded
		err  string
	}{
		{"", Skip, ""},
		{"skip", Skip, ""},
		{"next_business_day", NextBusinessDay, ""},
		{"previous_business_day", PreviousBusinessDay, ""},
		{"next", "", `unknown policy for excluded days "next" (want "skip", "next_business_day" or "previous_business_day")`},
		{"Skip", "", `unknown policy for excluded days "Skip" (want "skip", "next_business_day" or "previous_business_day")`},
	} {
		got, err := ParseOnExcluded(tt.in)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && err.Error() != tt.err {
			t.Errorf("ParseOnExcluded(%q) = %q, %v; want %q, %s", tt.in, got, err, tt.want, tt.err)
		}
		if verr := OnExcluded(tt.in).Validate(); (verr == nil) != (tt.err == "") {
			t.Errorf("OnExcluded(%q).Validate() = %v", tt.in, verr)
		}
	}
	if OnExcluded("").OrDefault() != Skip || NextBusinessDay.OrDefault() != NextBusinessDay {
		t.Error("OrDefault")
	}

	// As a field of a record: its name in JSON and YAML, an unknown name refused either way.
	type rec struct {
		OnExcluded OnExcluded `json:"on_excluded,omitempty" yaml:"on_excluded,omitempty"`
	}
	b, err := json.Marshal(rec{PreviousBusinessDay})
	if err != nil || string(b) != `{"on_excluded":"previous_business_day"}` {
		t.Errorf("json.Marshal = %s, %v", b, err)
	}
	if b, err := json.Marshal(rec{}); err != nil || string(b) != `{}` {
		t.Errorf("json.Marshal(default) = %s, %v", b, err)
	}
	if _, err := json.Marshal(rec{"sometimes"}); err == nil {
		t.Error("json.Marshal of an unknown policy succeeded")
	}
	var r rec
	if err := json.Unmarshal([]byte(`{"on_excluded":"next_business_day"}`), &r); err != nil || r.OnExcluded != NextBusinessDay {
		t.Errorf("json.Unmarshal = %+v, %v", r, err)
	}
	if err := json.Unmarshal([]byte(`{"on_excluded":"later"}`), &r); err == nil || !strings.Contains(err.Error(), `unknown policy for excluded days "later"`) {
		t.Errorf("json.Unmarshal(later) = %v", err)
	}
	if y, err := yaml.Marshal(rec{NextBusinessDay}); err != nil || string(y) != "on_excluded: next_business_day\n" {
		t.Errorf("yaml.Marshal = %q, %v", y, err)
	}
	if err := yaml.Unmarshal([]byte("on_excluded: previous_business_day\n"), &r); err != nil || r.OnExcluded != PreviousBusinessDay {
		t.Errorf("yaml.Unmarshal = %+v, %v", r, err)
	}
	if err := yaml.Unmarshal([]byte("on_excluded: later\n"), &r); err == nil || !strings.Contains(err.Error(), `unknown policy for excluded days "later"`) {
		t.Errorf("yaml.Unmarshal(later) = %v", err)
	}
}

// A record read back is valid, and writing it gives a record that reads back the same.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"name":"us","tz":"America/New_York","dates":["2027-01-01"],"ranges":[{"from":"2027-12-24","to":"2027-12-31"}],"weekdays":["sat","sun"]}`))
	f.Add([]byte(`{"name":"a","dates":["2027-02-30","2027-01-01","2027-01-01"],"weekdays":["Sunday"]}`))
	f.Add([]byte(`{"name":"a","ranges":[{"from":"2027-01-01","to":"2028-01-01"}],"weekdays":["mon","tue","wed","thu","fri","sat"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		out, err := Encode(c.Spec())
		if err != nil {
			t.Fatalf("Encode of a decoded calendar: %v", err)
		}
		c2, err := Decode(out)
		if err != nil || !reflect.DeepEqual(c2.Spec(), c.Spec()) {
			t.Fatalf("round trip of %s: %+v, %v", out, c2, err)
		}
	})
}
