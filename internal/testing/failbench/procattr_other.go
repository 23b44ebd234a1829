//go:build !linux

package failbench

import "syscall"

// sysProcAttr: without Pdeathsig, only the tool's own clean-up stops the processes it started.
func sysProcAttr() *syscall.SysProcAttr { return nil }
