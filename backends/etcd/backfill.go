package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Backfill: a new job, or one whose inputs changed, gets a candidate at
// every dataid its first input has READY. The job's Txn writes a marker;
// the backfill runs after it and clears the marker; a marker left by a
// crash is resumed by the job's next upsert or by any backend's sweep.

// backfillKey is backfill/<job>, present while the job's backfill is not
// known to be complete.
func (b *Backend) backfillKey(job string) string { return b.key("backfill", job) }

// backfillVal is the value of a backfill marker.
type backfillVal struct {
	T int64 `json:"t"` // when it was written, Unix microseconds (wall clock of the writer)
}

func backfillMarker(now time.Time) string {
	v, _ := json.Marshal(backfillVal{T: now.UnixMicro()})
	return string(v)
}

// clearBackfill removes the job's backfill marker if it is still the one
// written at rev: a newer PutJob's marker stays for its own backfill.
func (b *Backend) clearBackfill(ctx context.Context, job string, rev int64) error {
	key := b.backfillKey(job)
	if _, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}, []clientv3.Op{clientv3.OpDelete(key)}, nil); err != nil {
		return mapErr(err, "clear the backfill marker of job "+job)
	}
	return nil
}

// Backfill markers written before staleBackfill ago are taken over by the
// sweep of any backend, which runs at Open and every backfillSweepEvery.
const (
	staleBackfill      = time.Minute
	backfillSweepEvery = 30 * time.Second
)

// backfillSweeper finishes the backfills their servers left pending.
func (b *Backend) backfillSweeper() {
	for {
		_ = b.sweepBackfills(b.bg, time.Now().Add(-staleBackfill)) // retried on the next round
		select {
		case <-b.bg.Done():
			return
		case <-time.After(backfillSweepEvery):
		}
	}
}

// sweepBackfills runs every pending backfill whose marker was written
// before staleBefore (a younger one may still be running where it was
// written), reading rows now, and clears the markers it finished.
func (b *Backend) sweepBackfills(ctx context.Context, staleBefore time.Time) error {
	base := b.key("backfill") + "/"
	resp, err := b.get(ctx, base, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	var errs []error
	for _, kv := range resp.Kvs {
		id := strings.TrimPrefix(string(kv.Key), base)
		var m backfillVal
		if json.Unmarshal(kv.Value, &m) == nil && time.UnixMicro(m.T).After(staleBefore) {
			continue
		}
		r, err := b.get(ctx, b.key("jobs", id))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(r.Kvs) == 1 {
			var j backends.Job
			if err := json.Unmarshal(r.Kvs[0].Value, &j); err != nil {
				errs = append(errs, fmt.Errorf("etcd: job %q is corrupt: %w", id, err))
				continue
			}
			if len(j.Inputs) > 0 {
				if err := b.backfill(ctx, j, 0); err != nil {
					errs = append(errs, err)
					continue
				}
			}
		}
		if err := b.clearBackfill(ctx, id, kv.ModRevision); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// claimProducers records the producer of every job's output that has no
// producers entry yet (a store written before these entries existed). When
// two stored jobs produce one dataset, the first in id order keeps it.
func (b *Backend) claimProducers(ctx context.Context) error {
	resp, err := b.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(b.key("jobs")+"/", clientv3.WithPrefix()),
		clientv3.OpGet(b.key("producers")+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	}, nil)
	if err != nil {
		return mapErr(err, "read jobs and producers")
	}
	have := map[string]bool{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		have[string(kv.Key)] = true
	}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		var j backends.Job
		if err := json.Unmarshal(kv.Value, &j); err != nil {
			return fmt.Errorf("etcd: job at %s is corrupt: %w", kv.Key, err)
		}
		key := b.producerKey(j.Output)
		if j.Output == "" || have[key] {
			continue
		}
		have[key] = true
		if _, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(key, j.ID)}, nil); err != nil {
			return mapErr(err, "record the producer of dataset "+j.Output)
		}
	}
	return nil
}

// backfill adds a candidate for job at every dataid whose first input chunk
// is READY, reading the rows as of revision rev (the job's own write; 0:
// now) and writing the candidates in transactions of at most MaxTxnOps puts.
func (b *Backend) backfill(ctx context.Context, j backends.Job, rev int64) error {
	in := j.Inputs[0]
	resp, err := b.get(ctx, b.producerKey(in), clientv3.WithRev(rev))
	if err != nil {
		return err
	}
	producer := "" // a source dataset's rows have no job
	if len(resp.Kvs) == 1 {
		producer = string(resp.Kvs[0].Value)
	}
	// The rows of a dataset whose producer took a deleted one's chunks
	// over stay keyed under the deleted one's id (Dataset.OutputKey).
	dresp, err := b.get(ctx, b.key("datasets", in), clientv3.WithRev(rev))
	if err != nil {
		return err
	}
	if len(dresp.Kvs) == 1 {
		var d backends.Dataset
		if err := json.Unmarshal(dresp.Kvs[0].Value, &d); err != nil {
			return err
		}
		if d.OutputKey != "" {
			producer = d.OutputKey
		}
	}
	var batch []clientv3.Op
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if b.hookBackfillFlush != nil {
			if err := b.hookBackfillFlush(); err != nil {
				return err
			}
		}
		if _, err := b.txn(ctx, nil, batch, nil); err != nil {
			return mapErr(err, "add candidates for job "+j.ID)
		}
		batch = batch[:0]
		return nil
	}
	base := b.key("rows", in) + "/"
	err = b.scan(ctx, base, clientv3.GetPrefixRangeEnd(base), rev, func(key, val []byte, _ int64) (bool, error) {
		k, ok := b.parseRowKey(string(key))
		if !ok || k.Role != backends.RoleOutput || k.Job != producer {
			return true, nil
		}
		r, err := decodeRow(k, val)
		if err != nil {
			return false, err
		}
		if r.Status != backends.StatusReady {
			return true, nil
		}
		batch = append(batch, clientv3.OpPut(b.candKey(backends.Candidate{Job: j.ID, DataID: k.DataID}), ""))
		if len(batch) >= b.cfg.MaxTxnOps {
			return true, flush()
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return flush()
}
