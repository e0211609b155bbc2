//go:build unix

package embedded

import (
	"os"
	"syscall"
)

// tryLock takes an exclusive flock without waiting. flock locks belong to
// the open file, so two opens in one process exclude each other too.
func tryLock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
