package engine

import (
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

// Pools are kept in their slot records (slots.go), beside the live claims
// holding their slots, rather than in the versioned catalog: a claim reads
// a pool's size in the transaction that takes one of its slots, and an
// upsert changes it under the record's lock. Deleting a pool is a catalog
// change (lifecycle.go), and an upsert looks its pool up in each check of
// its own: a job is stored naming a pool only while the pool exists.

func (e *engine) UpsertPool(ctx context.Context, p backends.Pool) (backends.Pool, error) {
	if err := backends.ValidatePool(p); err != nil {
		return backends.Pool{}, err
	}
	var stored backends.Pool
	change := &backends.CatalogChange{}
	err := e.b.Update(backends.WithChange(ctx, change), func(tx backends.Tx) error {
		recs, err := readSlots(ctx, tx, []string{backends.PoolSlotsKey(p.ID)}, true)
		if err != nil {
			return err
		}
		rec := recs[0]
		now := e.clock.Now()
		stored = p
		stored.CreatedAt, stored.UpdatedAt = now, now
		existed := rec.Pool.Slots > 0
		if existed {
			stored.CreatedAt = rec.Pool.CreatedAt
		}
		if stored.Pipeline, err = backends.PipelineOf("pool", p.ID, p.Pipeline, existed, rec.Pool.Pipeline); err != nil {
			return err
		}
		// Filled in for the backend to record as the transaction commits
		// (it may run again).
		*change = *backends.ChangeFrom(e.withChange(ctx, "upsertPool", backends.ChangePool, p.ID, rec.Pool, stored, existed))
		rec.Pool = stored
		return tx.PutSlots(ctx, *rec)
	})
	if err != nil {
		return backends.Pool{}, err
	}
	return stored, nil
}

func (e *engine) Pools(ctx context.Context) ([]backends.Pool, error) {
	ps, err := e.b.ListPools(ctx)
	if ps == nil {
		ps = []backends.Pool{}
	}
	return ps, err
}

func (e *engine) Pool(ctx context.Context, id string) (backends.Pool, error) {
	if err := backends.ValidateID("pool", id); err != nil {
		return backends.Pool{}, err
	}
	ps, err := e.b.ListPools(ctx)
	if err != nil {
		return backends.Pool{}, err
	}
	i := slices.IndexFunc(ps, func(p backends.Pool) bool { return p.ID == id })
	if i < 0 {
		return backends.Pool{}, backends.NotFound("pool %q does not exist", id)
	}
	return ps[i], nil
}

// checkConcurrency checks that the pool a job names exists (NOT_FOUND);
// the form of maxConcurrent and pool is checked with the rest of the job.
func (e *engine) checkConcurrency(ctx context.Context, j backends.Job) error {
	if j.Pool == "" || backends.ValidateID("pool", j.Pool) != nil {
		return nil
	}
	if _, err := e.Pool(ctx, j.Pool); err != nil {
		if backends.CodeOf(err) == backends.CodeNotFound {
			return backends.NotFound("job %q names pool %q, which does not exist; define it first (upsertPool, or pools: in the pipeline file)", j.ID, j.Pool)
		}
		return err
	}
	return nil
}
