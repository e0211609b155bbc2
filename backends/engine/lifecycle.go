package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chunklock/chunklock/backends"
)

// The catalog lifecycle (SPEC §11): pausing and resuming jobs. A pause is
// a catalog change like any other: it commits a new catalog version, and
// every claim transaction, on any replica, commits only under the version
// it decided with (catalogcache.go), so no claim decided before the pause
// commits after it.

func (e *engine) PauseJob(ctx context.Context, id string) (backends.Job, error) {
	return e.setPaused(ctx, id, true)
}

func (e *engine) ResumeJob(ctx context.Context, id string) (backends.Job, error) {
	return e.setPaused(ctx, id, false)
}

// setPaused stores job id with Paused set to paused.
func (e *engine) setPaused(ctx context.Context, id string, paused bool) (backends.Job, error) {
	if err := backends.ValidateID("job", id); err != nil {
		return backends.Job{}, err
	}
	var stored backends.Job
	check := func(cat *backends.Catalog) error {
		j, err := cat.Job(id)
		stored = j
		return err
	}
	err := e.changeCatalog(ctx, check, func(cat *backends.Catalog, version int64) (*backends.Catalog, int64, error) {
		// Written even when it is already so: the version check tells
		// whether the catalog this engine holds is the store's.
		j := stored
		j.Paused = paused
		j.UpdatedAt = e.clock.Now()
		op := "resumeJob"
		if paused {
			op = "pauseJob"
		}
		cctx := e.withChange(ctx, op, backends.ChangeJob, id, stored, j, true)
		var err error
		if stored, version, err = e.b.PutJob(cctx, j, false, nil, version); err != nil {
			return nil, 0, err
		}
		return cat.WithJob(stored), version, nil
	})
	return stored, err
}

func (e *engine) DeleteJob(ctx context.Context, id string) error {
	if err := backends.ValidateID("job", id); err != nil {
		return err
	}
	var job backends.Job
	check := func(cat *backends.Catalog) error {
		var err error
		job, err = cat.Job(id)
		return err
	}
	err := e.changeCatalog(ctx, check, func(cat *backends.Catalog, version int64) (*backends.Catalog, int64, error) {
		cctx := e.withChange(ctx, "deleteJob", backends.ChangeJob, id, job, nil, true)
		version, err := e.b.DeleteJob(cctx, job, version)
		if err != nil {
			return nil, 0, err
		}
		next := cat.WithoutJob(id)
		if d, ok := next.Datasets.Lookup(job.Output); ok && d.OutputKey == "" {
			d.OutputKey = id
			next = next.WithDataset(d)
		}
		return next, version, nil
	})
	if err != nil {
		return err
	}
	// Its backfill record goes too, so that the store keeps nothing of the
	// job. One swap at the version read: on a conflict the record was
	// written since, by a backfill still in flight or by the job declared
	// again (markMappedUpsert), whose mark must stay. A record left behind
	// does no harm: a job declared again under the id marks its own backfill
	// pending before it runs.
	if r, err := e.b.GetRecord(ctx, backfillRecordKey(id)); err == nil && len(r.Value) > 0 {
		_, _, _ = e.b.SwapRecord(ctx, backfillRecordKey(id), []byte{}, r.Version) // empty, not nil: a record holds bytes
	}
	return nil
}

func (e *engine) DeleteDataset(ctx context.Context, id string, deleteChunks bool) error {
	if err := backends.ValidateID("dataset", id); err != nil {
		return err
	}
	var old backends.Dataset
	check := func(cat *backends.Catalog) error {
		var err error
		if old, err = cat.Dataset(id); err != nil {
			return err
		}
		if err := datasetUsers(cat, id); err != nil {
			return err
		}
		if !deleteChunks && dynamicDef(old.Partitions) {
			// Values are data, as chunks are: a deletion takes them only
			// when asked to.
			vals, err := e.b.ListPartitionValues(ctx, id, "", "", "", "", 1)
			if err != nil {
				return err
			}
			if len(vals) > 0 {
				return backends.InvalidArgument("dataset %q holds the values of its DYNAMIC set (the lowest %q); deleting it deletes them too: ask for it with deleteChunks (chunklock delete dataset %s --delete-chunks)", id, vals[0].Value, id)
			}
		}
		return nil
	}
	return e.changeCatalog(ctx, check, func(cat *backends.Catalog, version int64) (*backends.Catalog, int64, error) {
		cctx := e.withChange(ctx, "deleteDataset", backends.ChangeDataset, id, old, nil, true)
		chunks, version, err := e.b.DeleteDataset(cctx, id, deleteChunks, version)
		if err != nil {
			return nil, 0, err
		}
		if version == 0 {
			return nil, 0, backends.InvalidArgument("dataset %q has %d chunk(s); deleting it deletes them too: ask for it with deleteChunks (chunklock delete dataset %s --delete-chunks)", id, chunks, id)
		}
		return cat.WithoutDataset(id), version, nil
	})
}

// datasetUsers refuses (LOCKED) the deletion of dataset id while a job
// reads or writes it, naming the jobs.
func datasetUsers(cat *backends.Catalog, id string) error {
	var users []string
	if p := cat.Producer(id); p != "" {
		users = append(users, fmt.Sprintf("job %q writes it", p))
	}
	for _, j := range cat.Consumers(id) {
		users = append(users, fmt.Sprintf("job %q reads it", j))
	}
	if len(users) == 0 {
		return nil
	}
	return backends.Locked(nil, "dataset %q is in use: %s; delete or change those jobs first", id, strings.Join(users, ", "))
}

func (e *engine) DeletePool(ctx context.Context, id string) error {
	old, err := e.Pool(ctx, id)
	if err != nil {
		return err
	}
	check := func(cat *backends.Catalog) error {
		var users []string
		for _, j := range cat.Jobs.All() {
			if j.Pool == id {
				users = append(users, strconv.Quote(j.ID))
			}
		}
		if len(users) == 0 {
			return nil
		}
		slices.Sort(users)
		return backends.Locked(nil, "pool %q is named by job(s) %s; change or delete them first", id, strings.Join(users, ", "))
	}
	return e.changeCatalog(ctx, check, func(cat *backends.Catalog, version int64) (*backends.Catalog, int64, error) {
		cctx := e.withChange(ctx, "deletePool", backends.ChangePool, id, old, nil, true)
		version, err := e.b.DeletePool(cctx, id, version)
		if err != nil {
			return nil, 0, err
		}
		return cat, version, nil
	})
}

// takeOverBatch is how many candidates requeueTakenOver adds in one
// transaction.
const takeOverBatch = 64

// requeueTakenOver queues, for job j just declared for the output of a
// deleted job (Dataset.OutputKey, whatever its id), a candidate at every RESUBMIT
// and FAILED chunk it takes over (a FAILED one from its retryAt):
// deleting the job dropped its queue, and the backfill of a new job walks
// its first input, so the chunks of a job without inputs would wait for
// an event that never comes. Only those two statuses are read: a chunk
// that is READY, HOLD or has no row needs no candidate of its own.
func (e *engine) requeueTakenOver(ctx context.Context, cat *backends.Catalog, j backends.Job) error {
	d, ok := cat.Datasets.Lookup(j.Output)
	if !ok || d.OutputKey == "" {
		return nil
	}
	for _, st := range []backends.Status{backends.StatusResubmit, backends.StatusFailed} {
		f := backends.ChunkFilter{Dataset: j.Output, Job: d.OutputKey, Role: backends.RoleOutput, Status: st, First: takeOverBatch}
		for {
			page, err := e.b.ListRows(ctx, f)
			if err != nil {
				return err
			}
			if len(page.Rows) > 0 {
				err = e.b.Update(ctx, func(tx backends.Tx) error {
					for _, r := range page.Rows {
						c := backends.Candidate{Job: j.ID, DataID: r.DataID, Resubmit: st == backends.StatusResubmit}
						if st == backends.StatusFailed {
							c.NotBefore = r.RetryAt
						}
						if err := tx.AddCandidate(ctx, c); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
			}
			if !page.HasNextPage {
				break
			}
			f.After = page.Cursors[len(page.Cursors)-1]
		}
	}
	return nil // the values of a DYNAMIC output without a row: queueDynamicValues
}
