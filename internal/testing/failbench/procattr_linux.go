package failbench

import "syscall"

// sysProcAttr makes the kernel SIGKILL a started process when this one dies, so that not even a kill -9 of the
// tool leaves a ticker or a worker running. (The signal follows the OS thread that started the child; the Go
// runtime does not end its threads while no goroutine locks one, and this package locks none.)
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
