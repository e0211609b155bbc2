package etcd

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// resourceHash names a resource URI in keys (URIs contain '/').
func resourceHash(resource string) string {
	h := sha256.Sum256([]byte(resource))
	return hex.EncodeToString(h[:16])
}

// TakeResourceLock reads the resource's locks and the lock counter, and
// stores the new lock in one Txn guarded by both: a concurrent lock on the
// same resource (or any new lock) makes it read again. Expired locks on the
// resource are removed on the way.
func (b *Backend) TakeResourceLock(ctx context.Context, l backends.ResourceLock, now time.Time) (backends.ResourceLock, error) {
	hash := resourceHash(l.Resource)
	base := b.key("rlocks", hash) + "/"
	seqKey := b.key("rlockseq")
	for {
		resp, err := b.txn(ctx, nil, []clientv3.Op{
			clientv3.OpGet(base, clientv3.WithPrefix()),
			clientv3.OpGet(seqKey),
		}, nil)
		if err != nil {
			return backends.ResourceLock{}, mapErr(err, "read resource locks")
		}
		rev := resp.Header.Revision
		var live []backends.ResourceLock
		var purge []clientv3.Op
		for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
			var h backends.ResourceLock
			if err := json.Unmarshal(kv.Value, &h); err != nil {
				return backends.ResourceLock{}, fmt.Errorf("etcd: resource lock at %s is corrupt: %w", kv.Key, err)
			}
			if !now.Before(h.ExpiresAt) {
				if len(purge)+5 < b.cfg.MaxTxnOps {
					purge = append(purge, clientv3.OpDelete(string(kv.Key)), clientv3.OpDelete(b.key("rlockids", h.ID)))
				}
				continue
			}
			live = append(live, h)
		}
		if holders := backends.ResourceLockRefusers(live, l, now); len(holders) > 0 {
			return backends.ResourceLock{}, backends.LockedResource(holders, l.Resource)
		}
		var n int64
		seqCmp := clientv3.Compare(clientv3.CreateRevision(seqKey), "=", 0)
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
			if n, err = strconv.ParseInt(string(kvs[0].Value), 10, 64); err != nil {
				return backends.ResourceLock{}, fmt.Errorf("etcd: resource lock counter is corrupt: %w", err)
			}
			seqCmp = clientv3.Compare(clientv3.ModRevision(seqKey), "=", kvs[0].ModRevision)
		}
		n++
		l.ID = fmt.Sprintf("rl%010d", n)
		val, err := json.Marshal(l)
		if err != nil {
			return backends.ResourceLock{}, err
		}
		ops := append(purge,
			clientv3.OpPut(base+l.ID, string(val)),
			clientv3.OpPut(b.key("rlockids", l.ID), hash),
			clientv3.OpPut(seqKey, strconv.FormatInt(n, 10)))
		tr, err := b.txn(ctx, []clientv3.Cmp{
			seqCmp,
			clientv3.Compare(clientv3.ModRevision(base), "<", rev+1).WithPrefix(),
		}, ops, nil)
		if err != nil {
			// An unknown outcome is reported as such: the caller may list
			// its locks (the lock carries its client name) and retry.
			return backends.ResourceLock{}, mapErr(err, "take resource lock")
		}
		if tr.Succeeded {
			return l, nil
		}
	}
}

// heldLock reads lock id for its holder client: NOT_FOUND when there is no
// such unexpired lock, FORBIDDEN when another client holds it.
func (b *Backend) heldLock(ctx context.Context, id, client string, now time.Time) (string, backends.ResourceLock, int64, error) {
	var l backends.ResourceLock
	notFound := backends.NotFound("resource lock %q not found (unlocked or expired)", id)
	resp, err := b.get(ctx, b.key("rlockids", id))
	if err != nil {
		return "", l, 0, err
	}
	if len(resp.Kvs) == 0 {
		return "", l, 0, notFound
	}
	key := b.key("rlocks", string(resp.Kvs[0].Value), id)
	lr, err := b.get(ctx, key)
	if err != nil {
		return "", l, 0, err
	}
	if len(lr.Kvs) == 0 {
		return "", l, 0, notFound
	}
	if err := json.Unmarshal(lr.Kvs[0].Value, &l); err != nil {
		return "", l, 0, fmt.Errorf("etcd: resource lock at %s is corrupt: %w", key, err)
	}
	if !now.Before(l.ExpiresAt) {
		return "", l, 0, notFound
	}
	if l.Client != client {
		return "", l, 0, backends.Forbidden("resource lock %q is held by another client", id)
	}
	return key, l, lr.Kvs[0].ModRevision, nil
}

func (b *Backend) DropResourceLock(ctx context.Context, id, client string, now time.Time) error {
	for {
		key, _, rev, err := b.heldLock(ctx, id, client, now)
		if err != nil {
			return err
		}
		tr, err := b.txn(ctx,
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)},
			[]clientv3.Op{clientv3.OpDelete(key), clientv3.OpDelete(b.key("rlockids", id))}, nil)
		if err != nil {
			return mapErr(err, "drop resource lock")
		}
		if tr.Succeeded {
			return nil
		}
	}
}

func (b *Backend) RenewResourceLock(ctx context.Context, id, client string, expiresAt, now time.Time) (backends.ResourceLock, error) {
	for {
		key, l, rev, err := b.heldLock(ctx, id, client, now)
		if err != nil {
			return backends.ResourceLock{}, err
		}
		l.ExpiresAt = expiresAt
		val, err := json.Marshal(l)
		if err != nil {
			return backends.ResourceLock{}, err
		}
		tr, err := b.txn(ctx,
			[]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)},
			[]clientv3.Op{clientv3.OpPut(key, string(val))}, nil)
		if err != nil {
			return backends.ResourceLock{}, mapErr(err, "renew resource lock")
		}
		if tr.Succeeded {
			return l, nil
		}
	}
}

func (b *Backend) ListResourceLocks(ctx context.Context, f backends.ResourceLockFilter, now time.Time) ([]backends.ResourceLock, error) {
	base := b.key("rlocks") + "/"
	if f.Resource != "" {
		base = b.key("rlocks", resourceHash(f.Resource)) + "/"
	}
	out := []backends.ResourceLock{}
	err := b.scan(ctx, base, clientv3.GetPrefixRangeEnd(base), 0, func(key, val []byte, _ int64) (bool, error) {
		var l backends.ResourceLock
		if err := json.Unmarshal(val, &l); err != nil {
			return false, fmt.Errorf("etcd: resource lock at %s is corrupt: %w", key, err)
		}
		if !now.Before(l.ExpiresAt) ||
			(f.Resource != "" && l.Resource != f.Resource) ||
			(f.Client != "" && l.Client != f.Client) ||
			(f.Mode != "" && l.Mode != f.Mode) {
			return true, nil
		}
		out = append(out, l)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b backends.ResourceLock) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
