package tick

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCancel(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := Cancel{Schedule: "scan", Before: 10, After: at, Reason: ReasonPaused}
	got, err := DecodeCancel(EncodeCancel(c))
	if err != nil || got.Schedule != "scan" || got.Before != 10 || !got.After.Equal(at) || got.Kind != KindCancel {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	nb := func(d time.Duration) *time.Time { x := at.Add(d); return &x }
	held := New("scan", at, 0, 1)
	held.ScheduleVersion, held.NotBefore = 9, nb(time.Second)
	for _, tc := range []struct {
		name string
		t    Tick
		want bool
	}{
		{"older version, after the change", held, true},
		{"another schedule", func() Tick { x := held; x.Schedule = "other"; return x }(), false},
		{"the version of the change or newer", func() Tick { x := held; x.ScheduleVersion = 10; return x }(), false},
		{"due at or before the change", func() Tick { x := held; x.NotBefore = nb(0); return x }(), false},
		{"a manual trigger", func() Tick { x := held; x.Trigger = true; return x }(), false},
		{"no not_before: the slot decides", func() Tick { x := held; x.NotBefore = nil; x.Slot = at.Add(time.Minute); return x }(), true},
	} {
		if c.Applies(tc.t) != tc.want {
			t.Errorf("%s: Applies = %v, want %v", tc.name, !tc.want, tc.want)
		}
	}
	// A pause with an end cancels only the slots before it.
	until := Cancel{Schedule: "scan", Before: 10, After: at, Reason: ReasonPaused, Until: at.Add(time.Minute)}
	if got, err := DecodeCancel(EncodeCancel(until)); err != nil || !got.Until.Equal(until.Until) {
		t.Fatalf("round trip of Until: %+v, %v", got, err)
	}
	if got, _ := DecodeCancel(EncodeCancel(c)); !got.Until.IsZero() || strings.Contains(string(EncodeCancel(c)), "until") {
		t.Errorf("a cancel without Until writes it: %s", EncodeCancel(c))
	}
	inWindow := held
	inWindow.Slot = at.Add(59 * time.Second)
	atEnd := held
	atEnd.Slot, atEnd.NotBefore = at.Add(time.Minute), nb(time.Minute)
	if !until.Applies(inWindow) || until.Applies(atEnd) {
		t.Errorf("Until: a slot before it cancelled %v (want true), a slot at it %v (want false)", until.Applies(inWindow), until.Applies(atEnd))
	}
	for _, bad := range []string{``, `{`, `{"v":2,"kind":"cancel","schedule":"a","after":"2026-12-01T10:00:00Z"}`,
		`{"v":1,"kind":"tick","schedule":"a","after":"2026-12-01T10:00:00Z"}`, `{"v":1,"kind":"cancel","after":"2026-12-01T10:00:00Z"}`,
		`{"v":1,"kind":"cancel","schedule":"a"}`} {
		if _, err := DecodeCancel([]byte(bad)); err == nil {
			t.Errorf("DecodeCancel(%q) accepted", bad)
		}
	}
	if _, err := DecodeCancel([]byte(`{"v":2,"kind":"cancel","schedule":"a","after":"2026-12-01T10:00:00Z"}`)); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("another major version: %v, want ErrUnknownVersion", err)
	}
}

func FuzzDecodeCancel(f *testing.F) {
	f.Add(EncodeCancel(Cancel{Schedule: "scan", Before: 3, After: time.Unix(0, 0), Reason: ReasonDeleted}))
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCancel(b)
		if err != nil {
			return
		}
		if c.Schedule == "" || c.After.IsZero() {
			t.Fatalf("accepted a cancel without schedule or instant: %+v", c)
		}
		if _, err := DecodeCancel(EncodeCancel(c)); err != nil {
			t.Fatalf("re-encoding an accepted cancel fails: %v", err)
		}
	})
}
