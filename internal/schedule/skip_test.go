package schedule

import (
	"reflect"
	"testing"
	"time"
)

// TestSkipping: a skipping schedule's Next, Upcoming and plans step over the slots its Skip takes out, by the
// Skip's until when it gives one and slot by slot when it does not; Spec is the definition's; Skipping(nil)
// gives the definition's slots back.
func TestSkipping(t *testing.T) {
	t.Parallel()
	raw := mustCompile(t, Spec{Name: "x", Every: Duration(time.Hour)})
	calls := 0
	// Odd hours are out, one at a time; the whole of 2027-01-02 is out at once.
	day := mustTime(t, "2027-01-02T00:00:00Z")
	s := raw.Skipping(func(slot time.Time) (bool, time.Time) {
		calls++
		if !slot.Before(day) && slot.Before(day.Add(24*time.Hour)) {
			return true, day.Add(24 * time.Hour)
		}
		return slot.Hour()%2 == 1, time.Time{}
	})
	if !s.Skipped() || raw.Skipped() {
		t.Fatal("Skipped")
	}
	if !reflect.DeepEqual(s.Spec(), raw.Spec()) {
		t.Errorf("Spec = %+v, want the definition's", s.Spec())
	}
	got := nextN(s, mustTime(t, "2027-01-01T20:30:00Z"), 4)
	want := []string{"2027-01-01T22:00:00Z", "2027-01-03T00:00:00Z", "2027-01-03T02:00:00Z", "2027-01-03T04:00:00Z"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Next: %v, want %v", got, want)
	}
	if calls > 12 {
		t.Errorf("%d calls of the Skip for 4 slots across a skipped day", calls)
	}
	p := s.Plan(mustTime(t, "2027-01-01T19:00:00Z"), mustTime(t, "2027-01-02T12:00:00Z"))
	// Catch-up all: the even hours before the skipped day, none of it.
	if len(p.Emit) != 2 || !p.Emit[1].Equal(mustTime(t, "2027-01-01T22:00:00Z")) || p.Missed != 0 || !p.Next.Equal(mustTime(t, "2027-01-03T00:00:00Z")) {
		t.Errorf("Plan = %+v", p)
	}
	if back := s.Skipping(nil); back.Skipped() || !back.Next(day).Equal(day.Add(time.Hour)) {
		t.Errorf("Skipping(nil): %v", back.Next(day))
	}
}
