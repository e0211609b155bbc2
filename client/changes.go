package client

import (
	"context"
	"time"
)

// CatalogChange is one change of the catalog (SPEC §11): who changed which
// dataset, job, pool or credential, when, and what it was before.
type CatalogChange struct {
	Cursor string    `json:"cursor"`
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`
	// Kind is dataset, job, pool or credential; a credential's ID is
	// "<job>/<dataset>".
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Op is the operation: upsertDataset, upsertJob, upsertPool,
	// setCredential, pauseJob, resumeJob, deleteJob, deleteDataset or
	// deletePool.
	Op      string `json:"op"`
	Dataset string `json:"dataset"`
	Job     string `json:"job"`
	// Before is the object before the change as JSON; empty when the
	// change created it. A credential's names its job and dataset only.
	Before string `json:"before"`
}

// ChangeFilter selects catalog changes; empty fields match all.
type ChangeFilter struct {
	Dataset, Job, Actor string
}

// CatalogChanges reads one page of at most first (1 to 1000) catalog
// changes matching f, newest first, after the cursor after ("" for the
// newest); next is the cursor of the page after, "" on the last page.
func (c *Client) CatalogChanges(ctx context.Context, f ChangeFilter, after string, first int) (changes []CatalogChange, next string, err error) {
	vars := map[string]any{"first": first}
	for k, v := range map[string]string{"dataset": f.Dataset, "job": f.Job, "actor": f.Actor, "after": after} {
		if v != "" {
			vars[k] = v
		}
	}
	var out struct {
		CatalogChanges struct {
			Edges []struct {
				// null (no dataset, job or value before) decodes as "".
				Node CatalogChange `json:"node"`
			} `json:"edges"`
			PageInfo pageInfo `json:"pageInfo"`
		} `json:"catalogChanges"`
	}
	if err := c.Do(ctx, `query($dataset: String, $job: String, $actor: String, $first: Int, $after: String) {
		catalogChanges(dataset: $dataset, job: $job, actor: $actor, first: $first, after: $after) {
			edges { node { cursor time actor kind id op dataset job before } } pageInfo { hasNextPage endCursor } } }`, vars, &out); err != nil {
		return nil, "", err
	}
	for _, e := range out.CatalogChanges.Edges {
		changes = append(changes, e.Node)
	}
	if out.CatalogChanges.PageInfo.HasNextPage {
		next = out.CatalogChanges.PageInfo.EndCursor
	}
	return changes, next, nil
}
