package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The catalog operations: datasets, jobs and their credentials.

func (e *engine) UpsertDataset(ctx context.Context, d backends.Dataset) (backends.Dataset, error) {
	if err := backends.ValidateDataset(d); err != nil {
		return backends.Dataset{}, err
	}
	if p := d.Partitions; p != nil {
		def := p.Normalized()
		d.Partitions = &def
	}
	now := e.clock.Now()
	d.CreatedAt, d.UpdatedAt = now, now
	var stored backends.Dataset
	err := e.changeCatalog(ctx, func(cat *backends.Catalog) error { return e.checkDatasetMappings(cat, d) }, func(cat *backends.Catalog, version int64) (*backends.Catalog, int64, error) {
		var frontier *backends.Candidate
		old, existed := cat.Datasets.Lookup(d.ID)
		// The key of the chunks of a deleted producer is the store's, not
		// the caller's (lifecycle.go).
		d.OutputKey = old.OutputKey
		// So are the values of its DYNAMIC dimensions, which are data:
		// a definition upserted (apply) keeps them (dynamicdims.go).
		d = keepMembers(old, d)
		// So is the pipeline that created it (backends/pipelineowner.go).
		var err error
		if d.Pipeline, err = backends.PipelineOf("dataset", d.ID, d.Pipeline, existed, old.Pipeline); err != nil {
			return nil, 0, err
		}
		if existed && !reflect.DeepEqual(old.Partitions, d.Partitions) {
			// The producer's frontier moves to the new definition's first
			// dataid without a row, stored with the definition; one left
			// where the old definition had it walks on, meets the new one
			// or stops.
			changed := cat.WithDataset(d)
			if job, err := changed.Job(changed.Producer(d.ID)); err == nil {
				if frontier, err = e.frontierSeed(ctx, changed, job); err != nil {
					return nil, 0, err
				}
			}
		}
		cctx := e.withChange(ctx, "upsertDataset", backends.ChangeDataset, d.ID, old, d, existed)
		var frontiers []backends.Candidate
		if frontier != nil {
			frontiers = append(frontiers, *frontier)
		}
		if existed && backends.CompareDataID(timeStart(d.Partitions), timeStart(old.Partitions)) > 0 {
			// A later start may leave more of its readers' first outputs
			// reading nothing.
			frontiers = append(frontiers, readsNothingChains(cat.WithDataset(d), d.ID)...)
		}
		stored, version, err = e.b.PutDataset(cctx, d, frontiers, version)
		if err != nil {
			return nil, 0, err
		}
		return cat.WithDataset(stored), version, nil
	})
	return stored, err
}

// keepMembers is d with the values of each DYNAMIC dimension old has of
// the same name: an upsert declares a dimension, never its values.
func keepMembers(old, d backends.Dataset) backends.Dataset {
	if old.Partitions == nil || d.Partitions == nil || d.Partitions.Kind != partition.Dimensional {
		return d
	}
	def := *d.Partitions
	def.Dimensions = slices.Clone(def.Dimensions)
	for i, dim := range def.Dimensions {
		if dim.Kind != partition.Dynamic {
			continue
		}
		if k := dynamicDim(*old.Partitions, dim.Name); k >= 0 {
			dim.Members, dim.Removed = old.Partitions.Dimensions[k].Members, old.Partitions.Dimensions[k].Removed
			def.Dimensions[i] = dim
		}
	}
	d.Partitions = &def
	return d
}

func (e *engine) Dataset(ctx context.Context, id string) (backends.Dataset, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return backends.Dataset{}, err
	}
	return cat.Dataset(id)
}

func (e *engine) Datasets(ctx context.Context) ([]backends.Dataset, error) {
	ds, _, err := e.b.Catalog(ctx)
	return ds, err
}

func (e *engine) UpsertJob(ctx context.Context, j backends.Job) (backends.Job, error) {
	var valid, stored backends.Job
	var enqueue, reschedule, created bool
	var seeds []seedChange // the values the job's output and theirs take (dynamicdims.go)
	var after *backends.Catalog
	// A job with mappings is backfilled after its catalog change commits:
	// the backfill is marked pending first, so that a server stopping half
	// way leaves it to be resumed (backfillmark.go).
	if cat, err := e.loadCatalog(ctx, false); err == nil {
		// Whether it reads across dimensions (Job.Mapping) depends on its
		// datasets' definitions: such a job is backfilled as a mapped one.
		j = cat.Catalog.WithJob(j).Jobs.Get(j.ID)
	}
	prev, mark, err := e.markMappedUpsert(ctx, j)
	if err != nil {
		return backends.Job{}, err
	}
	check := func(cat *backends.Catalog) error {
		// The pool is looked up with each check: a deletion of the pool
		// commits a new catalog version, so the job is stored only if
		// its pool existed when the catalog it is checked against was.
		if err := e.checkConcurrency(ctx, j); err != nil {
			return err
		}
		var err error
		valid, enqueue, err = e.prepareJob(cat, j)
		old, existed := cat.Jobs.Lookup(j.ID)
		reschedule = enqueue || !existed || old.Output != valid.Output
		created = !existed
		if err != nil {
			return err
		}
		// Values are given when the job is declared or what it reads or
		// writes changes, not at every upsert: an unchanged job applied
		// again leaves a value removed since removed.
		seeds = nil
		if !existed || !sameReads(old, valid) {
			seeds, err = e.fedSeeds(ctx, cat.WithJob(valid), valid)
		}
		return err
	}
	err = e.changeCatalog(ctx, check, func(cat *backends.Catalog, version int64) (*backends.Catalog, int64, error) {
		now := e.clock.Now()
		valid.CreatedAt, valid.UpdatedAt = now, now
		// The output takes the values of the DYNAMIC dimensions the job
		// reads by value, before the job is stored: its backfill's outputs
		// are then expected (dynamicdims.go).
		for _, c := range seeds {
			for i, rec := range c.recs {
				before, _ := json.Marshal(rec)
				cctx := backends.WithChange(ctx, &backends.CatalogChange{Actor: backends.ActorFrom(ctx), Time: now, Kind: backends.ChangeDataset,
					ID: c.ds.ID, Dataset: c.ds.ID, Op: "addPartitions", Before: before})
				c.ds.UpdatedAt = now
				var cands []backends.Candidate
				if i == len(c.recs)-1 {
					cands = c.cands
				}
				stored, v, err := e.b.PutDataset(cctx, c.ds, cands, version)
				if err != nil {
					return nil, 0, err
				}
				cat, version = cat.WithDataset(stored), v
			}
		}
		var frontier *backends.Candidate
		if reschedule {
			var err error
			if frontier, err = e.frontierSeed(ctx, cat.WithJob(valid), valid); err != nil {
				return nil, 0, err
			}
			if frontier != nil && slices.ContainsFunc(seeds, func(c seedChange) bool { return slices.Contains(c.cands, *frontier) }) {
				frontier = nil // the values given start it (a chain: chainMaybeEmpty)
			}
		}
		var err error
		old, existed := cat.Jobs.Lookup(valid.ID)
		cctx := e.withChange(ctx, "upsertJob", backends.ChangeJob, valid.ID, old, valid, existed)
		// The store backfills a job without mappings itself; the engine
		// backfills one with mappings below (backfillMapped).
		stored, version, err = e.b.PutJob(cctx, valid, enqueue && !valid.Mapped(), frontier, version)
		if err != nil {
			return nil, 0, err
		}
		after = cat.WithJob(stored)
		stored = after.Jobs.Get(stored.ID) // with what the catalog derives
		return after, version, nil
	})
	if err != nil {
		if j.Mapped() {
			e.resumeSkip.Store(false) // the change may have committed
		}
		if c := backends.CodeOf(err); j.Mapped() && (c == backends.CodeInvalidArgument || c == backends.CodeNotFound || c == backends.CodeAlreadyExists) {
			// Refused: nothing changed. (After any other error the change
			// may have committed: the backfill stays owed.)
			_ = e.restoreBackfill(context.WithoutCancel(ctx), j.ID, prev, mark)
		}
		return stored, err
	}
	if err := e.backfillUpserted(ctx, j, stored, after, enqueue, prev, mark); err != nil {
		return stored, err
	}
	if created {
		if err := e.requeueTakenOver(ctx, after, stored); err != nil {
			return stored, fmt.Errorf("job %s is stored, but queueing the RESUBMIT and FAILED chunks it takes over failed; resubmit them to queue them: %w", stored.ID, err)
		}
		if err := e.queueDynamicValues(ctx, after, stored); err != nil {
			return stored, fmt.Errorf("job %s is stored, but queueing the values of %s added before it failed; remove and add them again to queue them: %w", stored.ID, stored.Output, err)
		}
	}
	if !reschedule && scheduleDef(after, stored) != nil {
		// A scheduled job without any candidate (stored by a version that
		// placed the frontier after the job) gets one from the next upsert
		// of the job, `chunklock apply`.
		if n, err := e.QueueLength(ctx, stored.ID); err == nil && n == 0 {
			return stored, e.seedFrontier(ctx, after, stored)
		}
	}
	return stored, nil
}

func (e *engine) Job(ctx context.Context, id string) (backends.Job, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return backends.Job{}, err
	}
	return cat.Job(id)
}

func (e *engine) Jobs(ctx context.Context) ([]backends.Job, error) {
	_, js, err := e.b.Catalog(ctx)
	return js, err
}

func (e *engine) SetCredential(ctx context.Context, c backends.Credential) error {
	if err := e.checkCredential(ctx, c); err != nil {
		return err
	}
	c.UpdatedAt = e.clock.Now()
	return e.b.PutCredential(e.credentialChange(ctx, "setCredential", c.Job, c.Dataset), c)
}

// checkCredential checks that c's job uses c's dataset and that c has a
// ciphertext.
func (e *engine) checkCredential(ctx context.Context, c backends.Credential) error {
	cat, err := e.catalog(ctx)
	if err != nil {
		return err
	}
	job, err := cat.Job(c.Job)
	if err != nil {
		return err
	}
	if _, err := cat.Dataset(c.Dataset); err != nil {
		return err
	}
	if c.Dataset != job.Output && !slices.Contains(job.Inputs, c.Dataset) {
		return backends.InvalidArgument("job %q does not use dataset %q; credentials are stored only for datasets a job reads or writes", c.Job, c.Dataset)
	}
	if len(c.Ciphertext) == 0 {
		return backends.InvalidArgument("credential ciphertext is empty")
	}
	return nil
}

func (e *engine) Credentials(ctx context.Context, job string) ([]backends.Credential, error) {
	return e.b.Credentials(ctx, job)
}

func (e *engine) ReplaceCredential(ctx context.Context, c backends.Credential, old []byte) (bool, error) {
	if err := e.checkCredential(ctx, c); err != nil {
		return false, err
	}
	c.UpdatedAt = e.clock.Now()
	return e.b.SwapCredential(e.credentialChange(ctx, "setCredential", c.Job, c.Dataset), c, old)
}

// sameReads reports whether two versions of a job read the same inputs
// through the same mappings into the same output.
func sameReads(a, b backends.Job) bool {
	return a.Output == b.Output && slices.Equal(a.Inputs, b.Inputs) && slices.Equal(a.InputMappings, b.InputMappings)
}
