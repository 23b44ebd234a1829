//go:build linux

package command

import "syscall"

// prctl options (linux/prctl.h).
const (
	prSetDumpable = 4
	prGetDumpable = 3
)

// Harden makes the worker process not dumpable: its /proc/<pid>/environ, cmdline-named files, memory and file
// descriptors are then closed to other processes of the same user, handlers included (a handler runs as the
// worker's user and could otherwise read the SASL password from the worker's environment), and it cannot be
// ptrace-attached or dump core. The programs it starts are dumpable again (execve resets it). It reports
// whether it took effect.
func Harden() bool {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); errno != 0 {
		return false
	}
	return dumpable() == 0
}

// dumpable returns the process's dumpable flag (-1 when it cannot be read).
func dumpable() int {
	r, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetDumpable, 0, 0)
	if errno != 0 {
		return -1
	}
	return int(r)
}
