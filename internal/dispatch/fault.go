//go:build !tickgroup_fault

package dispatch

import (
	"context"
	"log/slog"
)

// faultHold is a producer's hold (see producer.hold): nil, always, but in a ticker built with the tag
// tickgroup_fault, which only the end-to-end tests build (fault_enabled.go). No release has the fault in it.
func (d *Dispatcher) faultHold(*slog.Logger) func(ctx context.Context) error { return nil }
