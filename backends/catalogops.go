package backends

import (
	"context"
	"slices"
)

// The catalog operations: datasets, jobs and their credentials.

func (e *engine) UpsertDataset(ctx context.Context, d Dataset) (Dataset, error) {
	if err := ValidateDataset(d); err != nil {
		return Dataset{}, err
	}
	now := e.clock.Now()
	d.CreatedAt, d.UpdatedAt = now, now
	defer e.forgetCatalog()
	return e.b.PutDataset(ctx, d)
}

func (e *engine) Dataset(ctx context.Context, id string) (Dataset, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return Dataset{}, err
	}
	return cat.Dataset(id)
}

func (e *engine) Datasets(ctx context.Context) ([]Dataset, error) {
	ds, _, err := e.b.Catalog(ctx)
	return ds, err
}

func (e *engine) UpsertJob(ctx context.Context, j Job) (Job, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return Job{}, err
	}
	j, err = cat.ValidateJob(j)
	if err != nil {
		return Job{}, err
	}
	old, existed := cat.Jobs[j.ID]
	enqueue := !existed || !slices.Equal(old.Inputs, j.Inputs)
	if existed && j.Key == (JobKey{}) {
		j.Key = old.Key
	}
	now := e.clock.Now()
	j.CreatedAt, j.UpdatedAt = now, now
	defer e.forgetCatalog()
	return e.b.PutJob(ctx, j, enqueue)
}

func (e *engine) Job(ctx context.Context, id string) (Job, error) {
	cat, err := e.catalog(ctx)
	if err != nil {
		return Job{}, err
	}
	return cat.Job(id)
}

func (e *engine) Jobs(ctx context.Context) ([]Job, error) {
	_, js, err := e.b.Catalog(ctx)
	return js, err
}

func (e *engine) SetCredential(ctx context.Context, c Credential) error {
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
		return InvalidArgument("job %q does not use dataset %q; credentials are stored only for datasets a job reads or writes", c.Job, c.Dataset)
	}
	if len(c.Ciphertext) == 0 {
		return InvalidArgument("credential ciphertext is empty")
	}
	c.UpdatedAt = e.clock.Now()
	return e.b.PutCredential(ctx, c)
}

func (e *engine) Credentials(ctx context.Context, job string) ([]Credential, error) {
	return e.b.Credentials(ctx, job)
}
