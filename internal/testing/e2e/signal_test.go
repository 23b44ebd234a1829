package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/tickgroup/tickgroup/internal/cli"
)

// TestSignalDuringStartup: SIGTERM at any moment of start-up (creating topics, joining the group) is a clean
// stop with exit status 0, for both binaries. The delays count from the first line of the program's log
// (cli.SignalsHandled, at debug level), not from the exec: before main has installed its handler, while the Go
// runtime starts and initializes the packages (about 4-5 ms on an idle machine of this kind, measured with
// GODEBUG=inittrace=1, and far more on a loaded one), a signal takes the default action; that window is the
// runtime's, not the program's start-up. Timed from the exec, a loaded machine let the 25 ms signal land in
// it.
func TestSignalDuringStartup(t *testing.T) {
	f := newFleet(t)
	for _, delay := range []time.Duration{0, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond} {
		for _, p := range []*proc{f.ticker("t-" + delay.String()), f.start("w-"+delay.String(), "worker", "run", "--exec", "true")} {
			p.waitLog(t, cli.SignalsHandled, 30*time.Second)
			time.Sleep(delay) // the fault's timing, not a wait for a condition
			p.signal(syscall.SIGTERM)
			if err := p.wait(t, 30*time.Second); err != nil {
				t.Errorf("%s: SIGTERM %v after %q: %v\n%s", p.name, delay, cli.SignalsHandled, err, p.tail(5))
			}
		}
	}
}
