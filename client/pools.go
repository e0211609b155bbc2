package client

import (
	"context"
	"fmt"

	"github.com/chunklock/chunklock/backends"
)

// Pool is a pool as the server shows it: its slots, how many are used by
// live claims now, and the jobs naming it.
type Pool struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Slots       int    `json:"slots"`
	Used        int    `json:"used"`
	Jobs        []struct {
		ID string `json:"id"`
	} `json:"jobs"`
	// Pipeline names the pipeline whose apply created the pool; nil when
	// it was created otherwise.
	Pipeline *string `json:"pipeline"`
}

// Backend converts a pool to its definition.
func (p Pool) Backend() backends.Pool {
	return backends.Pool{ID: p.ID, Description: p.Description, Slots: p.Slots, Pipeline: deref(p.Pipeline)}
}

const poolFields = `id description slots used jobs { id }` + pipelineField

// Pools lists every pool.
func (c *Client) Pools(ctx context.Context) ([]Pool, error) {
	var out struct{ Pools []Pool }
	err := c.doCompat(ctx, `query { pools { `+poolFields+` } }`, nil, &out)
	return out.Pools, err
}

// Pool returns one pool (NOT_FOUND when there is none).
func (c *Client) Pool(ctx context.Context, id string) (Pool, error) {
	var out struct{ Pool *Pool }
	if err := c.doCompat(ctx, `query($id: String!) { pool(id: $id) { `+poolFields+` } }`, map[string]any{"id": id}, &out); err != nil {
		return Pool{}, err
	}
	if out.Pool == nil {
		return Pool{}, &Error{Code: backends.CodeNotFound, Message: fmt.Sprintf("pool %q not found", id)}
	}
	return *out.Pool, nil
}

// UpsertPool creates or replaces a pool.
func (c *Client) UpsertPool(ctx context.Context, p backends.Pool) error {
	in := map[string]any{"id": p.ID, "slots": p.Slots, "description": p.Description}
	if p.Pipeline != "" {
		in["pipeline"] = p.Pipeline
	}
	return c.Do(ctx, `mutation($in: PoolInput!) { upsertPool(input: $in) { id } }`, map[string]any{"in": in}, nil)
}
