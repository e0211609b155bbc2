package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/backends/postgres/internal/sqldb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// PutDataset creates or updates a dataset, keeping CreatedAt, if the
// catalog version is still version.
func (b *Backend) PutDataset(ctx context.Context, d backends.Dataset, frontiers []backends.Candidate, version int64) (backends.Dataset, int64, error) {
	if err := b.usable(ctx); err != nil {
		return backends.Dataset{}, 0, err
	}
	var parts []byte
	if d.Partitions != nil {
		var err error
		if parts, err = json.Marshal(d.Partitions); err != nil {
			return backends.Dataset{}, 0, fmt.Errorf("encoding the partitions of dataset %s: %w", d.ID, err)
		}
	}
	var r sqldb.Dataset
	err := b.changeCatalog(ctx, &version, func(q *sqldb.Queries) error {
		var err error
		r, err = q.PutDataset(ctx, sqldb.PutDatasetParams{
			ID: d.ID, Description: d.Description, Url: d.URL, Connection: d.Connection, Location: d.Location,
			Partitions: parts, OutputKey: d.OutputKey, Pipeline: d.Pipeline, RetentionEventsSeconds: retentionToDB(d.Retention),
			CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
		})
		if err != nil {
			return err
		}
		for i := range frontiers {
			if err := addFrontier(ctx, q, &frontiers[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return backends.Dataset{}, 0, mapCatalogErr(err, "storing dataset "+d.ID)
	}
	stored, err := datasetFromDB(r)
	return stored, version, err
}

// changeCatalog runs write in a transaction that holds the event-writer
// lock (lockCatalog) and first makes a new catalog version on condition
// that it is still *version, which it sets to the new one;
// backends.ErrCatalogChanged otherwise.
func (b *Backend) changeCatalog(ctx context.Context, version *int64, write func(*sqldb.Queries) error) error {
	return b.changeCatalogTx(ctx, version, func(q *sqldb.Queries, _ pgx.Tx) error { return write(q) })
}

// changeCatalogTx is changeCatalog whose write also has the transaction,
// for statements of its own.
func (b *Backend) changeCatalogTx(ctx context.Context, version *int64, write func(*sqldb.Queries, pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if err := b.lockCatalog(ctx, tx); err != nil {
			return err
		}
		q := b.q.WithTx(tx)
		v, err := q.BumpCatalogVersion(ctx, *version)
		if errors.Is(err, pgx.ErrNoRows) {
			return backends.ErrCatalogChanged
		}
		if err != nil {
			return err
		}
		*version = v
		if err := write(q, tx); err != nil {
			return err
		}
		return recordChange(ctx, tx, nil)
	})
}

// mapCatalogErr maps the error of a catalog change.
func mapCatalogErr(err error, what string) error {
	if errors.Is(err, backends.ErrCatalogChanged) {
		return err
	}
	return mapErr(err, what)
}

// lockCatalog takes the event-writer lock exclusively for a catalog change:
// it waits for every Update transaction in flight (each holds the lock
// shared from its first statement to its end) and holds new ones back until
// the change commits. So a publish or completion either committed before
// the change's backfill reads the READY rows, or reads the new catalog
// version and runs again with the new consumers. Catalog changes are rare;
// the wait is one transaction long.
func (b *Backend) lockCatalog(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1::bigint)", b.writers)
	return err
}

// PutJob creates or updates a job, keeping CreatedAt, if the catalog
// version is still version, and when enqueue is set backfills the
// findNext queue with one INSERT ... SELECT over the READY chunks of the
// job's first input, in the same transaction.
func (b *Backend) PutJob(ctx context.Context, j backends.Job, enqueue bool, frontier *backends.Candidate, version int64) (backends.Job, int64, error) {
	if err := b.usable(ctx); err != nil {
		return backends.Job{}, 0, err
	}
	p := sqldb.PutJobParams{
		ID: j.ID, Description: j.Description, Inputs: j.Inputs, Output: j.Output,
		EnvNames: make([]string, len(j.Env)), EnvValues: make([]string, len(j.Env)),
		MaxAttempts: int32(j.MaxAttempts), LeaseSeconds: int32(j.LeaseSeconds), Paused: j.Paused,
		KeyKind: j.Key.Kind, KeyPublic: j.Key.Public, CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
		RetryDelaySeconds: int32(j.RetryDelaySeconds), RetryMaxDelaySeconds: int32(j.RetryMaxDelaySeconds),
		MaxConcurrent: int32(j.MaxConcurrent), Pool: j.Pool, Pipeline: j.Pipeline,
	}
	ms := j.InputMappings
	if ms == nil {
		ms = []backends.InputMapping{}
	}
	var err error
	if p.InputMappings, err = json.Marshal(ms); err != nil {
		return backends.Job{}, 0, fmt.Errorf("encoding the input mappings of job %s: %w", j.ID, err)
	}
	if p.Inputs == nil {
		p.Inputs = []string{}
	}
	for i, e := range j.Env {
		p.EnvNames[i], p.EnvValues[i] = e.Name, e.Value
	}
	var stored sqldb.Job
	err = b.changeCatalog(ctx, &version, func(q *sqldb.Queries) error {
		var err error
		if stored, err = q.PutJob(ctx, p); err != nil {
			return err
		}
		if enqueue && len(j.Inputs) > 0 {
			if _, err = q.BackfillCandidates(ctx, sqldb.BackfillCandidatesParams{Job: j.ID, Dataset: j.Inputs[0]}); err != nil {
				return err
			}
		}
		return addFrontier(ctx, q, frontier)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "jobs_output_key" {
		// Another job took the output between the engine's check and here.
		return backends.Job{}, 0, backends.AlreadyExists("dataset %q is already produced by another job; a dataset has one producer", j.Output)
	}
	if err != nil {
		return backends.Job{}, 0, mapCatalogErr(err, "storing job "+j.ID)
	}
	job, err := jobFromDB(stored)
	return job, version, err
}

// Catalog returns every dataset and job by id. Jobs are read first: a job
// is only ever stored after its datasets, and datasets are never removed,
// so every dataset a listed job names is in the (later) dataset list.
func (b *Backend) Catalog(ctx context.Context) ([]backends.Dataset, []backends.Job, error) {
	if err := b.usable(ctx); err != nil {
		return nil, nil, err
	}
	ds, js, err := readCatalog(ctx, b.q)
	return ds, js, mapErr(err, "reading the catalog")
}

// readCatalog reads jobs, then datasets.
func readCatalog(ctx context.Context, q *sqldb.Queries) ([]backends.Dataset, []backends.Job, error) {
	jrows, err := q.ListJobs(ctx)
	if err != nil {
		return nil, nil, err
	}
	drows, err := q.ListDatasets(ctx)
	if err != nil {
		return nil, nil, err
	}
	ds := make([]backends.Dataset, len(drows))
	for i, r := range drows {
		if ds[i], err = datasetFromDB(r); err != nil {
			return nil, nil, err
		}
	}
	js := make([]backends.Job, len(jrows))
	for i, r := range jrows {
		if js[i], err = jobFromDB(r); err != nil {
			return nil, nil, err
		}
	}
	return ds, js, nil
}

// VersionedCatalog returns every dataset and job by id and the catalog
// version they make up, read in one REPEATABLE READ transaction
// (Backend.VersionedCatalog).
func (b *Backend) VersionedCatalog(ctx context.Context) ([]backends.Dataset, []backends.Job, int64, error) {
	if err := b.usable(ctx); err != nil {
		return nil, nil, 0, err
	}
	var ds []backends.Dataset
	var js []backends.Job
	var version int64
	err := pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		q := b.q.WithTx(tx)
		var err error
		if version, err = q.ReadCatalogVersion(ctx); err != nil {
			return err
		}
		ds, js, err = readCatalog(ctx, q)
		return err
	})
	if err != nil {
		return nil, nil, 0, mapErr(err, "reading the catalog")
	}
	return ds, js, version, nil
}

// putCredentialSQL is the PutCredential query of queries/catalog.sql
// telling whether it replaced a credential.
const putCredentialSQL = `INSERT INTO credentials (job, dataset, key_kind, ciphertext, updated_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (job, dataset) DO UPDATE SET
    key_kind   = excluded.key_kind,
    ciphertext = excluded.ciphertext,
    updated_at = excluded.updated_at
RETURNING xmax <> 0`

// PutCredential stores or replaces a job's credential for a dataset.
func (b *Backend) PutCredential(ctx context.Context, c backends.Credential) error {
	if err := b.usable(ctx); err != nil {
		return err
	}
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		// Whether the upsert replaced a row, told by the statement itself
		// (an updated row has xmax set), so that two first sets racing
		// record one creation and one replacement.
		var replaced bool
		if err := tx.QueryRow(ctx, putCredentialSQL, c.Job, c.Dataset, c.KeyKind, c.Ciphertext, c.UpdatedAt).Scan(&replaced); err != nil {
			return err
		}
		var before []byte
		if replaced {
			before = backends.CredentialBefore(c.Job, c.Dataset)
		}
		return recordChange(ctx, tx, before)
	})
	return mapErr(err, "storing a credential")
}

// SwapCredential replaces a job's credential for a dataset only while its
// ciphertext is still old.
func (b *Backend) SwapCredential(ctx context.Context, c backends.Credential, old []byte) (bool, error) {
	if err := b.usable(ctx); err != nil {
		return false, err
	}
	var n int64
	err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		var err error
		n, err = b.q.WithTx(tx).SwapCredential(ctx, sqldb.SwapCredentialParams{
			Job: c.Job, Dataset: c.Dataset, KeyKind: c.KeyKind, Ciphertext: c.Ciphertext, UpdatedAt: c.UpdatedAt, Old: old,
		})
		if err != nil || n != 1 {
			return err
		}
		return recordChange(ctx, tx, backends.CredentialBefore(c.Job, c.Dataset))
	})
	if err != nil {
		return false, mapErr(err, "replacing a credential")
	}
	return n == 1, nil
}

// Credentials returns a job's credentials by dataset.
func (b *Backend) Credentials(ctx context.Context, job string) ([]backends.Credential, error) {
	if err := b.usable(ctx); err != nil {
		return nil, err
	}
	rows, err := b.q.ListCredentials(ctx, job)
	if err != nil {
		return nil, mapErr(err, "reading credentials")
	}
	var out []backends.Credential
	for _, r := range rows {
		out = append(out, backends.Credential{Job: r.Job, Dataset: r.Dataset, KeyKind: r.KeyKind, Ciphertext: r.Ciphertext, UpdatedAt: r.UpdatedAt.UTC()})
	}
	return out, nil
}

func datasetFromDB(r sqldb.Dataset) (backends.Dataset, error) {
	d := backends.Dataset{
		ID: r.ID, Description: r.Description, URL: r.Url, Connection: r.Connection, Location: r.Location,
		OutputKey: r.OutputKey, Pipeline: r.Pipeline, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
	}
	if r.RetentionEventsSeconds.Valid {
		d.Retention = &backends.Retention{EventsSeconds: int(r.RetentionEventsSeconds.Int32)}
	}
	if r.Partitions != nil {
		d.Partitions = new(partition.Def)
		if err := json.Unmarshal(r.Partitions, d.Partitions); err != nil {
			return backends.Dataset{}, fmt.Errorf("reading the partitions of dataset %s: %w", r.ID, err)
		}
	}
	return d, nil
}

func jobFromDB(r sqldb.Job) (backends.Job, error) {
	j := backends.Job{
		ID: r.ID, Description: r.Description, Inputs: r.Inputs, Output: r.Output,
		MaxAttempts: int(r.MaxAttempts), LeaseSeconds: int(r.LeaseSeconds), Paused: r.Paused,
		Key:       backends.JobKey{Kind: r.KeyKind, Public: r.KeyPublic},
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		RetryDelaySeconds: int(r.RetryDelaySeconds), RetryMaxDelaySeconds: int(r.RetryMaxDelaySeconds),
		MaxConcurrent: int(r.MaxConcurrent), Pool: r.Pool, Pipeline: r.Pipeline,
	}
	if j.Inputs == nil {
		j.Inputs = []string{}
	}
	for i, name := range r.EnvNames {
		value := ""
		if i < len(r.EnvValues) {
			value = r.EnvValues[i]
		}
		j.Env = append(j.Env, backends.EnvVar{Name: name, Value: value})
	}
	j.InputMappings = []backends.InputMapping{}
	if len(r.InputMappings) > 0 {
		if err := json.Unmarshal(r.InputMappings, &j.InputMappings); err != nil {
			return backends.Job{}, fmt.Errorf("reading the input mappings of job %s: %w", r.ID, err)
		}
	}
	return j, nil
}

// addFrontier adds a frontier candidate (or another, c.Frontier false) in a
// catalog change's transaction.
func addFrontier(ctx context.Context, q *sqldb.Queries, c *backends.Candidate) error {
	if c == nil {
		return nil
	}
	return q.AddFrontier(ctx, sqldb.AddFrontierParams{Job: c.Job, Resubmit: c.Resubmit, Sortkey: backends.SortKey(c.DataID), Dataid: c.DataID, NotBefore: c.NotBefore, Frontier: c.Frontier})
}

// retentionToDB is a dataset's retention as its column holds it: NULL
// when it has none.
func retentionToDB(r *backends.Retention) pgtype.Int4 {
	if r == nil {
		return pgtype.Int4{}
	}
	return pgtype.Int4{Int32: int32(r.EventsSeconds), Valid: true}
}
