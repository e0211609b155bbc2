//go:build !unix

package main

import "os"

// ownedPrivately cannot tell the owner of a file on this platform: the
// file is not trusted.
func ownedPrivately(os.FileInfo) bool { return false }

// openNoFollow opens path for reading.
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
