package resolvers

import (
	"context"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/graph"
)

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
	}
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
	}
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
