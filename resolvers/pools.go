package resolvers

import (
	"context"

	"github.com/chunklock/chunklock/backends"
)

// poolJobs lists the jobs naming pool, by id.
func (r *Resolver) poolJobs(ctx context.Context, pool string) ([]backends.Job, error) {
	jobs, err := r.store.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	out := []backends.Job{}
	for _, j := range jobs {
		if j.Pool == pool {
			out = append(out, j)
		}
	}
	return out, nil
}

// poolUsed counts the live claims of the jobs naming pool: the slots in
// use (a claim past its lease is not live, and holds none).
func (r *Resolver) poolUsed(ctx context.Context, pool string) (int, error) {
	jobs, err := r.poolJobs(ctx, pool)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, j := range jobs {
		cs, err := r.store.Claims(ctx, j.ID)
		if err != nil {
			return 0, err
		}
		n += len(cs)
	}
	return n, nil
}
