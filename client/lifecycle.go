package client

import "context"

// The catalog lifecycle (SPEC §11): pausing, resuming and deleting.

// PauseJob pauses a job: no claim is granted to it from the commit on; its
// live claims run to their end.
func (c *Client) PauseJob(ctx context.Context, id string) error {
	return c.Do(ctx, `mutation($id: String!) { pauseJob(id: $id) { id } }`, map[string]any{"id": id}, nil)
}

// ResumeJob lets a paused job claim again.
func (c *Client) ResumeJob(ctx context.Context, id string) error {
	return c.Do(ctx, `mutation($id: String!) { resumeJob(id: $id) { id } }`, map[string]any{"id": id}, nil)
}

// DeleteJob deletes a job; LOCKED, with its live claims as blockers, until
// they end. The chunks it produced stay.
func (c *Client) DeleteJob(ctx context.Context, id string) error {
	return c.Do(ctx, `mutation($id: String!) { deleteJob(id: $id) }`, map[string]any{"id": id}, nil)
}

// DeleteDataset deletes a dataset no job uses; with chunks only when
// deleteChunks is true (INVALID_ARGUMENT otherwise, naming how many).
func (c *Client) DeleteDataset(ctx context.Context, id string, deleteChunks bool) error {
	return c.Do(ctx, `mutation($id: String!, $dc: Boolean) { deleteDataset(id: $id, deleteChunks: $dc) }`,
		map[string]any{"id": id, "dc": deleteChunks}, nil)
}

// DeletePool deletes a pool no job names.
func (c *Client) DeletePool(ctx context.Context, id string) error {
	return c.Do(ctx, `mutation($id: String!) { deletePool(id: $id) }`, map[string]any{"id": id}, nil)
}
