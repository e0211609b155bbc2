package pipeline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

const withPools = `
pools:
  - {id: warehouse, slots: 4, description: four loads at a time}
  - {id: api, slots: 1}
datasets:
  - {id: raw, location: "/raw/{dataid}"}
  - {id: clean, location: "/clean/{dataid}"}
jobs:
  - id: transform
    inputs: [raw]
    output: clean
    pool: warehouse
    maxConcurrent: 2
`

func TestPools(t *testing.T) {
	t.Parallel()
	p, err := Parse(strings.NewReader(withPools), "p.yaml")
	require.NoError(t, err)
	require.Equal(t, []Pool{{ID: "warehouse", Slots: 4, Description: "four loads at a time"}, {ID: "api", Slots: 1}}, p.Pools)
	require.Equal(t, 2, p.Jobs[0].MaxConcurrent)
	require.NoError(t, p.ValidatePoolsAgainst(nil), "the job's pool is declared in the file")

	plan := p.PlanPools([]backends.Pool{{ID: "warehouse", Slots: 2, Description: "four loads at a time"}})
	require.Equal(t, []Change{
		{Kind: "pool", ID: "warehouse", Action: Update, Fields: []string{"slots"}},
		{Kind: "pool", ID: "api", Action: Create},
	}, plan)
	plan = p.PlanPools([]backends.Pool{{ID: "warehouse", Slots: 4, Description: "four loads at a time"}, {ID: "api", Slots: 1}})
	require.Equal(t, Unchanged, plan[0].Action)
	require.Equal(t, Unchanged, plan[1].Action)

	// A pool named by a job must be declared or exist on the server.
	q, err := Parse(strings.NewReader(strings.Replace(withPools, "pool: warehouse", "pool: elsewhere", 1)), "p.yaml")
	require.NoError(t, err)
	err = q.ValidatePoolsAgainst([]backends.Pool{{ID: "other", Slots: 1}})
	require.ErrorContains(t, err, `job "transform" names pool "elsewhere"`)
	require.NoError(t, q.ValidatePoolsAgainst([]backends.Pool{{ID: "elsewhere", Slots: 1}}))
}

func TestPoolsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"pools: [{id: wh, slots: 0}]", `pool "wh": slots must be at least 1`},
		{"pools: [{id: Wh, slots: 1}]", `pool id "Wh" is invalid`},
		{"pools: [{id: wh, slots: 1}, {id: wh, slots: 2}]", `pool "wh" is declared twice`},
		{"pools: [{id: wh, size: 1}]", `unknown field "size" in a pool (the fields are id, slots, description)`},
	} {
		_, err := Parse(strings.NewReader(tc.yaml), "p.yaml")
		require.ErrorContains(t, err, tc.want, tc.yaml)
	}
}
