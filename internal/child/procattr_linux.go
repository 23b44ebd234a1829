package child

import "syscall"

func procAttr(o Options) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: o.Group, Pdeathsig: o.ParentDeath}
}
