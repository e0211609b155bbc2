package resolvers

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/graph"
)

// done is a mutation's Boolean answer: true once it is done.
func done(err error) (bool, error) { return err == nil, err }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func datasetFromInput(in graph.DatasetInput) backends.Dataset {
	return backends.Dataset{
		ID:          in.ID,
		Description: deref(in.Description),
		URL:         deref(in.URL),
		Connection:  deref(in.Connection),
		Location:    deref(in.Location),
		Partitions:  partitionsFromInput(in.Partitions),
		Pipeline:    deref(in.Pipeline),
		Retention:   retentionFromInput(in.Retention),
	}
}

// retentionFromInput is the retention an input asks for (nil: the
// server's); the store validates it.
func retentionFromInput(in *graph.RetentionInput) *backends.Retention {
	if in == nil {
		return nil
	}
	return &backends.Retention{EventsSeconds: in.EventsSeconds}
}

// partitionsFromInput is the definition an input asks for; the store
// validates it.
func partitionsFromInput(in *graph.PartitionDefinitionInput) *partition.Def {
	if in == nil {
		return nil
	}
	s := &partition.Spec{
		Kind: deref(in.Kind), Start: deref(in.Start), End: deref(in.End), Timezone: deref(in.Timezone),
		Values: in.Values, LagSeconds: deref(in.LagSeconds), DeadlineSeconds: in.DeadlineSeconds,
	}
	for _, dim := range in.Dimensions {
		s.Dimensions = append(s.Dimensions, partition.DimensionSpec{Name: dim.Name, Kind: dim.Kind, Start: deref(dim.Start),
			End: deref(dim.End), Timezone: deref(dim.Timezone), Values: dim.Values})
	}
	return s.Def()
}

// partitionsOf is the API's view of a stored definition.
func partitionsOf(d *partition.Def) *graph.PartitionDefinition {
	if d == nil {
		return nil
	}
	out := &graph.PartitionDefinition{
		Start: nonEmpty(d.Start), End: nonEmpty(d.End), Timezone: nonEmpty(d.Timezone),
		Values: d.Values, LagSeconds: int(d.Lag / time.Second),
	}
	if d.Kind != partition.Dimensional {
		out.Kind = &d.Kind
	}
	for i, dim := range d.Dimensions {
		pd := graph.PartitionDimension{Name: dim.Name, Kind: dim.Kind,
			Start: nonEmpty(dim.Start), End: nonEmpty(dim.End), Timezone: nonEmpty(dim.Timezone), Values: dim.Values}
		if dim.Kind == partition.Dynamic {
			pd.Values = []string{}
			pd.Members = []graph.PartitionMember{}
			for _, m := range d.DimensionMembers(i) {
				pd.Values = append(pd.Values, m.Value)
				pd.Members = append(pd.Members, graph.PartitionMember{Value: m.Value, AddedAt: time.Unix(m.Added, 0).UTC(),
					ExpectedFrom: nonEmpty(m.ExpectedFrom)})
			}
		}
		out.Dimensions = append(out.Dimensions, pd)
	}
	if d.Deadline != nil {
		s := int(*d.Deadline / time.Second)
		out.DeadlineSeconds = &s
	}
	return out
}

// nonEmpty is nil for "", else a pointer to s.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func jobFromInput(in graph.JobInput) backends.Job {
	env := make([]backends.EnvVar, len(in.Env))
	for i, e := range in.Env {
		env[i] = backends.EnvVar{Name: e.Name, Value: e.Value}
	}
	return backends.Job{
		ID:           in.ID,
		Description:  deref(in.Description),
		Inputs:       in.Inputs,
		Output:       in.Output,
		Env:          env,
		MaxAttempts:  deref(in.MaxAttempts),
		LeaseSeconds: deref(in.LeaseSeconds),
		Paused:       deref(in.Paused),

		RetryDelaySeconds:    deref(in.RetryDelaySeconds),
		RetryMaxDelaySeconds: deref(in.RetryMaxDelaySeconds),
		MaxConcurrent:        deref(in.MaxConcurrent),
		Pool:                 deref(in.Pool),
		InputMappings:        mappingsFromInput(in.InputMappings),
		Pipeline:             deref(in.Pipeline),
	}
}

// mappingsFromInput is the input mappings a job input asks for; the store
// validates them.
func mappingsFromInput(in []graph.InputMappingInput) []backends.InputMapping {
	ms := make([]backends.InputMapping, len(in))
	for i, m := range in {
		ms[i] = backends.InputMapping{Dataset: m.Dataset, Mapping: partition.Mapping{
			Kind: m.Kind, StartOffset: deref(m.StartOffset), EndOffset: deref(m.EndOffset),
			Dimension: deref(m.Dimension), OutputDimension: deref(m.OutputDimension)}}
	}
	return ms
}

// checkJobInput refuses what the store cannot tell from a default: an
// explicit maxConcurrent below 1 (null means no limit), an explicit
// retryMaxDelaySeconds of 0 and an empty pool name.
func checkJobInput(in graph.JobInput) error {
	switch {
	case in.MaxConcurrent != nil && *in.MaxConcurrent < 1:
		return backends.InvalidArgument("job %q: maxConcurrent must be at least 1; omit it (or pass null) for no limit", in.ID)
	case in.RetryMaxDelaySeconds != nil && *in.RetryMaxDelaySeconds < 1:
		return backends.InvalidArgument("job %q: retryMaxDelaySeconds must be at least 1; omit it for the default (3600)", in.ID)
	case in.Pool != nil && *in.Pool == "":
		return backends.InvalidArgument("job %q: pool must be a pool id; omit it (or pass null) for none", in.ID)
	}
	return nil
}

// upsertJob stores a job, first creating its key when it has none: the
// keyring makes a key pair, the job keeps the public part, and the job key
// goes back to the caller this once.
func (r *Resolver) upsertJob(ctx context.Context, j backends.Job) (graph.UpsertJobPayload, error) {
	// Validate before making a key, so that a refused definition leaves no
	// key behind in the key service; a job that has a key keeps it.
	valid, err := r.store.ValidateJob(ctx, j)
	if err != nil {
		return graph.UpsertJobPayload{}, err
	}
	var jobKey *string
	if valid.Key.Public != "" {
		j.Key = valid.Key
	} else {
		public, key, err := r.keyring.CreateJobKey(ctx, j.ID)
		if err != nil {
			return graph.UpsertJobPayload{}, err
		}
		j.Key = backends.JobKey{Kind: r.keyring.Kind(), Public: public}
		jobKey = &key
	}
	stored, err := r.store.UpsertJob(ctx, j)
	if err != nil {
		return graph.UpsertJobPayload{}, err
	}
	if jobKey != nil {
		r.log.Info("created a job key", "job", j.ID, "keyring", j.Key.Kind, "actor", backends.ActorFrom(ctx))
	}
	return graph.UpsertJobPayload{Job: stored, JobKey: jobKey}, nil
}

// setCredential encrypts secret to the job's key, with the keyring of the
// kind recorded with that key, and stores the ciphertext with that kind.
func (r *Resolver) setCredential(ctx context.Context, jobID, dataset, secret string) (backends.Job, error) {
	job, err := r.store.Job(ctx, jobID)
	if err != nil {
		return backends.Job{}, err
	}
	if job.Key.Public == "" {
		return backends.Job{}, backends.InvalidArgument("job %q has no key yet; upsert the job once to create it, then set the credential", jobID)
	}
	k, err := r.keyringFor(job)
	if err != nil {
		return backends.Job{}, err
	}
	ct, err := k.Encrypt(ctx, job.ID, job.Key.Public, []byte(secret))
	if err != nil {
		return backends.Job{}, err
	}
	err = r.store.SetCredential(ctx, backends.Credential{Job: job.ID, Dataset: dataset, KeyKind: job.Key.Kind, Ciphertext: ct})
	if err != nil {
		return backends.Job{}, err
	}
	r.log.Info("set a credential", "job", job.ID, "dataset", dataset, "keyring", job.Key.Kind, "actor", backends.ActorFrom(ctx))
	return job, nil
}

// credentialsChanged drops the response's cached credentials and secrets of
// job after setCredential, so that later fields of the same request see the
// change.
func (r *Resolver) credentialsChanged(ctx context.Context, job string) {
	l := r.loadersFrom(ctx)
	l.creds.Clear(job)
	l.secrets.Clear(job)
}

// slicesOf is the slices an argument asks for (nil for none).
func slicesOf(in []graph.DimensionSliceInput) []partition.Slice {
	var out []partition.Slice
	for _, s := range in {
		out = append(out, partition.Slice{Dimension: s.Dimension, Values: s.Values})
	}
	return out
}
