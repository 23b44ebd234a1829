package calendarstore

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/named"
)

// TestFold: the fold takes each key's newest valid calendar, and a refused record (a name other than its key, a
// record over calendar.MaxRecordBytes, a calendar without working days) leaves the key as it was. A hostile size
// is refused before it is parsed.
func TestFold(t *testing.T) {
	t.Parallel()
	f := named.Fold[*calendar.Calendar]{}
	put := func(key string, v []byte) error { return f.Apply(&kgo.Record{Key: []byte(key), Value: v}, Decode) }
	if err := put("de", encoded(t, calendar.Spec{Name: "de", Dates: []string{"2026-12-25"}})); err != nil {
		t.Fatal(err)
	}
	huge := []byte(`{"v":1,"name":"de","dates":["` + strings.Repeat("2", calendar.MaxRecordBytes) + `"]}`)
	for what, tc := range map[string]struct {
		v    []byte
		want string
	}{
		"another name": {[]byte(`{"v":1,"name":"us","weekdays":["sun"]}`), `calendar "de": decoding calendar: its name is "us"`},
		"hostile size": {huge, "more than the limit of 1048576"},
		"no working day": {[]byte(`{"v":1,"name":"de","weekdays":["mon","tue","wed","thu","fri","sat","sun"]}`),
			"no working day"},
		"a major version 2": {[]byte(`{"v":2,"name":"de"}`), "unknown calendar record version"},
	} {
		if err := put("de", tc.v); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", what, err, tc.want)
		}
	}
	if c := f["de"]; c == nil || !c.ExcludesDate(2026, 12, 25) {
		t.Errorf("after the refusals: %+v, want the first definition", c)
	}
	if err := put("de", nil); err != nil || len(f) != 0 {
		t.Errorf("a tombstone: %v, %v", err, f)
	}
}

// TestSame: a View signals a change only when a calendar's definition changed (named.View, Config.Same): the
// same calendar written again (another spelling of its weekdays, another order of its dates) is the same.
func TestSame(t *testing.T) {
	t.Parallel()
	dec := func(v []byte) *calendar.Calendar {
		c, err := Decode("de", v)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a := dec(encoded(t, calendar.Spec{Name: "de", Dates: []string{"2026-12-26", "2026-12-25"}, Weekdays: []string{"sun"}}))
	if b := dec([]byte(`{"v":1,"name":"de","dates":["2026-12-25","2026-12-26","2026-12-25"],"weekdays":["Sunday"]}`)); !Same(a, b) {
		t.Error("the same calendar written again: not the same")
	}
	if c := dec(encoded(t, calendar.Spec{Name: "de", Weekdays: []string{"sun"}})); Same(a, c) {
		t.Error("a date less: the same")
	}
	if !Same(nil, nil) || Same(a, nil) {
		t.Error("Same(nil, nil) is true, Same(a, nil) false")
	}
}

// TestChecks: the writers' refusals name the schedule and every calendar it cannot exclude, and a deletion's the
// schedules that exclude the calendar, at most MaxListed of them.
func TestChecks(t *testing.T) {
	t.Parallel()
	de, _ := calendar.Spec{Name: "de", Weekdays: []string{"sun"}}.Compile()
	cals := map[string]*calendar.Calendar{"de": de}
	if err := CheckExclude("scan", []string{"de"}, cals); err != nil {
		t.Errorf("an existing calendar: %v", err)
	}
	for _, tc := range []struct {
		exclude []string
		want    string
	}{
		{[]string{"de", "us"}, `schedule "scan": exclude: calendar "us": no such calendar (create it first: ticker calendar put us ...)`},
		{[]string{"fr", "de", "us"}, `schedule "scan": exclude: calendars "fr", "us": no such calendars (create them first: ticker calendar put NAME ...)`},
	} {
		if err := CheckExclude("scan", tc.exclude, cals); err == nil || err.Error() != tc.want {
			t.Errorf("CheckExclude(%q) = %v, want %s", tc.exclude, err, tc.want)
		}
	}
	if err := CheckDelete("de", nil); err != nil {
		t.Errorf("CheckDelete of an unused calendar: %v", err)
	}
	uses := []string{"a", "b", "c", "d", "e", "f", "g"}
	if err := CheckDelete("de", uses); err == nil ||
		err.Error() != `calendar "de": still excluded by 7 schedules ("a", "b", "c", "d", "e" and 2 more): let them exclude another calendar, or none, first` {
		t.Errorf("CheckDelete = %v", err)
	}
	if err := CheckDelete("de", uses[:1]); err == nil || !strings.Contains(err.Error(), `still excluded by 1 schedule ("a")`) {
		t.Errorf("CheckDelete of one use = %v", err)
	}
	if k := Key("de"); k != "~calendar/de" {
		t.Errorf("Key = %s", k)
	}
}
