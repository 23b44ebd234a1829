//go:build !linux

package main

import "syscall"

// sysProcAttr puts a child in its own process group. (Only Linux can also stop it when this program dies.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
