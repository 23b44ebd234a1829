package cli

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the collector's target of the long-running commands that hold a namespace in memory
// (ticker run, ticker console): their live heap is almost all of it the schedules they hold, kept for hours, so
// the Go default of 100 (a heap that grows to twice the live one before a collection) doubles what they cost.
// At 50 the replicas of a 3,000,000-schedule fleet peaked at 1,243-1,292 MiB after a takeover where they peaked
// at 1,477-1,510 MiB, their takeovers no slower (docs/benchmarks.md, "A fleet: 3,000,000 schedules").
const DefaultGCPercent = 50

// GCPercent is the --gc-percent flag: the Go collector's GOGC for this process.
type GCPercent struct{ percent int }

// Register adds --gc-percent to fs.
func (g *GCPercent) Register(fs *flag.FlagSet) {
	fs.IntVar(&g.percent, "gc-percent", 0, fmt.Sprintf("the Go collector's target, as GOGC: the heap grows this many percent over the live heap before a collection (0: %d, or GOGC when the environment sets it; -1: off, for use with GOMEMLIMIT)", DefaultGCPercent))
}

// Check refuses a percent below -1.
func (g *GCPercent) Check() error {
	if g.percent < -1 {
		return Usagef("--gc-percent %d: want -1 (off), 0 (the default) or a positive percent", g.percent)
	}
	return nil
}

// Apply sets the collector's target: the flag's when it was given, else GOGC's when the process's environment
// has it (the runtime read it at start), else DefaultGCPercent.
func (g *GCPercent) Apply() {
	switch {
	case g.percent != 0:
		debug.SetGCPercent(g.percent)
	case os.Getenv("GOGC") != "":
	default:
		debug.SetGCPercent(DefaultGCPercent)
	}
}
