package backends

import (
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends/envname"
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
	return &n
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
	n.Jobs = c.Jobs.with(j.ID, j)
	return &n
}

// Producer returns the job producing dataset, or "" for a source dataset.
func (c *Catalog) Producer(dataset string) string { return c.producer.Get(dataset) }

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

// ValidateDataset checks a dataset definition.
func ValidateDataset(d Dataset) error {
	if err := ValidateID("dataset", d.ID); err != nil {
		return err
	}
	for _, f := range []struct {
		name, text string
		max        int
	}{
		{"description", d.Description, MaxDescriptionBytes},
		{"url", d.URL, MaxLocatorBytes},
		{"connection", d.Connection, MaxLocatorBytes},
		{"location", d.Location, MaxLocatorBytes},
	} {
		if err := ValidText(f.name, f.text, f.max); err != nil {
			return InvalidArgument("dataset %q: %s", d.ID, err.Error())
		}
	}
	if !strings.Contains(d.Location, "{dataid}") && d.Location != "" {
		return InvalidArgument("dataset %q: location %q must contain {dataid} to locate a chunk", d.ID, d.Location)
	}
	if p := d.Partitions; p != nil {
		if err := p.ValidateNew(); err != nil {
			return InvalidArgument("dataset %q: partitions: %s", d.ID, err.Error())
		}
		if p.Lag > MaxPartitionDelay || (p.Deadline != nil && *p.Deadline > MaxPartitionDelay) {
			return InvalidArgument("dataset %q: partitions: lag and deadline are at most %d seconds (a year)", d.ID, int(MaxPartitionDelay/time.Second))
		}
	}
	return nil
}

// MaxPartitionDelay bounds a partition definition's lag and deadline.
const MaxPartitionDelay = 366 * 24 * time.Hour

// validJobText checks a job's description and env (SPEC §1 Job, Text),
// admitting the env names of allow beyond envname's rule.
func validJobText(j Job, allow envname.Allow) error {
	if err := ValidText("description", j.Description, MaxDescriptionBytes); err != nil {
		return InvalidArgument("job %q: %s", j.ID, err.Error())
	}
	if len(j.Env) > MaxEnvEntries {
		return InvalidArgument("job %q: %d env entries; at most %d", j.ID, len(j.Env), MaxEnvEntries)
	}
	names := map[string]bool{}
	for _, e := range j.Env {
		if err := allow.Check(e.Name); err != nil {
			return InvalidArgument("job %q: %s", j.ID, err.Error())
		}
		if names[e.Name] {
			return InvalidArgument("job %q: env name %q given twice", j.ID, e.Name)
		}
		names[e.Name] = true
		if err := ValidText("env "+e.Name, e.Value, MaxEnvValueBytes); err != nil {
			return InvalidArgument("job %q: %s", j.ID, err.Error())
		}
	}
	return nil
}

// ValidateJob checks a job definition against the catalog and fills in
// defaults. It returns the job to store.
func (c *Catalog) ValidateJob(j Job) (Job, error) {
	if err := ValidateID("job", j.ID); err != nil {
		return Job{}, err
	}
	if j.Output == "" {
		return Job{}, InvalidArgument("job %q needs an output dataset", j.ID)
	}
	if _, err := c.Dataset(j.Output); err != nil {
		return Job{}, err
	}
	if p := c.Producer(j.Output); p != "" && p != j.ID {
		return Job{}, AlreadyExists("dataset %q is already produced by job %q; a dataset has one producer", j.Output, p)
	}
	seen := map[string]bool{}
	for _, in := range j.Inputs {
		if _, err := c.Dataset(in); err != nil {
			return Job{}, err
		}
		if in == j.Output {
			return Job{}, InvalidArgument("job %q reads its own output %q", j.ID, in)
		}
		if seen[in] {
			return Job{}, InvalidArgument("job %q lists input %q twice", j.ID, in)
		}
		seen[in] = true
	}
	// The new job adds edges input -> output; a cycle exists when the output
	// already reaches one of the inputs through other jobs.
	// Only what is downstream of the output is walked, without the job's
	// own (old) edges.
	for d := range c.downstream(j.Output, j.ID) {
		if seen[d] {
			return Job{}, InvalidArgument("job %q would close a cycle: %q is computed from its output %q", j.ID, d, j.Output)
		}
	}
	if err := validJobText(j, c.envAllow); err != nil {
		return Job{}, err
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = DefaultMaxAttempts
	}
	if j.LeaseSeconds == 0 {
		j.LeaseSeconds = DefaultLeaseSeconds
	}
	if j.MaxAttempts < 1 {
		return Job{}, InvalidArgument("job %q: maxAttempts must be at least 1", j.ID)
	}
	if j.LeaseSeconds < 1 || j.LeaseSeconds > 7*24*3600 {
		return Job{}, InvalidArgument("job %q: leaseSeconds must be between 1 and 604800", j.ID)
	}
	if err := validJobLimits(&j); err != nil {
		return Job{}, err
	}
	if j.Inputs == nil {
		j.Inputs = []string{}
	}
	ms, err := c.validMappings(j)
	if err != nil {
		return Job{}, err
	}
	j.InputMappings = ms
	return j, nil
}

// MaxRetryDelaySeconds bounds a job's retry delays (a year).
const MaxRetryDelaySeconds = 365 * 24 * 3600

// validJobLimits checks a job's backoff and concurrency settings and fills
// in the default retry cap.
func validJobLimits(j *Job) error {
	if j.RetryMaxDelaySeconds == 0 {
		j.RetryMaxDelaySeconds = DefaultRetryMaxDelaySeconds
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"retryDelaySeconds", j.RetryDelaySeconds}, {"retryMaxDelaySeconds", j.RetryMaxDelaySeconds}} {
		if f.v < 0 || f.v > MaxRetryDelaySeconds {
			return InvalidArgument("job %q: %s must be between 0 and %d", j.ID, f.name, MaxRetryDelaySeconds)
		}
	}
	if j.MaxConcurrent < 0 {
		return InvalidArgument("job %q: maxConcurrent must be at least 1 (0 or none: no limit)", j.ID)
	}
	if j.Pool != "" {
		if err := ValidateID("pool", j.Pool); err != nil {
			return InvalidArgument("job %q: %s", j.ID, err.Error())
		}
	}
	return nil
}

// ValidatePool checks a pool definition.
func ValidatePool(p Pool) error {
	if err := ValidateID("pool", p.ID); err != nil {
		return err
	}
	if p.Slots < 1 {
		return InvalidArgument("pool %q: slots must be at least 1, got %d", p.ID, p.Slots)
	}
	if err := ValidText("description", p.Description, MaxDescriptionBytes); err != nil {
		return InvalidArgument("pool %q: %s", p.ID, err.Error())
	}
	return nil
}
