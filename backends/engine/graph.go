package engine

import (
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// LockGraph builds the graph around f: job and dataset nodes with READS and
// WRITES edges from the catalog, and with f.DataID, one chunk node per
// dataset in the graph whose edges carry each job's row status and the
// locks that row implies.
func (e *engine) LockGraph(ctx context.Context, f backends.GraphFilter) (backends.LockGraph, error) {
	if f.DataID != "" {
		if err := backends.ValidateDataID(f.DataID); err != nil {
			return backends.LockGraph{}, err
		}
	}
	var g backends.LockGraph
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
		return backends.LockGraph{}, err
	}
	return g, nil
}

// graphScope returns the jobs and datasets of the graph around f, sorted
// by id.
func graphScope(cat *backends.Catalog, f backends.GraphFilter) (jobIDs, dsIDs []string, err error) {
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
func catalogGraph(cat *backends.Catalog, jobIDs, dsIDs []string) backends.LockGraph {
	var g backends.LockGraph
	for _, id := range jobIDs {
		g.Nodes = append(g.Nodes, backends.GraphNode{ID: "job:" + id, Kind: backends.NodeJob, Job: id})
	}
	for _, id := range dsIDs {
		g.Nodes = append(g.Nodes, backends.GraphNode{ID: "dataset:" + id, Kind: backends.NodeDataset, Dataset: id})
	}
	for _, id := range jobIDs {
		j := cat.Jobs.Get(id)
		for _, in := range j.Inputs {
			e := backends.GraphEdge{From: "job:" + id, To: "dataset:" + in, Kind: backends.EdgeReads}
			if m := j.Mapping(in); m.Kind == partition.ByDimension {
				// Its first entry that is not IDENTITY names the edge.
				for _, x := range m.Entries() {
					if x.Kind != partition.Identity {
						e.Mapping = &backends.InputMapping{Dataset: in, Mapping: x}
						break
					}
				}
			} else if m.Kind != partition.Identity && m.Kind != "" && m.Kind != partition.AcrossDimensions {
				e.Mapping = &backends.InputMapping{Dataset: in, Mapping: m}
			}
			g.Edges = append(g.Edges, e)
		}
		g.Edges = append(g.Edges, backends.GraphEdge{From: "job:" + id, To: "dataset:" + j.Output, Kind: backends.EdgeWrites})
	}
	return g
}

// addChunks adds to g the chunk nodes at dataid: the OUTPUT row of every
// dataset's chunk, and every job's rows on the chunks it touches for its
// output at dataid. A job with mappings (SPEC §9) reads other dataids of
// its inputs for that output: each chunk of its mapped set is a node of
// its own, read by the job with the status of its INPUT row read for
// dataid.
func (e *engine) addChunks(ctx context.Context, cat *opCatalog, g *backends.LockGraph, dataid string, jobIDs, dsIDs []string) error {
	type edgeAt struct {
		job  string
		at   backends.Read
		kind backends.GraphEdgeKind
	}
	var chunks []backends.Read // the chunk nodes, dsIDs at dataid first
	for _, d := range dsIDs {
		chunks = append(chunks, backends.Read{Dataset: d, DataID: dataid})
	}
	var keys []backends.RowKey
	var edges []edgeAt
	var rows []*backends.StatusRow
	err := e.update(ctx, cat, func(tx backends.Tx) error {
		chunks, keys, edges = chunks[:len(dsIDs)], nil, nil
		known := map[backends.Read]bool{}
		for _, c := range chunks {
			known[c] = true
		}
		for _, id := range jobIDs {
			j := cat.Jobs.Get(id)
			reads, err := claimReads(ctx, tx, cat.Catalog, j, dataid)
			if backends.CodeOf(err) == backends.CodeInvalidArgument {
				reads = nil // dataid is not one of the job's output dataids: it reads nothing for it
			} else if err != nil {
				return err
			}
			for _, r := range reads {
				keys = append(keys, backends.ReadKey(id, r, dataid))
				edges = append(edges, edgeAt{id, r, backends.EdgeReads})
				if !known[r] {
					known[r] = true
					chunks = append(chunks, r)
				}
			}
			keys = append(keys, outputKey(cat.Catalog, j, dataid))
			edges = append(edges, edgeAt{id, backends.Read{Dataset: j.Output, DataID: dataid}, backends.EdgeWrites})
		}
		all := make([]backends.RowKey, 0, len(chunks)+len(keys))
		for _, c := range chunks {
			all = append(all, chunkOutputKey(cat.Catalog, c.Dataset, c.DataID))
		}
		var err error
		rows, err = tx.GetRows(ctx, append(all, keys...))
		return err
	})
	if err != nil {
		return err
	}
	chunkID := func(c backends.Read) string { return "chunk:" + c.Dataset + "/" + c.DataID }
	// A dataset's chunk at dataid is drawn when it may be one: the
	// dataset's definition expects it, or it has a row (a date is no
	// tuple of a dataset with dimensions, nor a day of an hourly one).
	dropped := map[string]bool{}
	for i, c := range chunks {
		if i < len(dsIDs) && rows[i] == nil {
			if def := cat.DefOf(c.Dataset); !def.IsZero() && !def.Contains(c.DataID) {
				dropped[chunkID(c)] = true
				continue
			}
		}
		g.Nodes = append(g.Nodes, backends.GraphNode{ID: chunkID(c), Kind: backends.NodeChunk, Dataset: c.Dataset, DataID: c.DataID, Status: backends.StatusOf(rows[i])})
	}
	for i, ea := range edges {
		if dropped[chunkID(ea.at)] {
			continue
		}
		r := rows[len(chunks)+i]
		edge := backends.GraphEdge{From: "job:" + ea.job, To: chunkID(ea.at), Kind: ea.kind, Status: backends.StatusOf(r)}
		if r != nil {
			edge.Locks = backends.LocksOf(*r)
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
