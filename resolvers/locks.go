package resolvers

import (
	"time"

	"github.com/chunklock/chunklock/backends"
)

// lockTTL reads a resource lock's ttlSeconds argument: omitted is the
// default (0); the store bounds the rest.
func lockTTL(ttlSeconds *int) (time.Duration, error) {
	if ttlSeconds == nil {
		return 0, nil
	}
	if *ttlSeconds <= 0 {
		return 0, backends.InvalidArgument("ttlSeconds must be positive (or omitted for %s)", backends.DefaultResourceLockTTL)
	}
	return time.Duration(*ttlSeconds) * time.Second, nil
}
