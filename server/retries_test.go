package server_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
)

// downAfterClaim is a store whose catalog reads fail once a claim has
// committed, as when the database goes away between the commit and the
// answer.
type downAfterClaim struct {
	backends.Store
	down atomic.Bool
}

func (s *downAfterClaim) FindNext(ctx context.Context, job, executor string) (*backends.Claim, error) {
	c, err := s.Store.FindNext(ctx, job, executor)
	s.down.Store(c != nil)
	return c, err
}

func (s *downAfterClaim) unavailable() error {
	return backends.Unavailable(nil, "the store went away")
}

func (s *downAfterClaim) Datasets(ctx context.Context) ([]backends.Dataset, error) {
	if s.down.Load() {
		return nil, s.unavailable()
	}
	return s.Store.Datasets(ctx)
}

func (s *downAfterClaim) Jobs(ctx context.Context) ([]backends.Job, error) {
	if s.down.Load() {
		return nil, s.unavailable()
	}
	return s.Store.Jobs(ctx)
}

func (s *downAfterClaim) Dataset(ctx context.Context, id string) (backends.Dataset, error) {
	if s.down.Load() {
		return backends.Dataset{}, s.unavailable()
	}
	return s.Store.Dataset(ctx, id)
}

func (s *downAfterClaim) Job(ctx context.Context, id string) (backends.Job, error) {
	if s.down.Load() {
		return backends.Job{}, s.unavailable()
	}
	return s.Store.Job(ctx, id)
}

// TestClaimAnswerNeedsNoReadAfterCommit: everything a claim's answer
// carries comes from the claim's own transaction, so a store that fails
// right after the commit cannot turn a granted claim into an error.
func TestClaimAnswerNeedsNoReadAfterCommit(t *testing.T) {
	b := memory.New()
	t.Cleanup(func() { _ = b.Close() })
	store := &downAfterClaim{Store: engine.New(b)}
	s := newStack(t, store)
	s.ok(admin, `mutation {
		a: upsertDataset(input: {id: "src", url: "s3://lake", location: "s3://lake/src/{dataid}/"}) { id }
		b: upsertDataset(input: {id: "out", url: "postgres://wh", connection: "sslmode=require", location: "day = '{dataid}'"}) { id }
	}`, nil)
	s.ok(admin, `mutation { upsertJob(input: {id: "ja", inputs: ["src"], output: "out", env: [{name: "MODE", value: "full"}]}) { job { id } } }`, nil)
	s.ok(admin, `mutation { publish(dataset: "src", dataid: "2026-11-22") { status } }`, nil)

	r := s.ok(runnerA, `mutation { findNext(job: "ja", executor: "e1") {
		token dataid output { dataset url connection location } inputs { dataset location } env { name value } } }`, nil)
	require.True(t, store.down.Load(), "the catalog reads failed after the claim")
	var c struct {
		Token  string
		DataID string
		Output struct{ Dataset, URL, Connection, Location string }
		Inputs []struct{ Dataset, Location string }
		Env    []struct{ Name, Value string }
	}
	r.field(t, "findNext", &c)
	require.NotEmpty(t, c.Token)
	require.Equal(t, "out", c.Output.Dataset)
	require.Equal(t, "postgres://wh", c.Output.URL)
	require.Equal(t, "sslmode=require", c.Output.Connection)
	require.Equal(t, "day = '2026-11-22'", c.Output.Location)
	require.Len(t, c.Inputs, 1)
	require.Equal(t, "s3://lake/src/2026-11-22/", c.Inputs[0].Location)
	require.Equal(t, []struct{ Name, Value string }{{"MODE", "full"}}, c.Env)

	// A runner whose complete answer was lost retries, here on a replica,
	// and learns that the completion landed.
	store.down.Store(false)
	replica := newReplica(t, engine.New(b), s)
	for _, srv := range []*stack{s, replica} {
		var ok bool
		srv.ok(runnerA, `mutation($t: String!) { complete(token: $t) }`, vars("t", c.Token)).field(t, "complete", &ok)
		require.True(t, ok)
	}
	require.Equal(t, "STALE_CLAIM", replica.fails(runnerA, `mutation($t: String!) { fail(token: $t, reason: "x") }`, vars("t", c.Token)))
}

// TestRenewResource: renewResource over GraphQL, under the same access rule
// as lockResource and unlockResource.
func TestRenewResource(t *testing.T) {
	b := memory.New()
	t.Cleanup(func() { _ = b.Close() })
	s := newStack(t, engine.New(b))
	var l struct{ ID, ExpiresAt string }
	s.ok(runnerA, `mutation { lockResource(client: "runner-a", resource: "s3://x", mode: WRITE, ttlSeconds: 60) { id expiresAt } }`, nil).field(t, "lockResource", &l)
	var r struct{ ID, ExpiresAt string }
	s.ok(runnerA, `mutation($id: ID!) { renewResource(id: $id, client: "runner-a", ttlSeconds: 3600) { id expiresAt } }`, vars("id", l.ID)).field(t, "renewResource", &r)
	require.Equal(t, l.ID, r.ID)
	require.Greater(t, r.ExpiresAt, l.ExpiresAt)
	require.Equal(t, "FORBIDDEN", s.fails(runnerB, `mutation($id: ID!) { renewResource(id: $id, client: "runner-a") { id } }`, vars("id", l.ID)),
		"a runner renews under its own name only")
	require.Equal(t, "FORBIDDEN", s.fails(admin, `mutation($id: ID!) { renewResource(id: $id, client: "someone-else") { id } }`, vars("id", l.ID)),
		"only the holding client renews")
	require.Equal(t, "INVALID_ARGUMENT", s.fails(runnerA, `mutation($id: ID!) { renewResource(id: $id, client: "runner-a", ttlSeconds: 700000) { id } }`, vars("id", l.ID)))
	require.Equal(t, "INVALID_ARGUMENT", s.fails(runnerA, `mutation { lockResource(client: "runner-a", resource: "s3://y", mode: READ, ttlSeconds: 2147483647) { id } }`, nil),
		"a lock of 68 years is refused")
	require.Equal(t, "FORBIDDEN", s.fails(reader, `mutation($id: ID!) { renewResource(id: $id, client: "reader") { id } }`, vars("id", l.ID)))
}
