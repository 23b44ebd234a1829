package changelog

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func valid() Change {
	return Change{Op: OpPut, Schedule: "scan", At: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), By: Who{User: "alice", Host: "h1"},
		Reason: "why", After: []byte(`{"v":1,"name":"scan","every":"1m0s"}`), Offset: 7}
}

func TestEncodeDecode(t *testing.T) {
	b, err := Encode(valid())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(b)
	if err != nil || c.Op != OpPut || c.Reason != "why" || c.Offset != 7 || c.By.User != "alice" {
		t.Fatalf("Decode(Encode) = %+v, %v", c, err)
	}
	for name, bad := range map[string]func(*Change){
		"unknown op":            func(c *Change) { c.Op = "rm" },
		"no time":               func(c *Change) { c.At = time.Time{} },
		"negative offset":       func(c *Change) { c.Offset = -1 },
		"control in the reason": func(c *Change) { c.Reason = "a\x1b[31m" },
		"long reason":           func(c *Change) { c.Reason = strings.Repeat("x", MaxReason+1) },
		"long who":              func(c *Change) { c.By.Name = strings.Repeat("x", MaxWho+1) },
		"another schedule's":    func(c *Change) { c.After = []byte(`{"v":1,"name":"other","every":"1m0s"}`) },
		"invalid definition":    func(c *Change) { c.After = []byte(`{"v":1,"name":"scan","every":"1ms"}`) },
		"a put writing nothing": func(c *Change) { c.After = nil },
		"a delete writing":      func(c *Change) { c.Op = OpDelete },
	} {
		c := valid()
		bad(&c)
		if _, err := Encode(c); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	for _, b := range []string{"", "{", `{"v":2,"kind":"schedule_change"}`, `{"v":1,"kind":"tick"}`} {
		if _, err := Decode([]byte(b)); err == nil {
			t.Errorf("Decode(%q) accepted", b)
		}
	}
}

func TestVerify(t *testing.T) {
	after := []byte(`{"v":1,"name":"scan","every":"1m0s"}`)
	v := Verifier{Records: map[int64]SchedulesRecord{3: {Key: []byte("scan"), Value: after}, 4: {Key: []byte("scan")}}, End: 6}
	c := valid()
	c.After, c.Offset = after, 3
	if got := v.Verify(c, time.Time{}); got != Confirmed {
		t.Errorf("the record as written: %s", got)
	}
	if got := v.Verify(c, time.Time{}); got != Forged {
		t.Errorf("a second claim of the same record: %s", got)
	}
	del := Change{Op: OpDelete, Schedule: "scan", Offset: 4}
	if got := v.Verify(del, time.Time{}); got != Confirmed {
		t.Errorf("a deletion's tombstone: %s", got)
	}
	for name, o := range map[string]int64{"compacted away": 5} {
		c.Offset = o
		if got := v.Verify(c, time.Time{}); got != Unconfirmed {
			t.Errorf("%s: %s", name, got)
		}
	}
	for name, x := range map[string]Change{
		"past the end":     {Schedule: "scan", After: after, Offset: 6},
		"another value":    {Schedule: "scan", After: []byte(`{"v":1,"name":"scan","every":"1s"}`), Offset: 3},
		"another key":      {Schedule: "other", After: after, Offset: 3},
		"a put at a grave": {Schedule: "scan", After: after, Offset: 4},
	} {
		w := Verifier{Records: v.Records, End: 6}
		if got := w.Verify(x, time.Time{}); got != Forged {
			t.Errorf("%s: %s, want forged", name, got)
		}
	}
}

// TestLimitChanges: a limit's change names its limit and no schedule, carries limit records of that limit, and
// is checked against the limits topic as a schedule's change is against the schedules topic.
func TestLimitChanges(t *testing.T) {
	t.Parallel()
	db := []byte(`{"v":1,"name":"db","concurrency":4}`)
	put := Change{Op: OpLimitPut, Limit: "db", At: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), After: db, Offset: 2}
	b, err := Encode(put)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Decode(b); err != nil || c.Limit != "db" || c.Key() != "~limit/db" || c.Schedule != "" {
		t.Errorf("Decode(Encode) = %+v, %v", c, err)
	}
	for name, bad := range map[string]func(*Change){
		"a schedule too":         func(c *Change) { c.Schedule = "scan" },
		"no limit":               func(c *Change) { c.Limit = "" },
		"a bad limit name":       func(c *Change) { c.Limit = "~limit/db" },
		"another limit's record": func(c *Change) { c.After = []byte(`{"v":1,"name":"api","concurrency":4}`) },
		"a schedule's record":    func(c *Change) { c.After = []byte(`{"v":1,"name":"db","every":"1m0s"}`) },
		"a put writing nothing":  func(c *Change) { c.After = nil },
		"a delete writing":       func(c *Change) { c.Op = OpLimitDelete },
		"a schedule op's limit":  func(c *Change) { c.Op, c.Schedule = OpPut, "scan" },
	} {
		c := put
		bad(&c)
		if _, err := Encode(c); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	v := Verifier{Records: map[int64]SchedulesRecord{2: {Key: []byte("db"), Value: db}}, End: 3,
		Limits: map[int64]SchedulesRecord{2: {Key: []byte("db"), Value: db}, 1: {Key: []byte("api"), Value: db}}, LimitsEnd: 3}
	if got := v.Verify(put, time.Time{}); got != Confirmed {
		t.Errorf("the limit as written: %s", got)
	}
	if got := v.Verify(put, time.Time{}); got != Forged {
		t.Errorf("a second claim: %s", got)
	}
	other := put
	other.Offset = 1
	if got := v.Verify(other, time.Time{}); got != Forged {
		t.Errorf("a claim of another limit's record: %s", got)
	}
	if got := (&Verifier{LimitsEnd: -1}).Verify(put, time.Time{}); got != Unconfirmed {
		t.Errorf("an unreadable limits topic: %s", got)
	}
}

// TestCalendarChanges: a calendar's change names its calendar and no schedule or limit, carries calendar records
// of that calendar, and is checked against the calendars topic as a schedule's change is against the schedules
// topic.
func TestCalendarChanges(t *testing.T) {
	t.Parallel()
	de := []byte(`{"v":1,"name":"de","weekdays":["sat","sun"]}`)
	put := Change{Op: OpCalendarPut, Calendar: "de", At: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC), After: de, Offset: 2}
	b, err := Encode(put)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := Decode(b); err != nil || c.Calendar != "de" || c.Key() != "~calendar/de" || c.Schedule != "" || c.Limit != "" {
		t.Errorf("Decode(Encode) = %+v, %v", c, err)
	}
	for name, bad := range map[string]func(*Change){
		"a schedule too":            func(c *Change) { c.Schedule = "scan" },
		"a limit too":               func(c *Change) { c.Limit = "db" },
		"no calendar":               func(c *Change) { c.Calendar = "" },
		"a bad calendar name":       func(c *Change) { c.Calendar = "~calendar/de" },
		"another calendar's record": func(c *Change) { c.After = []byte(`{"v":1,"name":"us","weekdays":["sun"]}`) },
		"no working day": func(c *Change) {
			c.After = []byte(`{"v":1,"name":"de","weekdays":["mon","tue","wed","thu","fri","sat","sun"]}`)
		},
		"a put writing nothing":    func(c *Change) { c.After = nil },
		"a delete writing":         func(c *Change) { c.Op = OpCalendarDelete },
		"a schedule op's calendar": func(c *Change) { c.Op, c.Schedule = OpPut, "scan" },
		"a limit op's calendar":    func(c *Change) { c.Op, c.Limit = OpLimitPut, "de" },
	} {
		c := put
		bad(&c)
		if _, err := Encode(c); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	if c := DecodeCalendar("de", de); c == nil || !c.ExcludesDate(2026, 12, 27) {
		t.Errorf("DecodeCalendar = %+v", c)
	}
	if c := DecodeCalendar("us", de); c != nil {
		t.Errorf("DecodeCalendar of another calendar's record = %+v", c)
	}
	v := Verifier{Records: map[int64]SchedulesRecord{2: {Key: []byte("de"), Value: de}}, End: 3,
		Limits: map[int64]SchedulesRecord{2: {Key: []byte("de"), Value: de}}, LimitsEnd: 3,
		Calendars: map[int64]SchedulesRecord{2: {Key: []byte("de"), Value: de}, 1: {Key: []byte("us"), Value: de}}, CalendarsEnd: 3}
	if got := v.Verify(put, time.Time{}); got != Confirmed {
		t.Errorf("the calendar as written: %s", got)
	}
	if got := v.Verify(put, time.Time{}); got != Forged {
		t.Errorf("a second claim: %s", got)
	}
	other := put
	other.Offset = 1
	if got := v.Verify(other, time.Time{}); got != Forged {
		t.Errorf("a claim of another calendar's record: %s", got)
	}
	if got := (&Verifier{CalendarsEnd: -1}).Verify(put, time.Time{}); got != Unconfirmed {
		t.Errorf("an unreadable calendars topic: %s", got)
	}
}

func TestVerifyBackfill(t *testing.T) {
	req := []byte(`{"v":1,"id":"b1","schedule":"scan"}`)
	v := Verifier{Records: map[int64]SchedulesRecord{}, End: 10, Backfills: map[int64]SchedulesRecord{2: {Key: []byte("b1"), Value: req}}, BackfillsEnd: 3}
	c := Change{Op: OpBackfill, Schedule: "scan", Offset: 2, After: req}
	if got := v.Verify(c, time.Time{}); got != Confirmed {
		t.Errorf("the backfill as requested: %s", got)
	}
	for name, x := range map[string]Change{
		"another schedule": {Op: OpBackfill, Schedule: "other", Offset: 2, After: req},
		"another value":    {Op: OpBackfill, Schedule: "scan", Offset: 2, After: []byte(`{"v":1,"id":"b2","schedule":"scan"}`)},
		"past the end":     {Op: OpBackfill, Schedule: "scan", Offset: 3, After: req},
	} {
		w := Verifier{Backfills: v.Backfills, BackfillsEnd: 3}
		if got := w.Verify(x, time.Time{}); got != Forged {
			t.Errorf("%s: %s, want forged", name, got)
		}
	}
	if _, err := Decode([]byte(`{"v":1,"kind":"schedule_change","op":"backfill","schedule":"scan","at":"2026-12-01T00:00:00Z","by":{},"schedule_offset":2}`)); err == nil {
		t.Error("a backfill change without its record decoded")
	}
}

func TestCheckText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, want string
	}{
		{"maintenance (OPS-7), é ✓", ""},
		{"", ""},
		{strings.Repeat("é", 512), ""},
		{strings.Repeat("é", 600), "reason: 1,200 bytes, at most 1,024"},
		{"ok\x01", "reason: holds a control character"},
		{"line\nbreak", "reason: holds a control character"},
		{"a\u0085b", "reason: holds a control character"},
		{"ok\xff", "reason: not valid UTF-8"},
	} {
		err := CheckText("reason", tt.in, MaxReason)
		if got := fmt.Sprint(err); tt.want == "" && err != nil || tt.want != "" && got != tt.want {
			t.Errorf("CheckText(%.20q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	if got := thousands(1234567); got != "1,234,567" {
		t.Errorf("thousands(1234567) = %s", got)
	}
}

// TestCleanText: what a writer records of itself is made valid text, never refused.
func TestCleanText(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		max  int
		want string
	}{
		{"host-1", MaxWho, "host-1"},
		{"host\x1b[2J\n", MaxWho, "host?[2J?"},
		{"us\xffer", MaxWho, "us?er"},
		{"ééé", 5, "éé"},
		{strings.Repeat("x", 300), MaxWho, strings.Repeat("x", MaxWho)},
	} {
		got := CleanText(tt.in, tt.max)
		if got != tt.want || CheckText("host", got, tt.max) != nil {
			t.Errorf("CleanText(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
	}
}

// TestVerifyClaimBeforeItsRecord: a change logged before the record it claims existed is forged and does not
// take the record, so the change its writer logs after it is confirmed; a copy logged later is forged.
func TestVerifyClaimBeforeItsRecord(t *testing.T) {
	t.Parallel()
	after := []byte(`{"v":1,"name":"scan","every":"1m0s"}`)
	written := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	records := map[int64]SchedulesRecord{3: {Key: []byte("scan"), Value: after, Time: written, Stamped: true}}
	c := valid()
	c.After, c.Offset = after, 3

	v := Verifier{Records: records, End: 4}
	for i, step := range []struct {
		logged time.Time
		want   Status
	}{
		{written.Add(-time.Hour), Forged},                    // written ahead, for the next offsets
		{written.Add(-ClaimSkew - time.Millisecond), Forged}, // just beyond the brokers' skew
		{written.Add(20 * time.Millisecond), Confirmed},      // its writer's, right after the record
		{written.Add(time.Minute), Forged},                   // a copy: the record is taken
	} {
		if got := v.Verify(c, step.logged); got != step.want {
			t.Errorf("claim %d, logged %s after the record: %s, want %s", i, step.logged.Sub(written), got, step.want)
		}
	}

	for name, x := range map[string]struct {
		v      Verifier
		logged time.Time
	}{
		"within the brokers' skew":     {Verifier{Records: records, End: 4}, written.Add(-ClaimSkew / 2)},
		"no log time":                  {Verifier{Records: records, End: 4}, time.Time{}},
		"a timestamp its writer chose": {Verifier{Records: map[int64]SchedulesRecord{3: {Key: []byte("scan"), Value: after, Time: written}}, End: 4}, written.Add(-time.Hour)},
	} {
		if got := x.v.Verify(c, x.logged); got != Confirmed {
			t.Errorf("%s: %s, want confirmed", name, got)
		}
	}

	// A backfill's record stamped by the broker: the same rule.
	req := []byte(`{"v":1,"id":"b1","schedule":"scan"}`)
	bv := Verifier{End: 10, Backfills: map[int64]SchedulesRecord{2: {Key: []byte("b1"), Value: req, Time: written, Stamped: true}}, BackfillsEnd: 3}
	bc := Change{Op: OpBackfill, Schedule: "scan", Offset: 2, After: req}
	if got := bv.Verify(bc, written.Add(-time.Hour)); got != Forged {
		t.Errorf("a backfill claimed before its request: %s", got)
	}
	if got := bv.Verify(bc, written.Add(time.Second)); got != Confirmed {
		t.Errorf("the backfill's own change: %s", got)
	}
}

// TestVerifyWindow: with a window (the newest changes only), a record older than the window cannot be confirmed:
// a claim before the window may have taken it.
func TestVerifyWindow(t *testing.T) {
	t.Parallel()
	after := []byte(`{"v":1,"name":"scan","every":"1m0s"}`)
	written := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	records := map[int64]SchedulesRecord{3: {Key: []byte("scan"), Value: after, Time: written, Stamped: true}}
	c := valid()
	c.After, c.Offset = after, 3
	v := Verifier{Records: records, End: 4, Window: written.Add(time.Second)}
	if got := v.Verify(c, written.Add(2*time.Hour)); got != Unconfirmed {
		t.Errorf("a record older than the window: %s, want unconfirmed", got)
	}
	if got := v.Verify(c, written.Add(2*time.Hour)); got != Forged {
		t.Errorf("a second claim of it: %s, want forged", got)
	}
	v = Verifier{Records: records, End: 4, Window: written}
	if got := v.Verify(c, written); got != Confirmed {
		t.Errorf("a record within the window: %s, want confirmed", got)
	}
}

func bulkRecord() Change {
	return Change{Op: OpApplyBulk, At: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC), By: Who{Name: "deploy"}, Reason: "bulk",
		Items: []Item{{Schedule: "a", Offset: 3}, {Schedule: "b", Offset: 4, Deleted: true}, {Schedule: "c", Offset: 9}}, Offset: 3, Applied: 5}
}

// A bulk record pins its format (a record of this shape is what an earlier release counts invalid and passes
// over), decodes as written, and is refused when its items are no changes of one apply.
func TestBulkRecord(t *testing.T) {
	b, err := Encode(bulkRecord())
	if err != nil {
		t.Fatal(err)
	}
	const golden = `{"v":1,"kind":"schedule_change","op":"apply_bulk","schedule":"","at":"2026-12-07T10:00:00Z","by":{"name":"deploy"},"reason":"bulk","schedule_offset":3,"items":[{"s":"a","o":3},{"s":"b","o":4,"d":true},{"s":"c","o":9}],"applied":5}`
	if string(b) != golden {
		t.Errorf("bulk record\n got %s\nwant %s", b, golden)
	}
	c, err := Decode(b)
	if err != nil || c.Key() != BulkKey || len(c.Items) != 3 {
		t.Fatalf("Decode = %+v, %v", c, err)
	}
	xs := c.Expand()
	if len(xs) != 3 || xs[1].Schedule != "b" || xs[1].Op != OpApply || xs[1].Offset != 4 || !xs[1].Deleted() || xs[0].Deleted() || !xs[2].Bulk() || xs[2].Reason != "bulk" {
		t.Errorf("Expand = %+v", xs)
	}
	for name, bad := range map[string]func(*Change){
		"no items":              func(c *Change) { c.Items = nil },
		"too many":              func(c *Change) { c.Items = make([]Item, MaxBulk+1) },
		"a bad name":            func(c *Change) { c.Items[1].Schedule = "~limit/x" },
		"offsets not rising":    func(c *Change) { c.Items[2].Offset = 4 },
		"offset not the first":  func(c *Change) { c.Offset = 4 },
		"a schedule of its own": func(c *Change) { c.Schedule = "a" },
		"fewer applied":         func(c *Change) { c.Applied = 2 },
		"a definition":          func(c *Change) { c.After = []byte(`{"v":1,"name":"a","every":"1m0s"}`) },
	} {
		c := bulkRecord()
		bad(&c)
		if _, err := Encode(c); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
	put := valid()
	put.Items = []Item{{Schedule: "scan", Offset: 7}}
	if _, err := Encode(put); err == nil {
		t.Error("a put with bulk items encoded")
	}
}

// A bulk item is checked by key, and by value or tombstone: it records no definition.
func TestVerifyBulk(t *testing.T) {
	def := []byte(`{"v":1,"name":"a","every":"1m0s"}`)
	records := map[int64]SchedulesRecord{3: {Key: []byte("a"), Value: def}, 4: {Key: []byte("b")}, 9: {Key: []byte("c"), Value: def}}
	v := Verifier{Records: records, End: 10}
	for _, x := range bulkRecord().Expand() {
		if got := v.Verify(x, time.Time{}); got != Confirmed {
			t.Errorf("%s at %d: %s", x.Schedule, x.Offset, got)
		}
	}
	forged := Change{Op: OpApplyBulk, At: time.Now(), Items: []Item{{Schedule: "x", Offset: 3}, {Schedule: "b", Offset: 4}, {Schedule: "c", Offset: 9, Deleted: true}}, Offset: 3, Applied: 3}
	w := Verifier{Records: records, End: 10}
	for _, x := range forged.Expand() {
		if got := w.Verify(x, time.Time{}); got != Forged {
			t.Errorf("%s at %d (deleted %v): %s, want forged", x.Schedule, x.Offset, x.Deleted(), got)
		}
	}
	e := Entry{Change: bulkRecord().Expand()[0]}
	u := Verifier{Records: records, End: 10}
	u.verify(&e)
	if e.Status != Confirmed || string(e.After) != string(def) {
		t.Errorf("a confirmed bulk change: %s, after %s", e.Status, e.After)
	}
}
