package main

import (
	"math/rand/v2"
	"time"
)

// handleCommand is the subcommand the demo workers run per tick (worker run --exec '<this program> handle').
const handleCommand = "handle"

// handle is the demo tick handler: it does nothing for a few milliseconds, so that the view has a duration to
// show, and succeeds. A real handler would read TICK_ID, TICK_SCHEDULE, TICK_SLOT, ... from its environment.
func handle() int {
	time.Sleep(time.Duration(2+rand.IntN(30)) * time.Millisecond)
	return 0
}
