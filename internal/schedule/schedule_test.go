package schedule

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNextEvery(t *testing.T) {
	t.Parallel()
	ptr := func(s string) *time.Time { v := mustTime(t, s); return &v }
	tests := []struct {
		name string
		spec Spec
		from string
		want []string
	}{
		{"minute", Spec{Every: Duration(time.Minute)}, "2026-03-08T06:59:30Z", []string{
			"2026-03-08T07:00:00Z", "2026-03-08T07:01:00Z",
		}},
		{"strictly after a slot", Spec{Every: Duration(time.Minute)}, "2026-03-08T07:00:00Z", []string{"2026-03-08T07:01:00Z"}},
		{"sub-second after", Spec{Every: Duration(time.Minute)}, "2026-03-08T06:59:59.999Z", []string{"2026-03-08T07:00:00Z"}},
		{"offset", Spec{Every: Duration(time.Hour), Offset: Duration(15 * time.Minute)}, "2026-03-08T07:15:00Z", []string{
			"2026-03-08T08:15:00Z", "2026-03-08T09:15:00Z",
		}},
		{"odd interval counted from the epoch", Spec{Every: Duration(7 * time.Second)}, "1970-01-01T00:00:00Z", []string{
			"1970-01-01T00:00:07Z", "1970-01-01T00:00:14Z",
		}},
		{"before the epoch", Spec{Every: Duration(7 * time.Second), Offset: Duration(3 * time.Second)}, "1969-12-31T23:59:50Z", []string{
			"1969-12-31T23:59:56Z", "1970-01-01T00:00:03Z", "1970-01-01T00:00:10Z", // 3s + k*7s, k = -1, 0, 1
		}},
		{"daily ignores DST (real seconds)", Spec{Every: Duration(24 * time.Hour), Offset: Duration(7 * time.Hour)}, "2026-03-07T12:00:00Z", []string{
			"2026-03-08T07:00:00Z", "2026-03-09T07:00:00Z",
		}},
		{"start is the first slot", Spec{Every: Duration(time.Minute), Start: ptr("2026-03-08T07:00:00Z")}, "2020-01-01T00:00:00Z", []string{
			"2026-03-08T07:00:00Z", "2026-03-08T07:01:00Z",
		}},
		{"start between slots", Spec{Every: Duration(time.Minute), Start: ptr("2026-03-08T07:00:01Z")}, "2020-01-01T00:00:00Z", []string{
			"2026-03-08T07:01:00Z",
		}},
		{"end is the last slot", Spec{Every: Duration(time.Minute), End: ptr("2026-03-08T07:01:00Z")}, "2026-03-08T06:59:30Z", []string{
			"2026-03-08T07:00:00Z", "2026-03-08T07:01:00Z", "zero",
		}},
		{"cron start and end", Spec{Cron: "0 2 * * *", TZ: "Europe/Berlin", Start: ptr("2026-03-29T00:00:00Z"), End: ptr("2026-03-30T00:30:00Z")},
			"2026-01-01T00:00:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-30T00:00:00Z", "zero"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sch := mustCompile(t, tt.spec)
			from, err := time.Parse(time.RFC3339Nano, tt.from)
			if err != nil {
				t.Fatal(err)
			}
			if got := nextN(sch, from, len(tt.want)); strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestNextIsUTC(t *testing.T) {
	t.Parallel()
	sch := mustCompile(t, Spec{Cron: "0 2 * * *", TZ: "Asia/Tokyo"})
	berlin, _ := time.LoadLocation("Europe/Berlin")
	if got := sch.Next(time.Date(2026, 5, 1, 0, 0, 0, 0, berlin)); got.Location() != time.UTC {
		t.Errorf("Next returned location %v, want UTC", got.Location())
	}
}

func TestJitter(t *testing.T) {
	t.Parallel()
	const j = 10 * time.Second
	a := mustCompile(t, Spec{Name: "a", Every: Duration(time.Minute), Jitter: Duration(j)})
	a2 := mustCompile(t, Spec{Name: "a", Every: Duration(time.Minute), Jitter: Duration(j), Payload: "other"})
	b := mustCompile(t, Spec{Name: "b", Every: Duration(time.Minute), Jitter: Duration(j)})
	none := mustCompile(t, Spec{Name: "a", Every: Duration(time.Minute)})

	slot := mustTime(t, "2026-03-08T07:00:00Z")
	distinct := map[time.Duration]bool{}
	differs := false
	for i := range 1000 {
		s := slot.Add(time.Duration(i) * time.Minute)
		got := a.Jitter(s)
		if got < 0 || got >= j {
			t.Fatalf("Jitter(%s) = %s, outside [0, %s)", s, got, j)
		}
		if again := a2.Jitter(s.In(time.FixedZone("X", 3600))); again != got {
			t.Fatalf("Jitter is not a function of (name, slot): %s then %s", got, again)
		}
		if want := s.Add(got); !a.Due(s).Equal(want) {
			t.Fatalf("Due(%s) = %s, want %s", s, a.Due(s), want)
		}
		if none.Jitter(s) != 0 {
			t.Fatalf("Jitter without jitter = %s", none.Jitter(s))
		}
		differs = differs || b.Jitter(s) != got
		distinct[got.Truncate(time.Second)] = true
	}
	if !differs {
		t.Error("schedules with different names get identical jitter")
	}
	if len(distinct) < 10 {
		t.Errorf("jitter uses only %d of the 10 whole seconds available", len(distinct))
	}
}

// The compact form keeps every field: Spec restates exactly what was compiled, defaults left as written.
func TestSpecRoundTrip(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	end := start.Add(48 * time.Hour)
	specs := []Spec{
		{Name: "plain", Every: Duration(time.Minute)},
		{Name: "full-every", Every: Duration(time.Hour), Offset: Duration(5 * time.Minute), Jitter: Duration(time.Second),
			Shards: 7, Payload: "p", Catchup: CatchupAll, CatchupMax: 12, Deadline: Duration(time.Minute), Overlap: OverlapSkip,
			Start: &start, End: &end, Paused: true, Metrics: true},
		{Name: "cron", Cron: "0 6 * * MON-FRI", TZ: "Europe/Berlin", Catchup: CatchupSkip, Overlap: OverlapQueue},
		{Name: "limits", Every: Duration(time.Minute), Timeout: Duration(90 * time.Second), MaxAttempts: 1},
		{Name: "cron-utc", Cron: "@hourly", Catchup: CatchupLatest},
		{Name: "calendars", Cron: "0 9 * * *", TZ: "Europe/Berlin", Exclude: []string{"de", "company"}, OnExcluded: OnExcludedNextBusinessDay},
	}
	for _, s := range specs {
		sch, err := s.Compile()
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if got := sch.Spec(); !reflect.DeepEqual(got, s) {
			t.Errorf("%s: Spec() = %+v, want %+v", s.Name, got, s)
		}
		if got := sch.Spec(); got.Start != nil && got.Start == s.Start {
			t.Errorf("%s: Spec() shares its Start with the compiled spec", s.Name)
		}
		if got := sch.Spec(); len(got.Exclude) > 0 && &got.Exclude[0] == &s.Exclude[0] {
			t.Errorf("%s: Spec() shares its Exclude with the compiled spec", s.Name)
		}
		if !slices.Equal(sch.Exclude(), s.Exclude) || sch.OnExcluded() != s.OnExcluded {
			t.Errorf("%s: Exclude(), OnExcluded() = %q, %q", s.Name, sch.Exclude(), sch.OnExcluded())
		}
	}
}

func TestUpcoming(t *testing.T) {
	end := time.Date(2026, 12, 5, 10, 0, 3, 0, time.UTC)
	s, err := Spec{Name: "u", Every: Duration(time.Second), End: &end}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	got := s.Upcoming(time.Date(2026, 12, 5, 10, 0, 0, 500, time.UTC), 5)
	want := []time.Time{end.Add(-2 * time.Second), end.Add(-time.Second), end}
	if !slices.Equal(got, want) {
		t.Errorf("Upcoming = %v, want %v (strictly after, and none past End)", got, want)
	}
	c, err := Spec{Name: "c", Cron: "30 2 * * *", TZ: "Europe/Paris"}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	// 2027-03-28 has no 02:30 in Paris (the clocks go from 02:00 to 03:00).
	got = c.Upcoming(time.Date(2027, 3, 26, 12, 0, 0, 0, time.UTC), 3)
	if len(got) != 3 || !got[0].Equal(time.Date(2027, 3, 27, 1, 30, 0, 0, time.UTC)) {
		t.Errorf("Upcoming over a DST gap = %v", got)
	}
	t.Logf("over the gap: %v", got)
}

// TestPausedUntil: a pause with an end emits from that end on, as a later Start would; the spec round-trips;
// the fields are only for a paused schedule.
func TestPausedUntil(t *testing.T) {
	until := time.Date(2026, 12, 5, 10, 0, 30, 0, time.UTC)
	spec := Spec{Name: "p", Every: Duration(10 * time.Second), Paused: true, PausedUntil: &until, PauseReason: "maintenance of the orders DB (OPS-123)"}
	s, err := spec.Compile()
	if err != nil {
		t.Fatal(err)
	}
	if s.Paused() || !s.Pausing() || !s.PausedUntil().Equal(until) {
		t.Errorf("Paused %v, Pausing %v, PausedUntil %v", s.Paused(), s.Pausing(), s.PausedUntil())
	}
	got := s.Upcoming(until.Add(-time.Hour), 3)
	want := []time.Time{until, until.Add(10 * time.Second), until.Add(20 * time.Second)}
	if !slices.Equal(got, want) {
		t.Errorf("slots of a pause until %v: %v, want %v (the first at or after it)", until, got, want)
	}
	if back := s.Spec(); !back.Paused || !back.PausedUntil.Equal(until) || back.PauseReason != spec.PauseReason {
		t.Errorf("Spec() = %+v", back)
	}
	b, err := Encode(spec)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := Decode(b)
	if err != nil || !dec.PausedUntil.Equal(until) || dec.PauseReason != spec.PauseReason {
		t.Errorf("Decode(Encode) = %+v, %v", dec, err)
	}
	plain, err := Spec{Name: "q", Every: Duration(time.Second), Paused: true, PauseReason: "why"}.Compile()
	if err != nil || !plain.Paused() || !plain.Pausing() || plain.PausedUntil() != nil {
		t.Errorf("a pause without an end: %v", err)
	}
	for _, bad := range []Spec{
		{Name: "b", Every: Duration(time.Second), PausedUntil: &until},
		{Name: "b", Every: Duration(time.Second), PauseReason: "x"},
		{Name: "b", Every: Duration(time.Second), Paused: true, PauseReason: "a\nb"},
		{Name: "b", Every: Duration(time.Second), Paused: true, PauseReason: strings.Repeat("x", MaxReasonLen+1)},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", bad)
		}
	}
}
