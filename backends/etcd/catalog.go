package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// The catalog: datasets, jobs and the producer of each dataset, and the
// catalog version that every change of them moves.

// catalogVersionKey is catalog/version. Every Txn that changes a dataset
// or a job also puts this key (its value names the change), so its
// ModRevision is the catalog version: it grows with every change.
func (b *Backend) catalogVersionKey() string { return b.key("catalog", "version") }

// bumpCatalog is the op that makes a catalog change a new version.
func (b *Backend) bumpCatalog(what string) clientv3.Op {
	return clientv3.OpPut(b.catalogVersionKey(), what)
}

func (b *Backend) Catalog(ctx context.Context) ([]backends.Dataset, []backends.Job, error) {
	ds, js, _, err := b.VersionedCatalog(ctx)
	return ds, js, err
}

// VersionedCatalog reads every dataset, every job and the catalog version
// at one revision.
func (b *Backend) VersionedCatalog(ctx context.Context) ([]backends.Dataset, []backends.Job, int64, error) {
	if b.closed.Load() {
		return nil, nil, 0, backends.Unavailable(nil, "etcd store is closed")
	}
	resp, err := b.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(b.key("datasets")+"/", clientv3.WithPrefix()),
		clientv3.OpGet(b.key("jobs")+"/", clientv3.WithPrefix()),
		clientv3.OpGet(b.catalogVersionKey(), clientv3.WithKeysOnly()),
	}, nil)
	if err != nil {
		return nil, nil, 0, mapErr(err, "read catalog")
	}
	ds := []backends.Dataset{}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		var d backends.Dataset
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			return nil, nil, 0, fmt.Errorf("etcd: dataset at %s is corrupt: %w", kv.Key, err)
		}
		ds = append(ds, d)
	}
	js := []backends.Job{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		var j backends.Job
		if err := json.Unmarshal(kv.Value, &j); err != nil {
			return nil, nil, 0, fmt.Errorf("etcd: job at %s is corrupt: %w", kv.Key, err)
		}
		if j.InputMappings == nil { // stored before mappings existed
			j.InputMappings = []backends.InputMapping{}
		}
		js = append(js, j)
	}
	var version int64
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) == 1 {
		version = kvs[0].ModRevision
	}
	return ds, js, version, nil
}

// versionIs is the condition of every catalog change: the catalog version
// is still the one the engine validated the change against.
func (b *Backend) versionIs(version int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(b.catalogVersionKey()), "=", version)
}

// putKeepingCreated stores v at key, copying CreatedAt from the value
// already there, and makes a new catalog version, if the catalog version
// is still version (backends.ErrCatalogChanged otherwise). It returns what
// it stored and the new version. Extra writes go in the same Txn.
func (b *Backend) putKeepingCreated(ctx context.Context, key string, v any, version int64, created func(old []byte) error, extra ...clientv3.Op) ([]byte, int64, error) {
	resp, err := b.get(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	if len(resp.Kvs) == 1 {
		if err := created(resp.Kvs[0].Value); err != nil {
			return nil, 0, err
		}
	}
	val, err := json.Marshal(v)
	if err != nil {
		return nil, 0, err
	}
	// Every change of key moves the version too: the version alone guards it.
	ops := append([]clientv3.Op{clientv3.OpPut(key, string(val)), b.bumpCatalog(strings.TrimPrefix(key, b.p))}, extra...)
	ops = append(ops, b.changeOps(ctx, nil)...)
	tr, err := b.txn(ctx, []clientv3.Cmp{b.versionIs(version)}, ops, nil)
	if err != nil {
		return nil, 0, mapErr(err, "write "+key)
	}
	if !tr.Succeeded {
		return nil, 0, backends.ErrCatalogChanged
	}
	return val, tr.Header.Revision, nil
}

func (b *Backend) PutDataset(ctx context.Context, d backends.Dataset, frontiers []backends.Candidate, version int64) (backends.Dataset, int64, error) {
	var ops []clientv3.Op
	for i := range frontiers {
		ops = append(ops, b.frontierOps(&frontiers[i])...)
	}
	val, version, err := b.putKeepingCreated(ctx, b.key("datasets", d.ID), &d, version, func(old []byte) error {
		var o backends.Dataset
		if err := json.Unmarshal(old, &o); err != nil {
			return fmt.Errorf("etcd: dataset %q is corrupt: %w", d.ID, err)
		}
		d.CreatedAt = o.CreatedAt
		return nil
	}, ops...)
	if err != nil {
		return backends.Dataset{}, 0, err
	}
	var stored backends.Dataset
	return stored, version, json.Unmarshal(val, &stored)
}

// producerKey is producers/<dataset>: the id of the one job whose output
// the dataset is.
func (b *Backend) producerKey(dataset string) string { return b.key("producers", dataset) }

// PutJob stores the job and claims its output in producers/<output>, in one
// Txn on condition that the catalog version is still version (the catalog
// the engine validated the job against; backends.ErrCatalogChanged
// otherwise) and that the producers entry it reads is unchanged: a dataset
// that another job produces is refused with ALREADY_EXISTS. A job moving to
// another output gives up its old producers entry in the same Txn.
//
// When the engine asks for a backfill (enqueue), or a backfill of an
// earlier call is still pending, the same Txn writes the marker
// backfill/<job>; the backfill runs after the commit, reading the rows at
// the commit's revision or later, and clears the marker when it is done.
// A backfill that fails half way stays pending: the next PutJob of the
// job, or any backend's sweep, runs it again (candidates are hints, so the
// ones added twice do no harm).
//
// The same Txn makes a new catalog version. So a Publish or a completion
// racing with the job either commits after it, and then its transaction
// saw the new version (the engine retried it with the new catalog, which
// adds the job's candidate), or committed before it, and then the
// backfill, which reads at the job's commit revision or later, finds the
// chunk READY.
func (b *Backend) PutJob(ctx context.Context, j backends.Job, enqueue bool, frontier *backends.Candidate, version int64) (backends.Job, int64, error) {
	// A deleted job of the same id leaves no read lock to this one
	// (deletejob.go).
	if err := b.finishPurge(ctx, j.ID); err != nil {
		return backends.Job{}, 0, err
	}
	j.Inputs = slices.Clone(j.Inputs)
	j.Env = slices.Clone(j.Env)
	cmps, ops, pending, err := b.jobWrite(ctx, &j, enqueue)
	if err != nil {
		return backends.Job{}, 0, err
	}
	val, err := json.Marshal(&j)
	if err != nil {
		return backends.Job{}, 0, err
	}
	cmps = append(cmps, b.versionIs(version))
	ops = append(ops, clientv3.OpPut(b.key("jobs", j.ID), string(val)), b.bumpCatalog("jobs/"+j.ID))
	ops = append(ops, b.frontierOps(frontier)...)
	ops = append(ops, b.changeOps(ctx, nil)...)
	tr, err := b.txn(ctx, cmps, ops, nil)
	if err != nil {
		return backends.Job{}, 0, mapErr(err, "write job "+j.ID)
	}
	if !tr.Succeeded {
		return backends.Job{}, 0, backends.ErrCatalogChanged
	}
	rev := tr.Header.Revision
	if pending {
		if err := b.backfill(ctx, j, rev); err != nil {
			return backends.Job{}, 0, fmt.Errorf("job %q is stored but making its READY input chunks claimable failed (upserting the job again finishes it): %w", j.ID, err)
		}
		if err := b.clearBackfill(ctx, j.ID, rev); err != nil {
			return backends.Job{}, 0, err
		}
	}
	var stored backends.Job
	return stored, rev, json.Unmarshal(val, &stored)
}

// jobWrite reads what storing j changes besides the job itself: the
// producers entries of its output (and of its old output) and its
// backfill marker. It copies CreatedAt of the stored job into j and
// returns the conditions and the writes for the job's Txn, and whether a
// backfill is to run after it.
func (b *Backend) jobWrite(ctx context.Context, j *backends.Job, enqueue bool) ([]clientv3.Cmp, []clientv3.Op, bool, error) {
	jobKey, outKey, markKey := b.key("jobs", j.ID), b.producerKey(j.Output), b.backfillKey(j.ID)
	resp, err := b.txn(ctx, nil, []clientv3.Op{clientv3.OpGet(jobKey), clientv3.OpGet(outKey), clientv3.OpGet(markKey, clientv3.WithKeysOnly())}, nil)
	if err != nil {
		return nil, nil, false, mapErr(err, "read job "+j.ID)
	}
	var cmps []clientv3.Cmp
	var ops []clientv3.Op
	var old *backends.Job
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		old = new(backends.Job)
		if err := json.Unmarshal(kvs[0].Value, old); err != nil {
			return nil, nil, false, fmt.Errorf("etcd: job %q is corrupt: %w", j.ID, err)
		}
		j.CreatedAt = old.CreatedAt
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(outKey), "=", kvs[0].ModRevision))
		if p := string(kvs[0].Value); p != j.ID {
			// The entry names another job: the producer, or a deleted one
			// (DeleteJob leaves the entry) whose chunks j takes over, when
			// no job p producing the output is stored.
			pk := b.key("jobs", p)
			r, err := b.get(ctx, pk, clientv3.WithRev(resp.Header.Revision))
			if err != nil {
				return nil, nil, false, err
			}
			if len(r.Kvs) == 1 {
				var other backends.Job
				if err := json.Unmarshal(r.Kvs[0].Value, &other); err != nil {
					return nil, nil, false, fmt.Errorf("etcd: job %q is corrupt: %w", p, err)
				}
				if other.Output == j.Output {
					return nil, nil, false, backends.AlreadyExists("dataset %q is already produced by job %q; a dataset has one producer", j.Output, p)
				}
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(pk), "=", r.Kvs[0].ModRevision))
			} else {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(pk), "=", 0))
			}
			ops = append(ops, clientv3.OpPut(outKey, j.ID))
		}
	} else {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(outKey), "=", 0))
		ops = append(ops, clientv3.OpPut(outKey, j.ID))
	}
	if old != nil && old.Output != j.Output {
		oldKey := b.producerKey(old.Output)
		r, err := b.get(ctx, oldKey, clientv3.WithRev(resp.Header.Revision))
		if err != nil {
			return nil, nil, false, err
		}
		if len(r.Kvs) == 1 && string(r.Kvs[0].Value) == j.ID {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(oldKey), "=", r.Kvs[0].ModRevision))
			ops = append(ops, clientv3.OpDelete(oldKey))
		}
	}
	marked := len(resp.Responses[2].GetResponseRange().Kvs) == 1
	pending := len(j.Inputs) > 0 && (enqueue || marked)
	switch {
	case pending:
		ops = append(ops, clientv3.OpPut(markKey, backfillMarker(time.Now())))
	case marked:
		ops = append(ops, clientv3.OpDelete(markKey)) // no inputs: nothing to backfill
	}
	return cmps, ops, pending, nil
}

// frontierOps adds a frontier candidate in a catalog change's Txn.
func (b *Backend) frontierOps(c *backends.Candidate) []clientv3.Op {
	if c == nil {
		return nil
	}
	return []clientv3.Op{clientv3.OpPut(b.candKey(*c), string(encodeCand(*c)))}
}
