package backends

import (
	"context"
	"slices"
)

// LockGraph builds the graph around f: job and dataset nodes with READS and
// WRITES edges from the catalog, and with f.DataID, one chunk node per
// dataset in the graph whose edges carry each job's row status and the
// locks that row implies.
func (e *engine) LockGraph(ctx context.Context, f GraphFilter) (LockGraph, error) {
	if f.DataID != "" {
		if err := ValidateDataID(f.DataID); err != nil {
			return LockGraph{}, err
		}
	}
	cat, err := e.catalog(ctx)
	if err != nil {
		return LockGraph{}, err
	}
	jobs := map[string]bool{}
	switch {
	case f.Job != "":
		if _, err := cat.Job(f.Job); err != nil {
			return LockGraph{}, err
		}
		jobs[f.Job] = true
	case f.Dataset != "":
		if _, err := cat.Dataset(f.Dataset); err != nil {
			return LockGraph{}, err
		}
		if p := cat.Producer(f.Dataset); p != "" {
			jobs[p] = true
		}
		for _, j := range cat.Consumers(f.Dataset) {
			jobs[j] = true
		}
	default:
		for id := range cat.Jobs.All() {
			jobs[id] = true
		}
	}
	if f.Job != "" && f.Dataset != "" {
		if _, err := cat.Dataset(f.Dataset); err != nil {
			return LockGraph{}, err
		}
	}
	datasets := map[string]bool{}
	if f.Dataset != "" {
		datasets[f.Dataset] = true
	} else if f.Job == "" {
		for id := range cat.Datasets.All() {
			datasets[id] = true
		}
	}
	jobIDs := sortedKeys(jobs)
	for _, id := range jobIDs {
		j := cat.Jobs.Get(id)
		datasets[j.Output] = true
		for _, in := range j.Inputs {
			datasets[in] = true
		}
	}
	dsIDs := sortedKeys(datasets)

	var g LockGraph
	for _, id := range jobIDs {
		g.Nodes = append(g.Nodes, GraphNode{ID: "job:" + id, Kind: NodeJob, Job: id})
	}
	for _, id := range dsIDs {
		g.Nodes = append(g.Nodes, GraphNode{ID: "dataset:" + id, Kind: NodeDataset, Dataset: id})
	}
	for _, id := range jobIDs {
		j := cat.Jobs.Get(id)
		for _, in := range j.Inputs {
			g.Edges = append(g.Edges, GraphEdge{From: "job:" + id, To: "dataset:" + in, Kind: EdgeReads})
		}
		g.Edges = append(g.Edges, GraphEdge{From: "job:" + id, To: "dataset:" + j.Output, Kind: EdgeWrites})
	}
	if f.DataID == "" {
		return g, nil
	}

	// Chunk nodes: the OUTPUT row of every dataset's chunk, and every job's
	// rows on the chunks it touches.
	var keys []RowKey
	for _, d := range dsIDs {
		keys = append(keys, chunkOutputKey(cat, d, f.DataID))
	}
	type edgeAt struct {
		job, dataset string
		kind         GraphEdgeKind
	}
	var edges []edgeAt
	for _, id := range jobIDs {
		j := cat.Jobs.Get(id)
		for _, in := range j.Inputs {
			keys = append(keys, RowKey{Dataset: in, DataID: f.DataID, Job: id, Role: RoleInput})
			edges = append(edges, edgeAt{id, in, EdgeReads})
		}
		keys = append(keys, outputKey(j, f.DataID))
		edges = append(edges, edgeAt{id, j.Output, EdgeWrites})
	}
	var rows []*StatusRow
	err = e.b.Update(ctx, func(tx Tx) error {
		var err error
		rows, err = tx.GetRows(ctx, keys)
		return err
	})
	if err != nil {
		return LockGraph{}, err
	}
	chunkID := func(d string) string { return "chunk:" + d + "/" + f.DataID }
	for i, d := range dsIDs {
		g.Nodes = append(g.Nodes, GraphNode{ID: chunkID(d), Kind: NodeChunk, Dataset: d, DataID: f.DataID, Status: statusOf(rows[i])})
	}
	for i, ea := range edges {
		r := rows[len(dsIDs)+i]
		edge := GraphEdge{From: "job:" + ea.job, To: chunkID(ea.dataset), Kind: ea.kind, Status: statusOf(r)}
		if r != nil {
			edge.Locks = LocksOf(*r)
		}
		g.Edges = append(g.Edges, edge)
	}
	return g, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
