package resolvers

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/resolvers/model"
)

// claimToken returns a claim token for principals that may operate job, and
// nil for everyone else: a token is the capability to end a claim.
func (r *Resolver) claimToken(ctx context.Context, job, token string) *string {
	p, _ := auth.PrincipalFrom(ctx)
	if token == "" || !p.CanOperate(job) {
		return nil
	}
	return &token
}

// tokenJob returns the job a claim token names, for metrics; "" for a
// malformed token.
func tokenJob(token string) string {
	key, _, err := backends.ParseToken(token)
	if err != nil {
		return ""
	}
	return key.Job
}

// access locates the claim's chunk of dataset d.
func access(d backends.Dataset, c *backends.Claim) model.DatasetAccess {
	return accessAt(d, c, c.DataID)
}

// accessAt locates chunk dataid of dataset d, which claim c reads or writes.
func accessAt(d backends.Dataset, c *backends.Claim, dataid string) model.DatasetAccess {
	return model.DatasetAccess{
		Dataset:    d.ID,
		DataID:     dataid,
		URL:        d.URL,
		Connection: d.Connection,
		Location:   chunkLocation(d, dataid),
		Dimensions: backends.DimensionValues(d, dataid),
		ClaimToken: c.Token,
	}
}

// claimInputs locates every input chunk claim c reads (Claim.Reads, or
// one per input at its dataid for a claim that lists none), given the
// definitions of its input datasets in input order.
func claimInputs(inputs []backends.Dataset, c *backends.Claim) []model.DatasetAccess {
	if c.Reads == nil {
		out := make([]model.DatasetAccess, 0, len(inputs))
		for _, d := range inputs {
			out = append(out, access(d, c))
		}
		return out
	}
	byID := make(map[string]backends.Dataset, len(inputs))
	for _, d := range inputs {
		byID[d.ID] = d
	}
	out := make([]model.DatasetAccess, 0, len(c.Reads))
	for _, r := range c.Reads {
		d, ok := byID[r.Dataset]
		if !ok {
			d = backends.Dataset{ID: r.Dataset}
		}
		out = append(out, accessAt(d, c, r.DataID))
	}
	return out
}

// claimDatasets returns the definitions of a claim's output and inputs, in
// that order: the ones the claim's own transaction read, which every claim
// the store hands out carries, so that no read after the commit can turn a
// granted claim into an error; looked up only for a claim made otherwise.
func (r *Resolver) claimDatasets(ctx context.Context, c *backends.Claim) ([]backends.Dataset, error) {
	if c.Datasets != nil {
		return c.Datasets, nil
	}
	return r.datasets(ctx, append([]string{c.Output}, c.Inputs...))
}

// findNext claims the job's next chunk, after decrypting the job's secrets
// when the caller asks for them (beforeClaim).
func (r *Resolver) findNext(ctx context.Context, job, executor string) (*backends.Claim, error) {
	start := time.Now()
	var c *backends.Claim
	err := r.beforeClaim(ctx, job)
	if err == nil {
		c, err = r.store.FindNext(ctx, job, executor)
	}
	outcome := "claimed"
	switch {
	case err != nil:
		outcome = "error"
	case c == nil:
		outcome = "empty"
	default:
		r.metrics.Claimed(job, "findNext")
	}
	r.metrics.FindNext(time.Since(start), outcome)
	return c, err
}

// claimWith makes a claim with claim or force (via), after decrypting the
// job's secrets when the caller asks for them (beforeClaim), and counts it.
func (r *Resolver) claimWith(ctx context.Context, job, via string, claim func() (*backends.Claim, error)) (backends.Claim, error) {
	if err := r.beforeClaim(ctx, job); err != nil {
		return backends.Claim{}, err
	}
	c, err := claim()
	if err != nil {
		return backends.Claim{}, err
	}
	r.metrics.Claimed(c.Job, via)
	return *c, nil
}
