package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Credentials: dataset secrets encrypted to one job's key.

func (b *Backend) PutCredential(ctx context.Context, c backends.Credential) error {
	val, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if b.closed.Load() {
		return backends.Unavailable(nil, "etcd store is closed")
	}
	// One Txn whichever way: the change records whether a credential was
	// there before.
	key := b.key("creds", c.Job, c.Dataset)
	put := clientv3.OpPut(key, string(val))
	replaced := append([]clientv3.Op{put}, b.changeOps(ctx, backends.CredentialBefore(c.Job, c.Dataset))...)
	created := append([]clientv3.Op{put}, b.changeOps(ctx, nil)...)
	if _, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.Version(key), ">", 0)}, replaced, created); err != nil {
		return mapErr(err, "write credential")
	}
	return nil
}

// SwapCredential stores c if the stored credential still has the
// ciphertext old, in a Txn conditional on the revision it read.
func (b *Backend) SwapCredential(ctx context.Context, c backends.Credential, old []byte) (bool, error) {
	val, err := json.Marshal(c)
	if err != nil {
		return false, err
	}
	key := b.key("creds", c.Job, c.Dataset)
	for {
		resp, err := b.get(ctx, key)
		if err != nil {
			return false, err
		}
		if len(resp.Kvs) != 1 {
			return false, nil
		}
		var cur backends.Credential
		if err := json.Unmarshal(resp.Kvs[0].Value, &cur); err != nil {
			return false, fmt.Errorf("etcd: credential at %s is corrupt: %w", key, err)
		}
		if !bytes.Equal(cur.Ciphertext, old) {
			return false, nil
		}
		tr, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)}, append([]clientv3.Op{clientv3.OpPut(key, string(val))}, b.changeOps(ctx, backends.CredentialBefore(c.Job, c.Dataset))...), nil)
		if err != nil {
			return false, mapErr(err, "write credential")
		}
		if tr.Succeeded {
			return true, nil
		}
	}
}

func (b *Backend) Credentials(ctx context.Context, job string) ([]backends.Credential, error) {
	resp, err := b.get(ctx, b.key("creds", job)+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []backends.Credential
	for _, kv := range resp.Kvs {
		var c backends.Credential
		if err := json.Unmarshal(kv.Value, &c); err != nil {
			return nil, fmt.Errorf("etcd: credential at %s is corrupt: %w", kv.Key, err)
		}
		out = append(out, c)
	}
	return out, nil
}
