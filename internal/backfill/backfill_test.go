package backfill

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tickgroup/tickgroup/internal/calendar"
	"github.com/tickgroup/tickgroup/internal/schedule"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func TestSlots(t *testing.T) {
	until := t0.Add(time.Hour)
	for _, tc := range []struct {
		name     string
		spec     schedule.Spec
		from, to time.Time
		want     int
		first    time.Time
	}{
		{"every, half-open", schedule.Spec{Name: "a", Every: schedule.Duration(time.Minute)}, t0, t0.Add(time.Hour), 60, t0},
		{"a pause is ignored", schedule.Spec{Name: "a", Every: schedule.Duration(time.Minute), Paused: true, PausedUntil: &until, PauseReason: "x"}, t0, t0.Add(10 * time.Minute), 10, t0},
		{"not before its start", schedule.Spec{Name: "a", Every: schedule.Duration(time.Minute), Start: &until}, t0, t0.Add(2 * time.Hour), 60, until},
		// The slots by the schedule's zone: 02:30 Berlin is 01:30 UTC in winter, 00:30 UTC in summer; on the day
		// the clocks spring forward 02:30 does not exist and the schedule runs at 03:00 (01:00 UTC).
		{"cron in a zone", schedule.Spec{Name: "a", Cron: "30 2 * * *", TZ: "Europe/Berlin"}, time.Date(2026, 3, 28, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 31, 0, 0, 0, 0, time.UTC), 3,
			time.Date(2026, 3, 28, 1, 30, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := Slots(tc.spec, tc.from, tc.to, MaxSlots, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want || len(got) > 0 && !got[0].Equal(tc.first) {
				t.Fatalf("%d slots from %v, want %d from %v", len(got), got, tc.want, tc.first)
			}
		})
	}
	got, _, _ := Slots(schedule.Spec{Name: "a", Every: schedule.Duration(time.Second)}, t0, t0.Add(time.Hour), 10, nil)
	if len(got) != 11 {
		t.Fatalf("a range beyond the limit: %d slots, want limit+1", len(got))
	}
}

// TestSlotsCalendars: a backfill's slots are those the schedule's calendars leave, the excluded ones counted; a
// calendar the namespace does not have is an error.
func TestSlotsCalendars(t *testing.T) {
	hol, err := calendar.Spec{Name: "hol", Dates: []string{"2026-12-02"}}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	cals := calendar.Getter(map[string]*calendar.Calendar{"hol": hol})
	spec := schedule.Spec{Name: "a", Every: schedule.Duration(time.Hour), Exclude: []string{"hol"}}
	got, excluded, err := Slots(spec, t0, t0.Add(72*time.Hour), MaxSlots, cals)
	if err != nil || len(got) != 48 || excluded != 24 || !got[24].Equal(t0.Add(48*time.Hour)) {
		t.Fatalf("%d slots (the 25th %v), %d excluded, %v; want 48, the 3rd's first, 24", len(got), got[24], excluded, err)
	}
	got, excluded, _ = Slots(spec, t0, t0.Add(72*time.Hour), 30, cals)
	if len(got) != 31 || excluded != 24 {
		t.Errorf("beyond the limit: %d slots, %d excluded; want 31, 24", len(got), excluded)
	}
	spec.Exclude = []string{"hol", "gone"}
	if _, _, err := Slots(spec, t0, t0.Add(time.Hour), MaxSlots, cals); err == nil || !strings.Contains(err.Error(), `excludes gone, which the namespace does not have`) {
		t.Errorf("a calendar the namespace lacks: %v", err)
	}
}

func request() Request {
	return Request{V: Version, ID: "20261201t000000-abcd", Schedule: "s", From: t0, To: t0.Add(3 * time.Second),
		Reprocess: ReprocessNone, Slots: []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}, MaxRunning: 1, CreatedAt: t0.Add(time.Hour)}
}

func TestRequestValidate(t *testing.T) {
	if err := func() error { r := request(); return r.Validate() }(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Request){
		"version":       func(r *Request) { r.V = 2 },
		"id":            func(r *Request) { r.ID = "Bad ID" },
		"schedule":      func(r *Request) { r.Schedule = "" },
		"no slot":       func(r *Request) { r.Slots = nil },
		"too many":      func(r *Request) { r.Slots = make([]time.Time, MaxSlots+1) },
		"max running":   func(r *Request) { r.MaxRunning = 0 },
		"order":         func(r *Request) { r.Slots[1] = r.Slots[0] },
		"future":        func(r *Request) { r.Slots[2] = r.CreatedAt.Add(time.Second) },
		"zero slot":     func(r *Request) { r.Slots[0] = time.Time{} },
		"reason length": func(r *Request) { r.Reason = strings.Repeat("x", MaxReason+1) },
	} {
		r := request()
		mut(&r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: a request that is not valid passed", name)
		}
	}
	v, err := EncodeRequest(request())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeRequest("other-id", v); err == nil {
		t.Error("a request under another key decoded")
	}
	for _, bad := range []string{"", "{", "null", `{"v":1}`, strings.Repeat("[", 10000)} {
		if _, err := DecodeRequest("x", []byte(bad)); err == nil {
			t.Errorf("%.20q decoded", bad)
		}
	}
}

// newFold returns a Fold whose reader's clock is an hour after request()'s creation.
func newFold() *Fold {
	f := NewFold()
	f.now = func() time.Time { return t0.Add(2 * time.Hour) }
	return f
}

func rec(key string, v []byte, offset int64) *kgo.Record {
	return &kgo.Record{Key: []byte(key), Value: v, Offset: offset}
}

func TestFold(t *testing.T) {
	v, _ := EncodeRequest(request())
	id := request().ID
	h := RequestHash(v)
	progress := func(hash string, next int, running ...int) []byte {
		return EncodeProgress(Progress{ID: id, Request: hash, Next: next, Running: running, Shards: 1, At: t0})
	}

	f := newFold()
	_ = f.Add(rec(id, v, 5))
	if err := f.addProgress(id, progress(h, 2, 1), false); err == nil || f.Forged != 1 {
		t.Fatal("a progress record outside a transaction was taken")
	}
	if b := f.All[id]; b.State() != "pending" {
		t.Fatalf("state %s, want pending", b.State())
	}
	_ = f.addProgress(id, progress(h, 2, 1), true)
	if b := f.All[id]; b.Progress == nil || b.Progress.Next != 2 || b.State() != "running" {
		t.Fatalf("progress %+v, state %s", b.Progress, b.State())
	}
	// The same request written again (a restatement) is the same request.
	_ = f.Add(rec(id, v, 7))
	if b := f.All[id]; b.Progress == nil || b.Rewritten {
		t.Fatal("a restated request lost its progress")
	}
	// Other content under its ID: the progress is of the earlier request, and the new one is refused.
	r2 := request()
	r2.Slots = r2.Slots[:2]
	v2, _ := EncodeRequest(r2)
	_ = f.Add(rec(id, v2, 9))
	if b := f.All[id]; b.Progress != nil || !b.Rewritten {
		t.Fatalf("a rewritten request: progress %+v, rewritten %v", b.Progress, b.Rewritten)
	}
	// A progress that claims a slot not emitted is not taken.
	_ = f.addProgress(id, progress(RequestHash(v2), 1, 2), true)
	if b := f.All[id]; b.Progress != nil {
		t.Fatalf("an impossible progress was taken: %+v", b.Progress)
	}
	// A cancellation read before its request applies to it.
	f = newFold()
	c, _ := EncodeCancel(Cancel{ID: id, At: t0})
	_ = f.Add(rec(CancelKey(id), c, 1))
	_ = f.Add(rec(id, v, 2))
	if b := f.All[id]; b.Cancel == nil || b.State() != "cancelling" {
		t.Fatalf("cancel not applied: %+v", b)
	}
	if err := f.Add(rec(id, []byte("{not json"), 3)); err == nil || f.Invalid != 1 {
		t.Fatal("an invalid request was not refused")
	}
	_ = f.Add(rec(id, nil, 4))
	if len(f.All) != 0 {
		t.Fatal("a tombstone left the request")
	}
}

func TestReprocess(t *testing.T) {
	o := Outcomes{}
	ok, failed, partial := t0, t0.Add(time.Second), t0.Add(2*time.Second)
	o[ok.UnixNano()] = map[int]string{0: "ok", 1: "ok"}
	o[failed.UnixNano()] = map[int]string{0: "ok", 1: "dead_lettered"}
	o[partial.UnixNano()] = map[int]string{0: "ok"}
	never := t0.Add(3 * time.Second)
	for _, tc := range []struct {
		slot time.Time
		st   string
		runs map[Reprocess]bool
	}{
		{ok, "ok", map[Reprocess]bool{ReprocessNone: false, ReprocessFailed: false, ReprocessAll: true}},
		{failed, "dead_lettered", map[Reprocess]bool{ReprocessNone: false, ReprocessFailed: true, ReprocessAll: true}},
		{partial, "missing", map[Reprocess]bool{ReprocessNone: false, ReprocessFailed: true, ReprocessAll: true}},
		{never, "", map[Reprocess]bool{ReprocessNone: true, ReprocessFailed: true, ReprocessAll: true}},
	} {
		if st := o.Status(tc.slot, 2); st != tc.st {
			t.Errorf("%s: status %q, want %q", tc.slot.Format(time.TimeOnly), st, tc.st)
		}
		for re, want := range tc.runs {
			if re.Run(tc.st) != want {
				t.Errorf("%s with status %q: run %v, want %v", re, tc.st, !want, want)
			}
		}
	}
	if _, err := ParseReprocess("some"); err == nil {
		t.Error("reprocess some was taken")
	}
}

func TestTickOf(t *testing.T) {
	for id, want := range map[string]int{
		"s@2026-12-01T00:00:00Z":               0,
		"s@2026-12-01T00:00:00Z#3":             3,
		"s@2026-12-01T00:00:00Z~backfill-ab#2": 2,
	} {
		slot, shard := tickOf(id, "s")
		if slot == nil || !slot.Equal(t0) || shard != want {
			t.Errorf("%s: %v %d", id, slot, shard)
		}
	}
	for _, id := range []string{"s@2026-12-01T00:00:00Z~trigger-ab", "t@2026-12-01T00:00:00Z", "s@x", "s@2026-12-01T00:00:00Z#x"} {
		if slot, _ := tickOf(id, "s"); slot != nil {
			t.Errorf("%s parsed as a slot of s", id)
		}
	}
}

// TestRequestText: a request's schedule follows the schedule name rule, its by and reason are printable text,
// and a reader refuses (counts and skips) one created more than MaxAhead after its own time. A request of the
// previous release still decodes.
func TestRequestText(t *testing.T) {
	t.Parallel()
	for name, mut := range map[string]func(*Request){
		"schedule name":      func(r *Request) { r.Schedule = "Scan Job" },
		"schedule escape":    func(r *Request) { r.Schedule = "s\x1b[2J" },
		"long schedule":      func(r *Request) { r.Schedule = strings.Repeat("s", schedule.MaxNameLen+1) },
		"control in by":      func(r *Request) { r.By = "alice\r\n@h1" },
		"control in reason":  func(r *Request) { r.Reason = "ok\x01" },
		"invalid UTF-8":      func(r *Request) { r.Reason = "ok\xff" },
		"long by":            func(r *Request) { r.By = strings.Repeat("é", MaxReason/2+1) },
		"a C1 control in by": func(r *Request) { r.By = "a\u009bb" },
	} {
		r := request()
		mut(&r)
		if err := r.Validate(); err == nil {
			t.Errorf("%s: a request that is not valid passed", name)
		}
		if name == "invalid UTF-8" {
			continue // JSON cannot carry it: a reader sees U+FFFD
		}
		v, _ := json.Marshal(r)
		f := newFold()
		if err := f.Add(rec(r.ID, v, 1)); err == nil || f.Invalid != 1 || len(f.All) != 0 {
			t.Errorf("%s: the fold took it (%v, %d invalid)", name, err, f.Invalid)
		}
	}

	// Created in the future of its reader: refused beyond MaxAhead.
	for _, tc := range []struct {
		ahead time.Duration
		ok    bool
	}{{0, true}, {-time.Hour, true}, {MaxAhead, true}, {MaxAhead + time.Second, false}, {24 * time.Hour, false}} {
		r := request()
		v, _ := EncodeRequest(r)
		f := NewFold()
		f.now = func() time.Time { return r.CreatedAt.Add(-tc.ahead) }
		err := f.Add(rec(r.ID, v, 1))
		if (err == nil) != tc.ok || (f.All[r.ID] != nil) != tc.ok {
			t.Errorf("created %s ahead of its reader: %v, want taken %v", tc.ahead, err, tc.ok)
		}
	}

	// A request as the previous release wrote it (a dot name was a valid schedule's; its by is user@host).
	prev := `{"v":1,"id":"20261203t100000-1a2b3c4d","schedule":"..","from":"2026-12-01T10:00:30Z","to":"2026-12-01T10:03:30Z",` +
		`"reprocess":"failed","skipped":1,"slots":["2026-12-01T10:00:30Z","2026-12-01T10:01:30Z"],"max_running":2,` +
		`"schedule_version":42,"created_at":"2026-12-03T10:00:30Z","by":"deploy-7 root@ip-10-0-0-1 (User:CN=ops,O=Acme)","reason":"lost reports é"}`
	if _, err := DecodeRequest("20261203t100000-1a2b3c4d", []byte(prev)); err != nil {
		t.Errorf("a request of the previous release: %v", err)
	}
}
