package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
)

// Resource lock ids are "rl" and a zero-padded number, so that they sort
// in creation order as strings too.
func resourceLockID(id int64) string { return fmt.Sprintf("rl%010d", id) }

func parseResourceLockID(id string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, "rl"), 10, 64)
	return n, err == nil && strings.HasPrefix(id, "rl") && n > 0
}

func resourceLockFromDB(r sqldb.ResourceLock) backends.ResourceLock {
	return backends.ResourceLock{
		ID: resourceLockID(r.ID), Client: r.Client, Resource: r.Resource, Mode: backends.LockMode(r.Mode),
		CreatedAt: r.CreatedAt.UTC(), ExpiresAt: r.ExpiresAt.UTC(),
	}
}

// TakeResourceLock stores l if no unexpired lock on its resource refuses
// it. Callers are serialised per resource by a transaction-scoped advisory
// lock; expired locks on the resource are deleted on the way.
func (b *Backend) TakeResourceLock(ctx context.Context, l backends.ResourceLock, now time.Time) (backends.ResourceLock, error) {
	if err := b.usable(ctx); err != nil {
		return backends.ResourceLock{}, err
	}
	var holders []backends.ResourceLock
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		q := b.q.WithTx(tx)
		if err := q.LockResourceKey(ctx, sqldb.LockResourceKeyParams{Resource: l.Resource, Salt: b.salt}); err != nil {
			return err
		}
		if err := q.DeleteExpiredResourceLocks(ctx, sqldb.DeleteExpiredResourceLocksParams{Resource: l.Resource, Now: now}); err != nil {
			return err
		}
		rows, err := q.ResourceLocksOn(ctx, sqldb.ResourceLocksOnParams{Resource: l.Resource, Now: now})
		if err != nil {
			return err
		}
		held := make([]backends.ResourceLock, len(rows))
		for i, r := range rows {
			held[i] = resourceLockFromDB(r)
		}
		if holders = backends.ResourceLockRefusers(held, l, now); len(holders) > 0 {
			return nil // commit the clean-up; the caller gets LOCKED
		}
		id, err := q.InsertResourceLock(ctx, sqldb.InsertResourceLockParams{
			Client: l.Client, Resource: l.Resource, Mode: string(l.Mode), CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt,
		})
		l.ID = resourceLockID(id)
		return err
	})
	if err != nil {
		return backends.ResourceLock{}, mapErr(err, "taking a resource lock")
	}
	if len(holders) > 0 {
		return backends.ResourceLock{}, backends.LockedResource(holders, l.Resource)
	}
	return l, nil
}

// DropResourceLock removes lock id if client holds it.
func (b *Backend) DropResourceLock(ctx context.Context, id, client string, now time.Time) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	notFound := backends.NotFound("resource lock %q not found (unlocked or expired)", id)
	n, ok := parseResourceLockID(id)
	if !ok {
		return notFound
	}
	deleted, err := b.q.DeleteResourceLock(ctx, sqldb.DeleteResourceLockParams{ID: n, Client: client, Now: now})
	if err != nil {
		return mapErr(err, "removing a resource lock")
	}
	if deleted > 0 {
		return nil
	}
	return b.notHeld(ctx, id, n, now)
}

// RenewResourceLock moves the expiry of lock id if client holds it.
func (b *Backend) RenewResourceLock(ctx context.Context, id, client string, expiresAt, now time.Time) (backends.ResourceLock, error) {
	if err := b.usable(ctx); err != nil {
		return backends.ResourceLock{}, err
	}
	n, ok := parseResourceLockID(id)
	if !ok {
		return backends.ResourceLock{}, backends.NotFound("resource lock %q not found (unlocked or expired)", id)
	}
	r, err := b.q.RenewResourceLock(ctx, sqldb.RenewResourceLockParams{ExpiresAt: expiresAt, ID: n, Client: client, Now: now})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return backends.ResourceLock{}, b.notHeld(ctx, id, n, now)
	case err != nil:
		return backends.ResourceLock{}, mapErr(err, "renewing a resource lock")
	}
	return resourceLockFromDB(r), nil
}

// notHeld explains why client's write to lock id (number n) found no
// lock: NOT_FOUND when there is no such unexpired lock, FORBIDDEN when
// another client holds it.
func (b *Backend) notHeld(ctx context.Context, id string, n int64, now time.Time) error {
	_, err := b.q.ResourceLockClient(ctx, sqldb.ResourceLockClientParams{ID: n, Now: now})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return backends.NotFound("resource lock %q not found (unlocked or expired)", id)
	case err != nil:
		return mapErr(err, "reading a resource lock")
	}
	return backends.Forbidden("resource lock %q is held by another client", id)
}

// ListResourceLocks lists unexpired locks by id.
func (b *Backend) ListResourceLocks(ctx context.Context, f backends.ResourceLockFilter, now time.Time) ([]backends.ResourceLock, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	rows, err := b.listQ.ListResourceLocks(ctx, sqldb.ListResourceLocksParams{
		Now: now, Resource: textOrNull(f.Resource), Client: textOrNull(f.Client), Mode: textOrNull(string(f.Mode)),
	})
	if err != nil {
		return nil, mapErr(err, "listing resource locks")
	}
	out := make([]backends.ResourceLock, len(rows))
	for i, r := range rows {
		out[i] = resourceLockFromDB(r)
	}
	return out, nil
}
