package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

const upsertPoolQ = `mutation($in: PoolInput!) { upsertPool(input: $in) { id slots description used } }`

// TestPools covers upsertPool (admin only), pools, pool, Pool.used and
// Pool.jobs, a job naming a pool, and the CONCURRENCY blocker naming it.
func TestPools(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.define()
		require.Equal(t, "FORBIDDEN", s.fails(reader, upsertPoolQ, vars("in", map[string]any{"id": "wh", "slots": 1})))
		require.Equal(t, "FORBIDDEN", s.fails(runnerA, upsertPoolQ, vars("in", map[string]any{"id": "wh", "slots": 1})))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, upsertPoolQ, vars("in", map[string]any{"id": "wh", "slots": 0})))
		require.Equal(t, "NOT_FOUND", s.fails(admin, upsertJobQ, vars("in", map[string]any{"id": "ja", "inputs": []string{"a"}, "output": "b", "pool": "wh"})))
		s.ok(admin, upsertPoolQ, vars("in", map[string]any{"id": "wh", "slots": 1, "description": "warehouse"}))
		s.ok(admin, upsertJobQ, vars("in", map[string]any{"id": "ja", "inputs": []string{"a"}, "output": "b", "pool": "wh", "leaseSeconds": 30}))
		s.publish("a", "2026-03-01")
		s.publish("a", "2026-03-02")
		require.NotNil(t, s.findNext(runnerA, "ja", "e", ""))
		require.Nil(t, s.findNext(runnerA, "ja", "e", ""), "the pool's one slot is taken")

		var ps []struct {
			ID, Description string
			Slots, Used     int
			Jobs            []struct{ ID string }
		}
		s.ok(reader, `{ pools { id description slots used jobs { id } } }`, nil).field(t, "pools", &ps)
		require.Len(t, ps, 1)
		require.Equal(t, "warehouse", ps[0].Description)
		require.Equal(t, 1, ps[0].Used)
		require.Equal(t, []struct{ ID string }{{"ja"}}, ps[0].Jobs)
		var p *struct{ ID string }
		s.ok(reader, `{ pool(id: "wh") { id } }`, nil).field(t, "pool", &p)
		require.Equal(t, "wh", p.ID)
		require.Equal(t, "NOT_FOUND", s.fails(reader, `{ pool(id: "nope") { id } }`, nil))

		var bs []struct {
			Kind string
			Pool *string
		}
		s.ok(reader, `{ blockers(job: "ja", dataid: "2026-03-02") { kind pool } }`, nil).field(t, "blockers", &bs)
		require.Len(t, bs, 1)
		require.Equal(t, "CONCURRENCY", bs[0].Kind)
		require.Equal(t, "wh", *bs[0].Pool)
		// A claim refused by the pool says which pool in its LOCKED error.
		r := s.send(request{who: runnerA, query: claimQ, vars: vars("job", "ja", "id", "2026-03-02", "ex", "e2")})
		require.Equal(t, "LOCKED", r.code(t))
		require.Equal(t, []any{map[string]any{"dataset": "b", "dataid": "2026-03-02", "job": "ja", "kind": "CONCURRENCY", "status": "NONE", "pool": "wh"}},
			r.Errors[0].Extensions["blockers"])
	})
}
