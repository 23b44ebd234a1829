//go:build tickgroup_fault

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
)

// FaultHoldCommitsEnv names the test-only fault of a ticker built with -tags tickgroup_fault: while the file its
// value names exists, every EndTransaction of this replica's leader terms (commit or abort) is held until its
// context ends, then fails, as if the transaction coordinator no longer answered this producer while the
// group coordinator still does. The records of a held transaction are produced, so the transaction stays open
// on the broker until the next leader's fencing aborts it. The end-to-end test of the stall watchdog
// (internal/testing/e2e) sets it for one replica; a build without the tag has no such fault.
const FaultHoldCommitsEnv = "TICKGROUP_TEST_FAULT_HOLD_COMMITS"

func init() {
	fmt.Fprintln(os.Stderr, "WARNING: built with -tags tickgroup_fault: "+FaultHoldCommitsEnv+" can hold this ticker's transactions; for tests only")
}

var errFaultHeld = errors.New("test fault: the commit was held (" + FaultHoldCommitsEnv + ")")

// faultHold is a producer's hold: see FaultHoldCommitsEnv.
func (d *Dispatcher) faultHold(logger *slog.Logger) func(ctx context.Context) error {
	path := os.Getenv(FaultHoldCommitsEnv)
	if path == "" {
		return nil
	}
	return func(ctx context.Context) error {
		if _, err := os.Stat(path); err != nil {
			return nil
		}
		logger.Warn("test fault: holding the transaction's end", "env", FaultHoldCommitsEnv)
		<-ctx.Done()
		return errFaultHeld
	}
}
