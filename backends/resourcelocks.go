package backends

import (
	"context"
	"time"
)

// Resource locks: named READ/WRITE locks on resource URIs.

func (e *engine) LockResource(ctx context.Context, client, resource string, mode LockMode, ttl time.Duration) (ResourceLock, error) {
	if err := validClient(client); err != nil {
		return ResourceLock{}, err
	}
	if err := ValidText("resource", resource, MaxLocatorBytes); err != nil || resource == "" {
		return ResourceLock{}, InvalidArgument("resource must be a URI of 1-%d bytes of UTF-8 text without NUL", MaxLocatorBytes)
	}
	if mode != LockRead && mode != LockWrite {
		return ResourceLock{}, InvalidArgument("lock mode %q is not READ or WRITE", mode)
	}
	ttl, err := resourceTTL(ttl)
	if err != nil {
		return ResourceLock{}, err
	}
	now := e.clock.Now()
	return e.b.TakeResourceLock(ctx, ResourceLock{Client: client, Resource: resource, Mode: mode, CreatedAt: now, ExpiresAt: now.Add(ttl)}, now)
}

func validClient(client string) error {
	if err := ValidText("client", client, 256); err != nil || client == "" {
		return InvalidArgument("client must be 1-256 bytes of UTF-8 text without NUL")
	}
	return nil
}

// resourceTTL applies the default to a TTL not given and refuses one
// beyond MaxResourceLockTTL: every lock expires.
func resourceTTL(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl <= 0:
		return DefaultResourceLockTTL, nil
	case ttl > MaxResourceLockTTL:
		return 0, InvalidArgument("a resource lock lasts at most %d seconds (7 days); renew it to keep it longer", int(MaxResourceLockTTL/time.Second))
	}
	return ttl, nil
}

func (e *engine) RenewResource(ctx context.Context, id, client string, ttl time.Duration) (ResourceLock, error) {
	if id == "" {
		return ResourceLock{}, InvalidArgument("lock id is empty")
	}
	if err := validClient(client); err != nil {
		return ResourceLock{}, err
	}
	ttl, err := resourceTTL(ttl)
	if err != nil {
		return ResourceLock{}, err
	}
	now := e.clock.Now()
	return e.b.RenewResourceLock(ctx, id, client, now.Add(ttl), now)
}

func (e *engine) UnlockResource(ctx context.Context, id, client string) error {
	if id == "" {
		return InvalidArgument("lock id is empty")
	}
	return e.b.DropResourceLock(ctx, id, client, e.clock.Now())
}

func (e *engine) ResourceLocks(ctx context.Context, f ResourceLockFilter) ([]ResourceLock, error) {
	return e.b.ListResourceLocks(ctx, f, e.clock.Now())
}
