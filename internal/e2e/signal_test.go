package e2e

import (
	"syscall"
	"testing"
	"time"
)

// TestSignalDuringStartup: SIGTERM at any moment of start-up (creating topics, joining the group) is a clean
// stop with exit status 0, for both binaries.
func TestSignalDuringStartup(t *testing.T) {
	f := newFleet(t)
	for _, delay := range []time.Duration{10 * time.Millisecond, 30 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond} {
		for _, p := range []*proc{f.ticker("t-" + delay.String()), f.start("w-"+delay.String(), "worker", "run", "--exec", "true")} {
			time.Sleep(delay) // the fault's timing, not a wait for a condition
			p.signal(syscall.SIGTERM)
			if err := p.wait(t, 30*time.Second); err != nil {
				t.Errorf("%s: SIGTERM %v after start: %v\n%s", p.name, delay, err, p.tail(5))
			}
		}
	}
}
