//go:build !linux

package worker

// Harden does nothing where the process cannot be made non-dumpable this way.
func Harden() bool { return false }
