package client

import (
	"context"
	"fmt"
	"time"
)

// Runner pools: many claims of one runner in one request, and their
// heartbeats and endings in batches (SPEC §6).

// TokenResult is one token's answer in a batch: OK, or the error code
// (STALE_CLAIM: stop working on that chunk; UNAVAILABLE: retry it).
// LeaseExpiresAt is set by HeartbeatMany.
type TokenResult struct {
	Token          string     `json:"token"`
	OK             bool       `json:"ok"`
	Code           string     `json:"code"`
	LeaseExpiresAt *time.Time `json:"leaseExpiresAt"`
}

// FailItem is one claim FailMany fails, and why.
type FailItem struct {
	Token  string `json:"token"`
	Reason string `json:"reason"`
}

const tokenResultFields = `token ok code leaseExpiresAt`

// ClaimNext claims up to max chunks of job in one request, in findNext's
// order; none when nothing is claimable. A claim whose answer was lost
// stays live until its lease passes: the call is not retried on its own.
func (c *Client) ClaimNext(ctx context.Context, job, executor string, max int) ([]*Claim, error) {
	var out struct{ Claims []*Claim }
	q := `mutation($job: String!, $executor: String!, $max: Int!) { claims: claimNext(job: $job, executor: $executor, max: $max) { ` + ClaimFields + ` } }`
	err := c.Do(ctx, q, map[string]any{"job": job, "executor": executor, "max": max}, &out)
	if err != nil && len(out.Claims) > 0 {
		// Claimed, but part of the answer failed (a job key that is not
		// the job's): give the claims back rather than leave them to
		// expire.
		tokens := make([]string, 0, len(out.Claims))
		for _, cl := range out.Claims {
			if cl != nil && cl.Token != "" {
				tokens = append(tokens, cl.Token)
			}
		}
		res, _ := c.ReleaseMany(ctx, tokens)
		released := 0
		for _, r := range res {
			if r.OK {
				released++
			}
		}
		if released == len(tokens) {
			return nil, fmt.Errorf("%w (the %d claims made were released)", err, len(tokens))
		}
		return nil, fmt.Errorf("%w (of the %d claims made, %d were released; the others end when their leases pass)", err, len(tokens), released)
	}
	return out.Claims, err
}

// ReleaseMany releases each claim, one request a token (the API has no
// batch release): the answer of each, in order, a failed release as a
// result that is not OK (its code); the error is always nil.
func (c *Client) ReleaseMany(ctx context.Context, tokens []string) ([]TokenResult, error) {
	res := make([]TokenResult, len(tokens))
	for i, t := range tokens {
		res[i] = TokenResult{Token: t, OK: true}
		if err := c.Release(ctx, t); err != nil {
			res[i].OK, res[i].Code = false, string(CodeOf(err))
		}
	}
	return res, nil
}

// CompleteMany completes each claim: one result per token, in order.
func (c *Client) CompleteMany(ctx context.Context, tokens []string) ([]TokenResult, error) {
	var out struct{ R []TokenResult }
	err := c.Do(ctx, `mutation($t: [String!]!) { r: completeMany(tokens: $t) { `+tokenResultFields+` } }`, map[string]any{"t": tokens}, &out)
	return out.R, err
}

// FailMany fails each claim with its reason: one result per item, in order.
func (c *Client) FailMany(ctx context.Context, items []FailItem) ([]TokenResult, error) {
	var out struct{ R []TokenResult }
	err := c.Do(ctx, `mutation($i: [FailItem!]!) { r: failMany(items: $i) { `+tokenResultFields+` } }`, map[string]any{"i": items}, &out)
	return out.R, err
}

// HeartbeatMany extends each live claim's lease: one result per token, in
// order, with the new lease end.
func (c *Client) HeartbeatMany(ctx context.Context, tokens []string) ([]TokenResult, error) {
	var out struct{ R []TokenResult }
	err := c.Do(ctx, `mutation($t: [String!]!) { r: heartbeatMany(tokens: $t) { `+tokenResultFields+` } }`, map[string]any{"t": tokens}, &out)
	return out.R, err
}
