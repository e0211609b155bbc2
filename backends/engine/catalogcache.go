package engine

import (
	"context"
	"errors"

	"github.com/chunklock/chunklock/backends"
)

// The engine keeps the catalog in memory
// instead of reading every dataset and job at the start of each
// operation. An operation runs with the cached catalog, and each of its
// transactions checks, inside the transaction, that the catalog version is
// still the cached one. When it is not, the transaction is rolled back and
// the operation runs again with a catalog read afresh; an operation that
// decided from the catalog alone, without such a transaction (a paused job,
// an unknown job or dataset, a token of a changed job), also runs again
// with a fresh catalog before it answers. So an operation never acts on a
// catalog older than the one current when its transaction began, exactly
// as when the catalog was read at the start of each operation: a job
// paused on any server claims nothing from the next findNext on.

// opCatalog is the catalog one operation works with.
type opCatalog struct {
	*backends.Catalog
	version   int64
	versioned bool // e.update checks the version inside each transaction
	fresh     bool // read from the backend for this operation
	validated bool // a transaction of this operation found it current
}

// maxCatalogRetries bounds how many times an operation runs again because
// the catalog keeps changing under it; after that it goes ahead with a
// catalog read just before, as on a backend without versions.
const maxCatalogRetries = 4

// loadCatalog returns the cached catalog when cached is true and there is
// one, and otherwise reads it.
func (e *engine) loadCatalog(ctx context.Context, cached bool) (*opCatalog, error) {
	if cached {
		if c := e.cat.Load(); c != nil {
			return &opCatalog{Catalog: c.cat, version: c.version, versioned: true}, nil
		}
	}
	ds, js, version, err := e.b.VersionedCatalog(ctx)
	if err != nil {
		return nil, err
	}
	c := &versionedCatalog{cat: backends.NewCatalog(ds, js), version: version}
	e.cacheCatalog(c)
	return &opCatalog{Catalog: c.cat, version: version, versioned: true, fresh: true}, nil
}

// cacheCatalog makes c the cached catalog unless the cache holds a newer
// one: a slow reader must not put back an older version.
func (e *engine) cacheCatalog(c *versionedCatalog) {
	for {
		old := e.cat.Load()
		if (old != nil && old.version > c.version) || e.cat.CompareAndSwap(old, c) {
			return
		}
	}
}

// maxCatalogWrites bounds how many times a catalog change is validated and
// written again because the catalog changed in between (other servers
// changing it at the same time).
const maxCatalogWrites = 8

// changeCatalog changes the catalog: check validates the change against
// the catalog, and write stores it on condition that the catalog version
// is still the one check saw, returning the catalog with the change and
// the new version. It runs again with the catalog read afresh when the
// write finds the version changed, or when check refused a cached catalog
// (which may be older than the store's). The engine's own catalog changes
// run one at a time, so they never conflict with each other, and each
// moves the cached catalog by its change instead of reading it again: a
// change costs the same whatever the size of the catalog.
func (e *engine) changeCatalog(ctx context.Context, check func(*backends.Catalog) error, write func(*backends.Catalog, int64) (*backends.Catalog, int64, error)) error {
	e.catMu.Lock()
	defer e.catMu.Unlock()
	cat, err := e.loadCatalog(ctx, true)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := check(cat.Catalog)
		if err == nil {
			var next *backends.Catalog
			var version int64
			if next, version, err = write(cat.Catalog, cat.version); err == nil {
				e.cacheCatalog(&versionedCatalog{cat: next, version: version})
				return nil
			}
			if !errors.Is(err, backends.ErrCatalogChanged) {
				return err
			}
			if attempt >= maxCatalogWrites {
				return backends.Unavailable(err, "the catalog changed under each of %d attempts to change it; try again", attempt)
			}
		} else if cat.fresh {
			return err
		}
		if cat, err = e.loadCatalog(ctx, false); err != nil {
			return err
		}
	}
}

// withCatalog runs op with the cached catalog, and again with a fresh one
// when op's transactions found the catalog changed or op answered without
// a transaction confirming the catalog.
func (e *engine) withCatalog(ctx context.Context, op func(cat *opCatalog) error) error {
	cat, err := e.loadCatalog(ctx, true)
	if err != nil {
		return err
	}
	for attempt := 1; ; attempt++ {
		err := op(cat)
		if !errors.Is(err, backends.ErrCatalogChanged) && (cat.fresh || cat.validated) {
			return err
		}
		if cat, err = e.loadCatalog(ctx, false); err != nil {
			return err
		}
		if attempt >= maxCatalogRetries {
			cat.versioned = false
		}
	}
}

// update runs fn in a transaction that, for a versioned catalog, also
// checks that the catalog is still cat; if not, it rolls back with
// ErrCatalogChanged, whatever fn did.
func (e *engine) update(ctx context.Context, cat *opCatalog, fn func(backends.Tx) error) error {
	if !cat.versioned {
		return e.b.Update(ctx, fn)
	}
	return e.b.Update(ctx, func(tx backends.Tx) error {
		err := fn(tx)
		version, verr := tx.CatalogVersion(ctx)
		switch {
		case verr != nil && err != nil:
			return err
		case verr != nil:
			return verr
		case version != cat.version:
			return backends.ErrCatalogChanged
		}
		cat.validated = true
		return err
	})
}
