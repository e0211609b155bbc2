package backends

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
)

// Catalog changes (SPEC §11): every change of a dataset, job, pool or
// credential is recorded with its actor and the value before, in the
// same transaction as the change itself.

// The kinds of object a catalog change concerns.
const (
	ChangeDataset    = "dataset"
	ChangeJob        = "job"
	ChangePool       = "pool"
	ChangeCredential = "credential"
)

// MaxChangesPage bounds a page of catalog changes.
const MaxChangesPage = 1000

// CatalogChange is one recorded catalog change.
type CatalogChange struct {
	// Cursor is the backend's position of the change: pages of changes
	// continue after it (ChangeFilter.After). Set when listed.
	Cursor string
	Actor  string
	Time   time.Time
	// Kind is the kind of object changed (ChangeDataset, ...), ID its id;
	// a credential's ID is "<job>/<dataset>".
	Kind string
	ID   string
	// Op is the operation that made the change: "upsertJob",
	// "deleteDataset", "pauseJob", ...
	Op string
	// Dataset and Job are what the filters of CatalogChanges match: the
	// dataset changed or a credential's dataset, the job changed or a
	// credential's job.
	Dataset string
	Job     string
	// Before is the object before the change as JSON, nil when the change
	// created it. A credential's is {"job": ..., "dataset": ...} (that one
	// was set), never its secret or ciphertext.
	Before []byte
}

// ChangeFilter selects catalog changes; a field left empty matches all.
type ChangeFilter struct {
	Dataset string
	Job     string
	Actor   string
	// After is the Cursor of the last change already seen ("" for the
	// newest); changes are listed newest first.
	After string
	First int
}

// ChangePage is a page of catalog changes, newest first.
type ChangePage struct {
	Changes     []CatalogChange
	HasNextPage bool
}

// Matches tells whether c is selected by f (Dataset, Job and Actor).
func (f ChangeFilter) Matches(c CatalogChange) bool {
	return (f.Dataset == "" || f.Dataset == c.Dataset) && (f.Job == "" || f.Job == c.Job) && (f.Actor == "" || f.Actor == c.Actor)
}

// CredentialBefore is the value before of a change replacing the
// credential of (job, dataset): that one was set, nothing of it.
func CredentialBefore(job, dataset string) []byte {
	b, _ := json.Marshal(map[string]string{"job": job, "dataset": dataset})
	return b
}

type changeKey struct{}

// WithChange carries the change a catalog write records: every catalog
// write method of a Backend (PutDataset, PutJob, DeleteDataset, DeleteJob,
// DeletePool, PutCredential, SwapCredential, and Update for pools)
// records ChangeFrom(ctx), when not nil and its Op is set, in its own
// transaction, and only if the write happens. For credentials the backend
// sets Before itself, when a credential was stored. The change is read
// when the write commits: an Update function may still fill it in, or
// leave Op empty (nothing changed).
func WithChange(ctx context.Context, c *CatalogChange) context.Context {
	return context.WithValue(ctx, changeKey{}, c)
}

// ChangeFrom returns the change WithChange set, or nil.
func ChangeFrom(ctx context.Context) *CatalogChange {
	c, _ := ctx.Value(changeKey{}).(*CatalogChange)
	return c
}

// BeforeForAPI is a change's value before as the API shows it: the keys
// lower-camel-cased, as the API names most of them (id, maxAttempts,
// leaseSeconds), the values as stored. Stored changes keep the engine's own field names (ID,
// MaxAttempts), which no reader should have to know. Only keys are
// renamed: the objects stored hold no map whose keys are data. The
// renaming changes letters' case only, in one pass over the bytes (a
// dataset's value may be a long list of STATIC values); a value whose
// strings do not end is returned as it is.
func BeforeForAPI(before []byte) []byte {
	out := bytes.Clone(before)
	for i := 0; i < len(out); i++ {
		if out[i] != '"' {
			continue
		}
		start, escaped := i+1, false
		for i++; i < len(out) && out[i] != '"'; i++ {
			if out[i] == '\\' {
				escaped = true
				i++
			}
		}
		if i >= len(out) {
			return before
		}
		j := i + 1
		for j < len(out) && (out[j] == ' ' || out[j] == '\n' || out[j] == '\t' || out[j] == '\r') {
			j++
		}
		if j < len(out) && out[j] == ':' && !escaped {
			apiName(out[start:i])
		}
	}
	return out
}

// apiName renames a Go field name in place as the API spells it: its
// leading capitals lower-cased, but for the last of several when a
// lower-case letter follows (ID → id, URL → url, MaxAttempts →
// maxAttempts, URLPath → urlPath); a name already lower-case stays.
func apiName(b []byte) {
	n := 0
	for n < len(b) && b[n] >= 'A' && b[n] <= 'Z' {
		n++
	}
	if n > 1 && n < len(b) {
		n--
	}
	for i := range n {
		b[i] += 'a' - 'A'
	}
}
