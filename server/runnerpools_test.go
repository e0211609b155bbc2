package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
)

// TestRunnerPoolsOverGraphQL: claimNext, completeMany, failMany and
// heartbeatMany through the Go client against a real server on every
// store: claims in findNext's order with their inputs and env, one
// result per token in order, a stale token failing alone, the job key
// decrypting every claim's secrets, runners limited to their jobs.
func TestRunnerPoolsOverGraphQL(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.define()
		for _, d := range []string{"2026-03-03", "2026-03-01", "2026-03-02"} {
			s.publish("a", d)
		}
		ctx := t.Context()
		c, err := client.New(s.url, client.WithToken(s.tokens[runnerA]))
		require.NoError(t, err)
		cs, err := c.ClaimNext(ctx, "ja", "pool-1", 2)
		require.NoError(t, err)
		require.Len(t, cs, 2)
		require.Equal(t, "2026-03-01", cs[0].DataID)
		require.Equal(t, "2026-03-02", cs[1].DataID)
		require.NotEqual(t, cs[0].Token, cs[1].Token)
		require.Equal(t, "s3://lake/a/dt=2026-03-02/", cs[1].Inputs[0].Location)
		require.Equal(t, []client.EnvVar{{Name: "MODE", Value: "full"}}, cs[1].Env)
		rest, err := c.ClaimNext(ctx, "ja", "pool-1", 5)
		require.NoError(t, err)
		require.Len(t, rest, 1)
		none, err := c.ClaimNext(ctx, "ja", "pool-1", 5)
		require.NoError(t, err)
		require.Empty(t, none)

		hb, err := c.HeartbeatMany(ctx, []string{cs[0].Token, "ct1.garbage", cs[1].Token})
		require.NoError(t, err)
		require.Len(t, hb, 3)
		require.True(t, hb[0].OK)
		require.NotNil(t, hb[0].LeaseExpiresAt)
		require.Equal(t, client.TokenResult{Token: "ct1.garbage", Code: "STALE_CLAIM"}, hb[1])
		require.True(t, hb[2].OK)

		require.NoError(t, c.Fail(ctx, cs[1].Token, "boom"))
		done, err := c.CompleteMany(ctx, []string{cs[0].Token, cs[1].Token, rest[0].Token})
		require.NoError(t, err)
		require.Equal(t, []bool{true, false, true}, []bool{done[0].OK, done[1].OK, done[2].OK})
		require.Equal(t, "STALE_CLAIM", done[1].Code)
		require.Nil(t, done[1].LeaseExpiresAt)
		require.Equal(t, "READY", s.chunk("b", "2026-03-01").Status)
		require.Equal(t, "FAILED", s.chunk("b", "2026-03-02").Status)
		again, err := c.CompleteMany(ctx, []string{cs[0].Token})
		require.NoError(t, err)
		require.True(t, again[0].OK, "a retried batch answers as the first did")
		failed, err := c.FailMany(ctx, []client.FailItem{{Token: rest[0].Token, Reason: "late"}})
		require.NoError(t, err)
		require.Equal(t, "STALE_CLAIM", failed[0].Code)

		// Runners may operate only their own jobs' claims, in every list.
		b, err := client.New(s.url, client.WithToken(s.tokens[runnerB]))
		require.NoError(t, err)
		_, err = b.ClaimNext(ctx, "ja", "pool-2", 1)
		require.Equal(t, backends.CodeForbidden, client.CodeOf(err))
		_, err = b.CompleteMany(ctx, []string{"ct1.garbage", cs[0].Token})
		require.Equal(t, backends.CodeForbidden, client.CodeOf(err))
		_, err = b.FailMany(ctx, []client.FailItem{{Token: cs[0].Token}})
		require.Equal(t, backends.CodeForbidden, client.CodeOf(err))
		_, err = b.HeartbeatMany(ctx, []string{cs[0].Token})
		require.Equal(t, backends.CodeForbidden, client.CodeOf(err))
		_, err = c.ClaimNext(ctx, "ja", "pool-1", 0)
		require.Equal(t, backends.CodeInvalidArgument, client.CodeOf(err))
	})
}

// TestRunnerPoolCosts: a runner's claimNext of 64 claims with every field
// it needs, and a batch of 1,000 tokens, fit the default --max-complexity;
// claimNext of 1,000 full claims is refused before anything runs.
func TestRunnerPoolCosts(t *testing.T) {
	s := newStack(t, costStore(t))
	claimNext := func(n int) string {
		return `mutation { claimNext(job: "nope", executor: "e", max: ` + strconv.Itoa(n) + `) { ` + client.ClaimFields + ` } }`
	}
	r := s.send(request{who: admin, query: claimNext(64)})
	require.Equal(t, "NOT_FOUND", r.code(t), "costed within the limit, then run: %s", r.Body)
	r = s.send(request{who: admin, query: claimNext(backends.MaxClaimNext)})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Contains(t, r.Errors[0].Message, "--max-complexity")
	tokens := `["` + strings.Repeat(`ct1.garbage", "`, backends.MaxManyTokens-1) + `ct1.garbage"]`
	for _, f := range []string{"completeMany", "heartbeatMany"} {
		var res []struct{ OK bool }
		s.ok(admin, `mutation { `+f+`(tokens: `+tokens+`) { token ok code leaseExpiresAt } }`, nil).field(t, f, &res)
		require.Len(t, res, backends.MaxManyTokens)
	}
	r = s.send(request{who: admin, query: `mutation { completeMany(tokens: ["ct1.garbage", ` + tokens[1:] + `) { ok } }`})
	require.Equal(t, "INVALID_ARGUMENT", r.code(t), "more than 1,000 tokens: %s", r.Body)
}
