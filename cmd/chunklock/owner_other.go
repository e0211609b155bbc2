//go:build !unix

package main

import "os"

// notPrivate cannot tell the owner of a file on this platform: nothing is
// private.
func notPrivate(_ os.FileInfo, name, _ string) (problem, fix string) {
	return name + " cannot be checked for its owner on this system", "delete it"
}

// openNoFollow opens path for reading.
func openNoFollow(path string) (*os.File, error) { return os.Open(path) }
