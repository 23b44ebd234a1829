//go:build !linux

package command

// Harden does nothing where the process cannot be made non-dumpable this way.
func Harden() bool { return false }
