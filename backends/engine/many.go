package engine

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// The batch endings of runner pools (SPEC §6): CompleteMany, FailMany and
// HeartbeatMany queue one live-claim operation per token (live.go) all at
// once, so that they share the transactions of the live-claim batcher as
// far as its batch size allows (batcher.doMany). Each operation is all or
// nothing and answers on its own, as a single call would: a stale token
// fails alone, a repeated ending answers as the first did. ClaimNext is
// in next.go.

func (e *engine) CompleteMany(ctx context.Context, tokens []string) ([]backends.TokenResult, error) {
	return e.liveMany(ctx, tokens, backends.EndComplete, func(int) liveFn {
		return e.ending(backends.EndComplete, "")
	})
}

func (e *engine) FailMany(ctx context.Context, items []backends.FailItem) ([]backends.TokenResult, error) {
	tokens := make([]string, len(items))
	for i, it := range items {
		tokens[i] = it.Token
	}
	return e.liveMany(ctx, tokens, backends.EndFail, func(i int) liveFn {
		return e.ending(backends.EndFail, backends.CutReason(items[i].Reason))
	})
}

func (e *engine) HeartbeatMany(ctx context.Context, tokens []string) ([]backends.TokenResult, error) {
	leases := make([]time.Time, len(tokens))
	results, err := e.liveMany(ctx, tokens, "", func(i int) liveFn {
		return func(ctx context.Context, tx backends.Tx, c liveClaim) error {
			out := c.out
			out.LeaseExpiresAt = c.now.Add(c.job.Lease())
			out.UpdatedAt = c.now
			leases[i] = out.LeaseExpiresAt // the last run's, if the transaction runs again
			return tx.PutRow(ctx, out)
		}
	})
	for i := range results {
		if results[i].OK() {
			results[i].LeaseExpiresAt = leases[i]
		}
	}
	return results, err
}

// liveMany serves one live-claim operation per token, how (as in
// withLiveClaim) with the writes fn(i) makes for the i-th, and answers
// each token's result in order.
func (e *engine) liveMany(ctx context.Context, tokens []string, how backends.Ending, fn func(i int) liveFn) ([]backends.TokenResult, error) {
	if len(tokens) > backends.MaxManyTokens {
		return nil, backends.InvalidArgument("at most %d tokens a call, not %d", backends.MaxManyTokens, len(tokens))
	}
	results := make([]backends.TokenResult, len(tokens))
	ops := make([]*liveOp, 0, len(tokens))
	at := make([]int, 0, len(tokens))
	for i, token := range tokens {
		results[i].Token = token
		key, fence, err := backends.ParseToken(token)
		if err != nil {
			results[i].Err = err
			continue
		}
		ops = append(ops, &liveOp{key: key, token: token, fence: fence, ending: how, fn: fn(i), many: true})
		at = append(at, i)
	}
	for j, err := range e.live.doMany(ctx, "", ops) {
		results[at[j]].Err = err
	}
	return results, nil
}
