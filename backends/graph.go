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
	var g LockGraph
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		jobIDs, dsIDs, err := graphScope(cat.Catalog, f)
		if err != nil {
			return err
		}
		g = catalogGraph(cat.Catalog, jobIDs, dsIDs)
		if f.DataID == "" {
			return nil
		}
		return e.addChunks(ctx, cat, &g, f.DataID, jobIDs, dsIDs)
	})
	if err != nil {
		return LockGraph{}, err
	}
	return g, nil
}

// graphScope returns the jobs and datasets of the graph around f, sorted
// by id.
func graphScope(cat *Catalog, f GraphFilter) (jobIDs, dsIDs []string, err error) {
	jobs := map[string]bool{}
	switch {
	case f.Job != "":
		if _, err := cat.Job(f.Job); err != nil {
			return nil, nil, err
		}
		jobs[f.Job] = true
	case f.Dataset != "":
		if _, err := cat.Dataset(f.Dataset); err != nil {
			return nil, nil, err
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
			return nil, nil, err
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
	jobIDs = sortedKeys(jobs)
	for _, id := range jobIDs {
		j := cat.Jobs.Get(id)
		datasets[j.Output] = true
		for _, in := range j.Inputs {
			datasets[in] = true
		}
	}
	return jobIDs, sortedKeys(datasets), nil
}

// catalogGraph is the graph of jobs and datasets, without chunks.
func catalogGraph(cat *Catalog, jobIDs, dsIDs []string) LockGraph {
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
	return g
}

// addChunks adds to g the chunk nodes at dataid: the OUTPUT row of every
// dataset's chunk, and every job's rows on the chunks it touches.
func (e *engine) addChunks(ctx context.Context, cat *opCatalog, g *LockGraph, dataid string, jobIDs, dsIDs []string) error {
	var keys []RowKey
	for _, d := range dsIDs {
		keys = append(keys, chunkOutputKey(cat.Catalog, d, dataid))
	}
	type edgeAt struct {
		job, dataset string
		kind         GraphEdgeKind
	}
	var edges []edgeAt
	for _, id := range jobIDs {
		j := cat.Jobs.Get(id)
		for _, in := range j.Inputs {
			keys = append(keys, RowKey{Dataset: in, DataID: dataid, Job: id, Role: RoleInput})
			edges = append(edges, edgeAt{id, in, EdgeReads})
		}
		keys = append(keys, outputKey(j, dataid))
		edges = append(edges, edgeAt{id, j.Output, EdgeWrites})
	}
	rows, err := e.readRows(ctx, cat, keys)
	if err != nil {
		return err
	}
	chunkID := func(d string) string { return "chunk:" + d + "/" + dataid }
	for i, d := range dsIDs {
		g.Nodes = append(g.Nodes, GraphNode{ID: chunkID(d), Kind: NodeChunk, Dataset: d, DataID: dataid, Status: statusOf(rows[i])})
	}
	for i, ea := range edges {
		r := rows[len(dsIDs)+i]
		edge := GraphEdge{From: "job:" + ea.job, To: chunkID(ea.dataset), Kind: ea.kind, Status: statusOf(r)}
		if r != nil {
			edge.Locks = LocksOf(*r)
		}
		g.Edges = append(g.Edges, edge)
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
