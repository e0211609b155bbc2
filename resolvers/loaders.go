package resolvers

import (
	"context"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"

	"github.com/chunklock/chunklock/backends"
)

// loaderWait is how long a loader collects keys before it reads them in one
// batch. Sibling fields resolve concurrently, so a short wait suffices.
const loaderWait = 2 * time.Millisecond

// loaders batch and cache, for one GraphQL response, the reads that nested
// fields would otherwise repeat once per row:
//
//   - catalog: every dataset and job. The store reads its whole catalog to
//     answer any lookup by id, so one snapshot per response serves every
//     dataset, job, producer and consumer lookup of every row.
//   - creds: the credentials of a job, by job id.
//   - secrets: the decrypted secrets of a job by dataset, by job id (one
//     Keyring.Decrypt call per job; see secrets.go).
//   - summaries: the partition summary of a dataset, by dataset id, so that
//     every alias of a response answers the same count (Summaries shares
//     counts between responses).
//   - latest: the newest READY dataid of a dataset, by dataset id (one
//     Store.LatestReady call for every dataset of a response; dashboard.go).
type loaders struct {
	catalog   *dataloadgen.Loader[struct{}, *backends.Catalog]
	creds     *dataloadgen.Loader[string, []backends.Credential]
	secrets   *dataloadgen.Loader[string, map[string]string]
	latest    *dataloadgen.Loader[string, string]
	summaries sync.Map // dataset id -> func() (backends.PartitionCount, error)
}

type loadersKey struct{}

func (r *Resolver) newLoaders() *loaders {
	opt := dataloadgen.WithWait(loaderWait)
	return &loaders{
		catalog: dataloadgen.NewLoader(r.fetchCatalog, opt),
		creds:   dataloadgen.NewLoader(r.fetchCredentials, opt),
		secrets: dataloadgen.NewLoader(r.fetchSecrets, opt),
		latest:  dataloadgen.NewLoader(r.fetchLatestReady, opt),
	}
}

// Loaders is a gqlgen handler extension that gives every GraphQL response
// fresh dataloaders: one set per query or mutation, and one per event of a
// subscription, so that a long subscription never serves stale definitions.
type Loaders struct{ r *Resolver }

// Loaders returns the extension to install on the GraphQL handler.
func (r *Resolver) Loaders() Loaders { return Loaders{r} }

var (
	_ graphql.HandlerExtension    = Loaders{}
	_ graphql.ResponseInterceptor = Loaders{}
)

// ExtensionName names the extension.
func (Loaders) ExtensionName() string { return "ChunklockLoaders" }

// Validate accepts any schema.
func (Loaders) Validate(graphql.ExecutableSchema) error { return nil }

// InterceptResponse installs the loaders for one response.
func (l Loaders) InterceptResponse(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	return next(context.WithValue(ctx, loadersKey{}, l.r.newLoaders()))
}

// loadersFrom returns the loaders of the current response, or fresh ones
// when none were installed (a resolver called outside the handler).
func (r *Resolver) loadersFrom(ctx context.Context) *loaders {
	if l, ok := ctx.Value(loadersKey{}).(*loaders); ok {
		return l
	}
	return r.newLoaders()
}

func (r *Resolver) fetchCatalog(ctx context.Context, keys []struct{}) ([]*backends.Catalog, []error) {
	ds, err := r.store.Datasets(ctx)
	if err != nil {
		return nil, []error{err}
	}
	js, err := r.store.Jobs(ctx)
	if err != nil {
		return nil, []error{err}
	}
	cat := backends.NewCatalog(ds, js)
	out := make([]*backends.Catalog, len(keys))
	for i := range out {
		out[i] = cat
	}
	return out, nil
}

func (r *Resolver) fetchCredentials(ctx context.Context, jobs []string) ([][]backends.Credential, []error) {
	out := make([][]backends.Credential, len(jobs))
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		out[i], errs[i] = r.store.Credentials(ctx, j)
	}
	return out, errs
}

// summary returns the partition summary of ds (which has a definition),
// the same for every field of the response that asks for it.
func (r *Resolver) summary(ctx context.Context, ds *backends.Dataset) (backends.PartitionCount, error) {
	once := sync.OnceValues(func() (backends.PartitionCount, error) {
		return r.summaries.Count(ctx, ds.ID, *ds.Partitions)
	})
	count, _ := r.loadersFrom(ctx).summaries.LoadOrStore(ds.ID, once)
	return count.(func() (backends.PartitionCount, error))()
}

// catalogChanged drops the response's catalog snapshot after a mutation
// changed the catalog, so that the fields of later mutations in the same
// request see the change.
func (r *Resolver) catalogChanged(ctx context.Context) {
	r.loadersFrom(ctx).catalog.ClearAll()
}

// catalog returns the response's catalog snapshot.
func (r *Resolver) catalog(ctx context.Context) (*backends.Catalog, error) {
	return r.loadersFrom(ctx).catalog.Load(ctx, struct{}{})
}

// dataset returns a dataset from the response's catalog, or NOT_FOUND.
func (r *Resolver) dataset(ctx context.Context, id string) (backends.Dataset, error) {
	cat, err := r.catalog(ctx)
	if err != nil {
		return backends.Dataset{}, err
	}
	return cat.Dataset(id)
}

// datasets returns datasets by id, in order, or NOT_FOUND for the first
// missing one.
func (r *Resolver) datasets(ctx context.Context, ids []string) ([]backends.Dataset, error) {
	cat, err := r.catalog(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]backends.Dataset, len(ids))
	for i, id := range ids {
		if out[i], err = cat.Dataset(id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// job returns a job from the response's catalog, or NOT_FOUND.
func (r *Resolver) job(ctx context.Context, id string) (backends.Job, error) {
	cat, err := r.catalog(ctx)
	if err != nil {
		return backends.Job{}, err
	}
	return cat.Job(id)
}

// chunkLocation substitutes dataid into a dataset's location template.
func chunkLocation(d backends.Dataset, dataid string) string {
	return backends.ChunkLocation(d, dataid)
}
