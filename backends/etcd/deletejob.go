package etcd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Deleting a job (SPEC §11). One Txn, guarded by the catalog version and
// the output's running/ range as read (no claim of the job committed
// since), removes the job, its credentials, candidates and backfill
// marker, records on its output the id its OUTPUT rows stay keyed under
// when it has none yet (consumers declared later are backfilled from
// those rows, found under that id, and a job declared for the output takes
// them over under it), and writes purge/<job>: the job's INPUT
// rows, scattered over its inputs' rows/ ranges and too many for one Txn,
// are deleted after it in Txns of at most MaxTxnOps, and the marker with
// the last. A job declared again under the id finishes an interrupted
// purge before it is stored (PutJob), so it never inherits a read lock.

func (b *Backend) purgeKey(job string) string { return b.key("purge", job) }

func (b *Backend) DeleteJob(ctx context.Context, j backends.Job, version int64) (int64, error) {
	running := b.key("running", j.Output) + "/"
	resp, err := b.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(running, clientv3.WithPrefix(), clientv3.WithKeysOnly()),
		clientv3.OpGet(b.key("datasets", j.Output)),
	}, nil)
	if err != nil {
		return 0, mapErr(err, "read job "+j.ID)
	}
	var out *backends.Dataset
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		out = &backends.Dataset{}
		if err := json.Unmarshal(kvs[0].Value, out); err != nil {
			return 0, err
		}
	}
	// Its claims are its OUTPUT rows in RUNNING, keyed under its row job:
	// the output's OutputKey when it took a deleted producer's chunks over.
	rowJob := j.ID
	if out != nil && out.OutputKey != "" {
		rowJob = out.OutputKey
	}
	var blockers []backends.Blocker
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		sk, job, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), running), "/")
		if job == rowJob {
			blockers = append(blockers, backends.Blocker{Dataset: j.Output, DataID: dataIDOfSortKey(sk), Job: j.ID, Kind: backends.BlockerOutputLocked, Status: backends.StatusRunning})
		}
	}
	if len(blockers) > 0 {
		return 0, backends.LiveClaims(j.ID, j.Paused, blockers)
	}
	inputs, err := json.Marshal(j.Inputs)
	if err != nil {
		return 0, err
	}
	ops := []clientv3.Op{
		clientv3.OpDelete(b.key("jobs", j.ID)),
		clientv3.OpDelete(b.key("cand", j.ID)+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(b.key("creds", j.ID)+"/", clientv3.WithPrefix()),
		clientv3.OpDelete(b.backfillKey(j.ID)),
		clientv3.OpPut(b.purgeKey(j.ID), string(inputs)),
		b.bumpCatalog("jobs/" + j.ID + " deleted"),
	}
	ops = append(ops, b.changeOps(ctx, nil)...)
	if out != nil {
		d := *out
		if d.OutputKey == "" {
			d.OutputKey = j.ID
			val, err := json.Marshal(&d)
			if err != nil {
				return 0, err
			}
			ops = append(ops, clientv3.OpPut(b.key("datasets", j.Output), string(val)))
		}
	}
	cmps := []clientv3.Cmp{
		b.versionIs(version),
		clientv3.Compare(clientv3.ModRevision(running), "<", resp.Header.Revision+1).WithPrefix(),
	}
	tr, err := b.txn(ctx, cmps, ops, nil)
	if err != nil {
		return 0, mapErr(err, "delete job "+j.ID)
	}
	if !tr.Succeeded {
		return 0, backends.ErrCatalogChanged
	}
	// The deletion has committed: a purge that fails here is finished by
	// the next declaration of the id.
	_ = b.finishPurge(context.WithoutCancel(ctx), j.ID)
	return tr.Header.Revision, nil
}

// dataIDOfSortKey is the dataid of a backends.SortKey: its length's three
// digits dropped.
func dataIDOfSortKey(sk string) string {
	if id, err := backends.DataIDFromSortKey(sk); err == nil {
		return id // a multi-dimensional dataid's key holds each value's length
	}
	if len(sk) < 3 {
		return sk
	}
	return sk[3:]
}

// finishPurge deletes the INPUT rows of deleted job id that purge/<id>
// says are left, then the marker; nothing when there is no marker.
func (b *Backend) finishPurge(ctx context.Context, id string) error {
	resp, err := b.get(ctx, b.purgeKey(id))
	if err != nil || len(resp.Kvs) == 0 {
		return err
	}
	var inputs []string
	if err := json.Unmarshal(resp.Kvs[0].Value, &inputs); err != nil {
		return err
	}
	batch := max(1, b.cfg.MaxTxnOps/2-1)
	var keys []keyRev
	flush := func() error {
		err := b.purgeRows(ctx, keys)
		keys = keys[:0]
		return mapErr(err, "purge the reads of deleted job "+id)
	}
	mark := []byte("/" + string(backends.RoleInput) + "/" + id)
	for _, in := range inputs {
		base := b.key("rows", in) + "/"
		err := b.scan(ctx, base, clientv3.GetPrefixRangeEnd(base), 0, func(key, _ []byte, rev int64) (bool, error) {
			i := bytes.LastIndex(key, mark)
			if i < 0 || (i+len(mark) != len(key) && key[i+len(mark)] != readForSep[0]) {
				return true, nil
			}
			if keys = append(keys, keyRev{string(key), rev}); len(keys) >= batch {
				return true, flush()
			}
			return true, nil
		})
		if err != nil {
			return mapErr(err, "purge the reads of deleted job "+id)
		}
	}
	if len(keys) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	_, err = b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.purgeKey(id)), "=", resp.Kvs[0].ModRevision)},
		[]clientv3.Op{clientv3.OpDelete(b.purgeKey(id))}, nil)
	return mapErr(err, "purge the reads of deleted job "+id)
}

// keyRev is a key and the ModRevision it was read at.
type keyRev struct {
	key string
	rev int64
}

// purgeRows deletes each row of keys that is still as it was read: a row
// written since (a job declared again under the deleted id claimed the
// same input chunk, and wrote the same key) is not the deleted job's and
// stays. One Txn, a guarded delete per key.
func (b *Backend) purgeRows(ctx context.Context, keys []keyRev) error {
	if len(keys) == 0 {
		return nil
	}
	ops := make([]clientv3.Op, len(keys))
	for i, k := range keys {
		ops[i] = clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(k.key), "=", k.rev)},
			[]clientv3.Op{clientv3.OpDelete(k.key)}, nil)
	}
	_, err := b.txn(ctx, nil, ops, nil)
	return err
}
