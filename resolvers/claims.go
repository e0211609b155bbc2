package resolvers

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/resolvers/model"
	"github.com/chunklock/chunklock/server/auth"
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
	return model.DatasetAccess{
		Dataset:    d.ID,
		DataID:     c.DataID,
		URL:        d.URL,
		Connection: d.Connection,
		Location:   chunkLocation(d, c.DataID),
		ClaimToken: c.Token,
	}
}

// secret decrypts a claim's secret for a dataset. It needs the job key in
// the request (else null) and a principal that may operate the claim's job
// (else FORBIDDEN); the keyring refuses a key that is not the job's.
func (r *Resolver) secret(ctx context.Context, a *model.DatasetAccess) (*string, error) {
	if auth.JobKeyFrom(ctx) == "" {
		return nil, nil
	}
	job := tokenJob(a.ClaimToken)
	if p, _ := auth.PrincipalFrom(ctx); !p.CanOperate(job) {
		return nil, backends.Forbidden("only admins and runners of job %q may read its secrets", job)
	}
	secrets, err := r.loadersFrom(ctx).secrets.Load(ctx, a.ClaimToken)
	if err != nil {
		return nil, err
	}
	s, ok := secrets[a.Dataset]
	if !ok {
		return nil, nil
	}
	return &s, nil
}

func (r *Resolver) findNext(ctx context.Context, job, executor string) (*backends.Claim, error) {
	start := time.Now()
	c, err := r.store.FindNext(ctx, job, executor)
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

// claimed counts a claim made by claim or force and returns it.
func (r *Resolver) claimed(c *backends.Claim, err error, via string) (backends.Claim, error) {
	if err != nil {
		return backends.Claim{}, err
	}
	r.metrics.Claimed(c.Job, via)
	return *c, nil
}
