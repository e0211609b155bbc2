//go:build unix

package main

import (
	"fmt"
	"os"
	"syscall"
)

// notPrivate tells, of fi (named name in messages, path in commands), why
// it is not private to the current user: another owner, or write
// permission for group or others; and how to fix that. "" when it is
// private.
func notPrivate(fi os.FileInfo, name, path string) (problem, fix string) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return name + " cannot be checked for its owner", "run the command in a directory of your own"
	}
	if int(st.Uid) != os.Getuid() {
		return fmt.Sprintf("%s is owned by uid %d, not by you (uid %d)", name, st.Uid, os.Getuid()), "run the command in a directory of your own"
	}
	var who, bits string
	switch fi.Mode().Perm() & 0o022 {
	case 0:
		return "", ""
	case 0o020:
		who, bits = "its group", "g-w"
	case 0o002:
		who, bits = "other users", "o-w"
	default:
		who, bits = "its group and by other users", "go-w"
	}
	return fmt.Sprintf("%s may be written by %s (mode %04o)", name, who, fi.Mode().Perm()), fmt.Sprintf("make it private with `chmod %s %s`", bits, path)
}

// openNoFollow opens path for reading, refusing a symbolic link.
func openNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
