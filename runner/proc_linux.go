package runner

import "syscall"

// sysProcAttr puts the job process in a process group of its own (so that
// stopping it reaches its children) and has the kernel kill it should the
// runner die.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
