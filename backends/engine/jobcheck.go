package engine

import (
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

// Checking a job as an upsert stores it: the catalog's rules, the
// operator's env allowlist, and whether its claims fit the backend's
// transactions.

// prepareJob validates j against cat and returns the job to store, with
// the stored key when j has none, and whether its candidates need a
// backfill (a new job, or changed inputs).
func prepareJob(cat *backends.Catalog, j backends.Job) (backends.Job, bool, error) {
	j, err := cat.ValidateJob(j)
	if err != nil {
		return backends.Job{}, false, err
	}
	old, existed := cat.Jobs.Lookup(j.ID)
	if existed && j.Key == (backends.JobKey{}) {
		j.Key = old.Key
	}
	if j.Pipeline, err = backends.PipelineOf("job", j.ID, j.Pipeline, existed, old.Pipeline); err != nil {
		return backends.Job{}, false, err
	}
	return j, !existed || !slices.Equal(old.Inputs, j.Inputs) || !slices.Equal(old.InputMappings, j.InputMappings), nil
}

// prepareJob is prepareJob with the env names the operator allows
// (WithEnvAllow), refusing besides a job one claim of which would not fit
// in a transaction of e's backend (claimFits).
func (e *engine) prepareJob(cat *backends.Catalog, j backends.Job) (backends.Job, bool, error) {
	cat = cat.WithEnvAllow(e.envAllow)
	valid, enqueue, err := prepareJob(cat, j)
	if err == nil {
		err = e.claimFits(cat, valid)
	}
	return valid, enqueue, err
}

// ValidateJob checks j against the cached catalog, and against one read
// afresh before it refuses j.
func (e *engine) ValidateJob(ctx context.Context, j backends.Job) (backends.Job, error) {
	if err := e.checkConcurrency(ctx, j); err != nil {
		return backends.Job{}, err
	}
	cat, err := e.loadCatalog(ctx, true)
	if err != nil {
		return backends.Job{}, err
	}
	valid, _, err := e.prepareJob(cat.Catalog, j)
	if err != nil && !cat.fresh {
		if cat, err = e.loadCatalog(ctx, false); err != nil {
			return backends.Job{}, err
		}
		valid, _, err = e.prepareJob(cat.Catalog, j)
	}
	return valid, err
}
