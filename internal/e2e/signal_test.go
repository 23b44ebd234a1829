package e2e

import (
	"syscall"
	"testing"
	"time"
)

// TestSignalDuringStartup: SIGTERM at any moment of start-up (creating topics, joining the group) is a clean
// stop with exit status 0, for both binaries. The first delay is 25 ms: a signal in the first few milliseconds,
// before the Go runtime has initialized the program's packages (about 4-5 ms on an idle machine of this kind,
// measured with GODEBUG=inittrace=1; more when it is loaded) and main has installed its handler, takes the
// default action; that window is the runtime's, not the program's start-up.
func TestSignalDuringStartup(t *testing.T) {
	f := newFleet(t)
	for _, delay := range []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond} {
		for _, p := range []*proc{f.ticker("t-" + delay.String()), f.start("w-"+delay.String(), "worker", "run", "--exec", "true")} {
			time.Sleep(delay) // the fault's timing, not a wait for a condition
			p.signal(syscall.SIGTERM)
			if err := p.wait(t, 30*time.Second); err != nil {
				t.Errorf("%s: SIGTERM %v after start: %v\n%s", p.name, delay, err, p.tail(5))
			}
		}
	}
}
