//go:build !linux

package runner

import "syscall"

// sysProcAttr puts the job process in a process group of its own, so that
// stopping it reaches its children.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
