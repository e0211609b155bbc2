package engine

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Resource locks: named READ/WRITE locks on resource URIs.

func (e *engine) LockResource(ctx context.Context, client, resource string, mode backends.LockMode, ttl time.Duration) (backends.ResourceLock, error) {
	if err := validClient(client); err != nil {
		return backends.ResourceLock{}, err
	}
	if err := backends.ValidText("resource", resource, backends.MaxLocatorBytes); err != nil || resource == "" {
		return backends.ResourceLock{}, backends.InvalidArgument("resource must be a URI of 1-%d bytes of UTF-8 text without NUL", backends.MaxLocatorBytes)
	}
	if mode != backends.LockRead && mode != backends.LockWrite {
		return backends.ResourceLock{}, backends.InvalidArgument("lock mode %q is not READ or WRITE", mode)
	}
	ttl, err := resourceTTL(ttl)
	if err != nil {
		return backends.ResourceLock{}, err
	}
	now := e.clock.Now()
	return e.b.TakeResourceLock(ctx, backends.ResourceLock{Client: client, Resource: resource, Mode: mode, CreatedAt: now, ExpiresAt: now.Add(ttl)}, now)
}

func validClient(client string) error {
	if err := backends.ValidText("client", client, 256); err != nil || client == "" {
		return backends.InvalidArgument("client must be 1-256 bytes of UTF-8 text without NUL")
	}
	return nil
}

// resourceTTL applies the default to a TTL not given and refuses one
// beyond MaxResourceLockTTL: every lock expires.
func resourceTTL(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl <= 0:
		return backends.DefaultResourceLockTTL, nil
	case ttl > backends.MaxResourceLockTTL:
		return 0, backends.InvalidArgument("a resource lock lasts at most %d seconds (7 days); renew it to keep it longer", int(backends.MaxResourceLockTTL/time.Second))
	}
	return ttl, nil
}

func (e *engine) RenewResource(ctx context.Context, id, client string, ttl time.Duration) (backends.ResourceLock, error) {
	if id == "" {
		return backends.ResourceLock{}, backends.InvalidArgument("lock id is empty")
	}
	if err := validClient(client); err != nil {
		return backends.ResourceLock{}, err
	}
	ttl, err := resourceTTL(ttl)
	if err != nil {
		return backends.ResourceLock{}, err
	}
	now := e.clock.Now()
	return e.b.RenewResourceLock(ctx, id, client, now.Add(ttl), now)
}

func (e *engine) UnlockResource(ctx context.Context, id, client string) error {
	if id == "" {
		return backends.InvalidArgument("lock id is empty")
	}
	return e.b.DropResourceLock(ctx, id, client, e.clock.Now())
}

func (e *engine) ResourceLocks(ctx context.Context, f backends.ResourceLockFilter) ([]backends.ResourceLock, error) {
	return e.b.ListResourceLocks(ctx, f, e.clock.Now())
}
