//go:build tickgroup_unsafe_nostate

package dispatch

import (
	"fmt"
	"os"
)

// writeStateRecords: see staterecords.go. This build writes no state records and is not safe to run.
const writeStateRecords = false

func init() {
	fmt.Fprintln(os.Stderr, "WARNING: built with -tags tickgroup_unsafe_nostate: no state records are written, "+
		"so a new leader emits every slot again; for measurement only")
}
