package resolvers

import (
	"context"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/resolvers/model"
)

// claimNext makes up to max claims of job after decrypting the job's
// secrets when the caller asks for them (beforeClaim), and counts them.
func (r *Resolver) claimNext(ctx context.Context, job, executor string, max int) ([]backends.Claim, error) {
	if err := r.beforeClaim(ctx, job); err != nil {
		return nil, err
	}
	cs, err := r.store.ClaimNext(ctx, job, executor, max)
	out := make([]backends.Claim, 0, len(cs))
	for _, c := range cs {
		r.metrics.Claimed(job, "claimNext")
		out = append(out, *c)
	}
	return out, err
}

// tokenResults answers each token's result with its error's code alone:
// the message of an INTERNAL error is never a client's.
func tokenResults(res []backends.TokenResult) []model.TokenResult {
	out := make([]model.TokenResult, len(res))
	for i, x := range res {
		out[i] = model.TokenResult{Token: x.Token, OK: x.OK()}
		if !x.OK() {
			code := string(x.Code())
			out[i].Code = &code
			continue
		}
		if !x.LeaseExpiresAt.IsZero() {
			lease := x.LeaseExpiresAt
			out[i].LeaseExpiresAt = &lease
		}
	}
	return out
}
