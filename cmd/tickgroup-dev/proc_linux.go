package main

import "syscall"

// sysProcAttr puts a child in its own process group and, should this program die without stopping it (SIGKILL,
// a crash), has the kernel send it SIGTERM so that no replica is left behind competing for leadership.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
