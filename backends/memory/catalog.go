package memory

import (
	"bytes"
	"cmp"
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

// The catalog (datasets, jobs, and the catalog version their changes
// move) and the credentials, guarded by the backend's mutex.

func (b *Backend) PutDataset(ctx context.Context, d backends.Dataset, frontiers []backends.Candidate, version int64) (backends.Dataset, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if version != b.version {
		return backends.Dataset{}, 0, backends.ErrCatalogChanged
	}
	if old, ok := b.datasets[d.ID]; ok {
		d.CreatedAt = old.CreatedAt
	}
	b.datasets[d.ID] = d
	b.version++
	for i := range frontiers {
		b.addFrontier(&frontiers[i])
	}
	b.recordChange(ctx, nil)
	return d, b.version, nil
}

// addFrontier adds a frontier candidate stored with a catalog change.
func (b *Backend) addFrontier(c *backends.Candidate) {
	if c == nil {
		return
	}
	b.candSeq++
	f := *c
	f.Handle = b.candSeq
	b.cands[b.candSeq] = f
}

func (b *Backend) PutJob(ctx context.Context, j backends.Job, enqueue bool, frontier *backends.Candidate, version int64) (backends.Job, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if version != b.version {
		return backends.Job{}, 0, backends.ErrCatalogChanged
	}
	if old, ok := b.jobs[j.ID]; ok {
		j.CreatedAt = old.CreatedAt
		if b.producer[old.Output] == j.ID {
			delete(b.producer, old.Output)
		}
	}
	j.Inputs = slices.Clone(j.Inputs)
	j.Env = slices.Clone(j.Env)
	j.InputMappings = slices.Clone(j.InputMappings)
	b.jobs[j.ID] = j
	b.producer[j.Output] = j.ID
	b.version++
	b.addFrontier(frontier)
	b.recordChange(ctx, nil)
	if enqueue && len(j.Inputs) > 0 {
		producer := b.outputJob(j.Inputs[0])
		for k, r := range b.rows {
			if k.Dataset == j.Inputs[0] && k.Role == backends.RoleOutput && k.Job == producer && r.Status == backends.StatusReady {
				b.candSeq++
				b.cands[b.candSeq] = backends.Candidate{Job: j.ID, DataID: k.DataID, Handle: b.candSeq}
			}
		}
	}
	return j, b.version, nil
}

// outputJob is the job id the OUTPUT rows of dataset are keyed under: its
// OutputKey when set (a deleted producer's), else its producer's.
func (b *Backend) outputJob(dataset string) string {
	if k := b.datasets[dataset].OutputKey; k != "" {
		return k
	}
	return b.producer[dataset]
}

// VersionedCatalog returns the catalog and its version, read together.
func (b *Backend) VersionedCatalog(context.Context) ([]backends.Dataset, []backends.Job, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ds, js := b.catalog()
	return ds, js, b.version, nil
}

// CatalogVersion returns the catalog version; Update holds the backend's
// lock, so it cannot change during the transaction.
func (t *tx) CatalogVersion(context.Context) (int64, error) { return t.b.version, nil }

func (b *Backend) Catalog(context.Context) ([]backends.Dataset, []backends.Job, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ds, js := b.catalog()
	return ds, js, nil
}

// catalog copies every dataset and job, sorted by id; the caller holds b.mu.
func (b *Backend) catalog() ([]backends.Dataset, []backends.Job) {
	ds := make([]backends.Dataset, 0, len(b.datasets))
	for _, d := range b.datasets {
		ds = append(ds, d)
	}
	js := make([]backends.Job, 0, len(b.jobs))
	for _, j := range b.jobs {
		j.Inputs = slices.Clone(j.Inputs)
		j.Env = slices.Clone(j.Env)
		j.InputMappings = slices.Clone(j.InputMappings)
		if j.InputMappings == nil {
			j.InputMappings = []backends.InputMapping{}
		}
		js = append(js, j)
	}
	slices.SortFunc(ds, func(a, b backends.Dataset) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(js, func(a, b backends.Job) int { return cmp.Compare(a.ID, b.ID) })
	return ds, js
}

func (b *Backend) PutCredential(ctx context.Context, c backends.Credential) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	c.Ciphertext = slices.Clone(c.Ciphertext)
	k := [2]string{c.Job, c.Dataset}
	var before []byte
	if _, ok := b.creds[k]; ok {
		before = backends.CredentialBefore(c.Job, c.Dataset)
	}
	b.creds[k] = c
	b.recordChange(ctx, before)
	return nil
}

func (b *Backend) SwapCredential(ctx context.Context, c backends.Credential, old []byte) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := [2]string{c.Job, c.Dataset}
	if cur, ok := b.creds[k]; !ok || !bytes.Equal(cur.Ciphertext, old) {
		return false, nil
	}
	c.Ciphertext = slices.Clone(c.Ciphertext)
	b.creds[k] = c
	b.recordChange(ctx, backends.CredentialBefore(c.Job, c.Dataset))
	return true, nil
}

func (b *Backend) Credentials(_ context.Context, job string) ([]backends.Credential, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []backends.Credential
	for k, c := range b.creds {
		if k[0] == job {
			c.Ciphertext = slices.Clone(c.Ciphertext)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b backends.Credential) int { return cmp.Compare(a.Dataset, b.Dataset) })
	return out, nil
}

func (b *Backend) DeleteDataset(ctx context.Context, id string, withChunks bool, version int64) (int, int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if version != b.version {
		return 0, 0, backends.ErrCatalogChanged
	}
	var keys []backends.RowKey
	chunks := 0
	for k := range b.rows {
		if k.Dataset == id {
			keys = append(keys, k)
			if k.Role == backends.RoleOutput {
				chunks++
			}
		}
	}
	if chunks > 0 && !withChunks {
		return chunks, 0, nil
	}
	for _, k := range keys {
		b.putRow(k, nil)
	}
	for k := range b.creds {
		if k[1] == id {
			delete(b.creds, k)
		}
	}
	for k := range b.values {
		if k.dataset == id {
			delete(b.values, k)
		}
	}
	delete(b.datasets, id)
	delete(b.producer, id)
	b.version++
	b.recordChange(ctx, nil)
	return chunks, b.version, nil
}

func (b *Backend) DeletePool(ctx context.Context, id string, version int64) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if version != b.version {
		return 0, backends.ErrCatalogChanged
	}
	// Counted live claims keep no holders: the record is the definition.
	delete(b.slots, backends.PoolSlotsKey(id))
	b.version++
	b.recordChange(ctx, nil)
	return b.version, nil
}

func (b *Backend) DeleteJob(ctx context.Context, j backends.Job, version int64) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if version != b.version {
		return 0, backends.ErrCatalogChanged
	}
	// Its claims are its OUTPUT rows in RUNNING, keyed under its row job
	// (the deleted producer's id when it took that producer's chunks over).
	rowJob := j.ID
	if k := b.datasets[j.Output].OutputKey; k != "" {
		rowJob = k
	}
	var blockers []backends.Blocker
	for k := range b.running[rowJob] {
		if k.Dataset == j.Output {
			blockers = append(blockers, backends.Blocker{Dataset: k.Dataset, DataID: k.DataID, Job: j.ID, Kind: backends.BlockerOutputLocked, Status: backends.StatusRunning})
		}
	}
	if len(blockers) > 0 {
		return 0, backends.LiveClaims(j.ID, j.Paused, blockers)
	}
	for k := range b.rows {
		if k.Role == backends.RoleInput && k.Job == j.ID {
			b.putRow(k, nil)
		}
	}
	for k := range b.creds {
		if k[0] == j.ID {
			delete(b.creds, k)
		}
	}
	for h, c := range b.cands {
		if c.Job == j.ID {
			delete(b.cands, h)
		}
	}
	delete(b.jobs, j.ID)
	// The output's rows stay under their key, which the dataset records
	// (outputJob finds them there for PutJob's backfill).
	if d, ok := b.datasets[j.Output]; ok && d.OutputKey == "" {
		d.OutputKey = j.ID
		b.datasets[j.Output] = d
	}
	b.version++
	b.recordChange(ctx, nil)
	return b.version, nil
}
