package engine

import "github.com/chunklock/chunklock/backends"

// withAccess adds to a claim what its answer carries besides its rows:
// the definitions of its output and input datasets and its job's
// environment, from the catalog version of the claim's own transaction.
func withAccess(cat *backends.Catalog, job backends.Job, c *backends.Claim) {
	c.Datasets = make([]backends.Dataset, 0, 1+len(job.Inputs))
	c.Datasets = append(c.Datasets, cat.Datasets.Get(job.Output))
	for _, in := range job.Inputs {
		c.Datasets = append(c.Datasets, cat.Datasets.Get(in))
	}
	c.Env = job.Env
}

// liveClaimOf is the claim a RUNNING OUTPUT row of job stands for, with
// what its answer carries (withAccess) from cat.
func liveClaimOf(cat *backends.Catalog, job backends.Job, out backends.StatusRow) backends.Claim {
	c := backends.ClaimOf(job, out)
	withAccess(cat, job, &c)
	return c
}
