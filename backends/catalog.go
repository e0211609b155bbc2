package backends

import (
	"slices"

	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/backends/partition"
)

// Catalog is a snapshot of every dataset and job, indexed for the engine.
// It is immutable: a change makes a new Catalog that shares everything
// else with the old one (WithDataset, WithJob), so operations reading the
// old one are undisturbed and a change costs the same whatever the size of
// the catalog.
type Catalog struct {
	Datasets  CatalogMap[Dataset]
	Jobs      CatalogMap[Job]
	producer  CatalogMap[string]   // dataset -> producing job ("": none)
	consumers CatalogMap[[]string] // dataset -> consuming jobs, sorted
	envAllow  envname.Allow        // env names ValidateJob admits beyond the rule
}

// NewCatalog indexes datasets and jobs.
func NewCatalog(datasets []Dataset, jobs []Job) *Catalog {
	c := &Catalog{}
	for _, d := range datasets {
		c = c.WithDataset(d)
	}
	for _, j := range jobs {
		c = c.WithJob(j)
	}
	return c
}

// WithEnvAllow returns the catalog whose ValidateJob admits, besides the
// env names envname.Check admits, those of allow (the operator's).
func (c *Catalog) WithEnvAllow(allow envname.Allow) *Catalog {
	n := *c
	n.envAllow = allow
	return &n
}

// WithDataset returns the catalog with d added or replaced.
func (c *Catalog) WithDataset(d Dataset) *Catalog {
	n := *c
	n.Datasets = c.Datasets.with(d.ID, d)
	// The jobs writing and reading it read across dimensions or not
	// according to its definition.
	for _, jid := range append([]string{c.producer.Get(d.ID)}, c.consumers.Get(d.ID)...) {
		if j, ok := n.Jobs.Lookup(jid); ok && jid != "" {
			n.Jobs = n.Jobs.with(jid, n.withAcross(j))
		}
	}
	return &n
}

// withAcross is j with the inputs it reads across dimensions (Job.Mapping)
// worked out from the definitions of its datasets in c.
func (c *Catalog) withAcross(j Job) Job {
	j.acrossDims, j.byDims = nil, nil
	out := c.DefOf(j.Output)
	for _, in := range j.Inputs {
		if slices.ContainsFunc(j.InputMappings, func(m InputMapping) bool { return m.Dataset == in }) {
			continue
		}
		inDef := c.DefOf(in)
		if !partition.DimensionsDiffer(out, inDef) {
			continue
		}
		j.acrossDims = append(j.acrossDims, in)
		// The runs of tuples AcrossDimensions reads when they are runs;
		// else the same rules as a mapping by dimension (whose errors then
		// say what is wrong).
		if partition.ValidateAcrossDimensions(out, inDef) != nil {
			j.byDims = append(j.byDims, in)
		}
	}
	return j
}

// WithJob returns the catalog with j added or replaced, and the producer
// and consumers of the datasets it reads and writes (and read and wrote)
// updated.
func (c *Catalog) WithJob(j Job) *Catalog {
	n := *c
	old, existed := c.Jobs.Lookup(j.ID)
	if existed {
		if old.Output != j.Output && n.producer.Get(old.Output) == j.ID {
			n.producer = n.producer.with(old.Output, "")
		}
		for _, in := range old.Inputs {
			if !slices.Contains(j.Inputs, in) {
				n.consumers = n.consumers.with(in, slices.DeleteFunc(slices.Clone(n.consumers.Get(in)), func(id string) bool { return id == j.ID }))
			}
		}
	}
	n.producer = n.producer.with(j.Output, j.ID)
	for _, in := range j.Inputs {
		cs := n.consumers.Get(in)
		if i, found := slices.BinarySearch(cs, j.ID); !found {
			n.consumers = n.consumers.with(in, slices.Insert(slices.Clone(cs), i, j.ID))
		}
	}
	n.Jobs = c.Jobs.with(j.ID, c.withAcross(j))
	return &n
}

// WithoutDataset returns the catalog without dataset id, which no job
// reads or writes.
func (c *Catalog) WithoutDataset(id string) *Catalog {
	n := *c
	n.Datasets = c.Datasets.without(id)
	n.producer = c.producer.without(id)
	n.consumers = c.consumers.without(id)
	return &n
}

// Producer returns the job producing dataset, or "" for a source dataset.
func (c *Catalog) Producer(dataset string) string { return c.producer.Get(dataset) }

// OutputJob returns the job id the OUTPUT rows of dataset are keyed under:
// that of the deleted job that first wrote them (Dataset.OutputKey) when
// the dataset records one, whichever job produces it now; else its
// producer's; "" for a source dataset.
func (c *Catalog) OutputJob(dataset string) string {
	if k := c.Datasets.Get(dataset).OutputKey; k != "" {
		return k
	}
	return c.producer.Get(dataset)
}

// RowJob returns the job id job's OUTPUT rows are keyed under: its
// output's OutputKey when set (it took over the chunks of a deleted
// producer), else its own id.
func (c *Catalog) RowJob(job Job) string {
	if k := c.Datasets.Get(job.Output).OutputKey; k != "" {
		return k
	}
	return job.ID
}

// RowOwner returns the job of the catalog whose OUTPUT rows on dataset are
// keyed under rowJob: the dataset's producer when its RowJob is rowJob.
func (c *Catalog) RowOwner(dataset, rowJob string) (Job, bool) {
	p := c.producer.Get(dataset)
	if p == "" {
		return Job{}, false
	}
	j, ok := c.Jobs.Lookup(p)
	if !ok || c.RowJob(j) != rowJob {
		return Job{}, false
	}
	return j, true
}

// WithoutJob returns the catalog without job id, its output's producer
// and its inputs' consumer gone with it.
func (c *Catalog) WithoutJob(id string) *Catalog {
	j, ok := c.Jobs.Lookup(id)
	if !ok {
		return c
	}
	n := *c
	if n.producer.Get(j.Output) == id {
		n.producer = n.producer.without(j.Output)
	}
	for _, in := range j.Inputs {
		n.consumers = n.consumers.with(in, slices.DeleteFunc(slices.Clone(n.consumers.Get(in)), func(s string) bool { return s == id }))
	}
	n.Jobs = c.Jobs.without(id)
	return &n
}

// Consumers returns the jobs reading dataset, sorted.
func (c *Catalog) Consumers(dataset string) []string { return c.consumers.Get(dataset) }

// Job returns a job or NOT_FOUND.
func (c *Catalog) Job(id string) (Job, error) {
	j, ok := c.Jobs.Lookup(id)
	if !ok {
		return Job{}, NotFound("job %q not found", id)
	}
	return j, nil
}

// Dataset returns a dataset or NOT_FOUND.
func (c *Catalog) Dataset(id string) (Dataset, error) {
	d, ok := c.Datasets.Lookup(id)
	if !ok {
		return Dataset{}, NotFound("dataset %q not found", id)
	}
	return d, nil
}

// Downstream returns dataset and every dataset computed from it, directly
// or transitively, sorted.
func (c *Catalog) Downstream(dataset string) []string {
	seen := c.downstream(dataset, "")
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// downstream returns dataset and every dataset computed from it, leaving
// out the edges of job skip.
func (c *Catalog) downstream(dataset, skip string) map[string]bool {
	seen := map[string]bool{dataset: true}
	queue := []string{dataset}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		for _, j := range c.Consumers(d) {
			if j == skip {
				continue
			}
			out := c.Jobs.Get(j).Output
			if !seen[out] {
				seen[out] = true
				queue = append(queue, out)
			}
		}
	}
	return seen
}

// DefOf is the partition definition of dataset; the zero Def when it has
// none.
func (c *Catalog) DefOf(dataset string) partition.Def {
	if d, ok := c.Datasets.Lookup(dataset); ok && d.Partitions != nil {
		return *d.Partitions
	}
	return partition.Def{}
}
