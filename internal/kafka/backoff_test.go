package kafka

import (
	"testing"
	"time"
)

// TestRetryBackoff: 100 ms, 200 ms, then 250 ms, each less up to a fifth.
func TestRetryBackoff(t *testing.T) {
	for fails, want := range map[int]time.Duration{0: 100 * time.Millisecond, 1: 100 * time.Millisecond, 2: 200 * time.Millisecond,
		3: 250 * time.Millisecond, 4: 250 * time.Millisecond, 50: 250 * time.Millisecond} {
		for range 100 {
			if got := RetryBackoff(fails); got > want || got < want-want/5 {
				t.Fatalf("RetryBackoff(%d) = %v, want within [%v, %v]", fails, got, want-want/5, want)
			}
		}
	}
}
