//go:build !unix

package embedded

import "os"

// tryLock is not implemented on this platform: the data directory is not
// protected against a second process.
func tryLock(*os.File) error { return nil }
