package cancel

import (
	"fmt"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/tick"
)

// A consumer that rewinds reads the same cancel records again: each is remembered once, at most MaxSet are, and
// the newest stay.
func TestSetRemembersEachCancelOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var s Set
	c := tick.Cancel{Schedule: "s", Before: 10, After: t0, Reason: tick.ReasonPaused}
	for range 3 {
		s.Add(c)
	}
	if s.Len() != 1 {
		t.Fatalf("%d cancels remembered, want 1", s.Len())
	}
	if got := s.Applying(tick.New("s", t0.Add(time.Second), 0, 1)); got == nil || *got != c {
		t.Fatalf("Applying = %v, want %v", got, c)
	}
	if got := s.Applying(tick.New("s", t0, 0, 1)); got != nil {
		t.Fatalf("a cancel applies to a tick due at its instant: %v", got)
	}
	for i := range MaxSet + 1 {
		s.Add(tick.Cancel{Schedule: fmt.Sprint("s", i%7), Before: int64(i), After: t0.Add(time.Duration(i) * time.Second)})
	}
	if s.Len() > MaxSet {
		t.Fatalf("%d cancels remembered, want at most %d", s.Len(), MaxSet)
	}
	last := tick.New("s3", t0.Add(time.Duration(MaxSet+1)*time.Second), 0, 1) // after the newest cancel of s3
	if s.Applying(last) == nil {
		t.Fatal("the newest cancellations were dropped")
	}
}
