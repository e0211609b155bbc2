//go:build unix

package main

import (
	"os"
	"syscall"
)

// ownedPrivately tells whether the current user owns fi and nobody else
// may write it.
func ownedPrivately(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o022 == 0
}
