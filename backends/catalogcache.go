package backends

import (
	"context"
	"errors"
	"fmt"
)

// The engine keeps the catalog of a CatalogVersioner backend in memory
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

// CatalogVersioner is implemented by backends that number the catalog:
// every change to datasets or jobs commits a new version, in the same
// transaction as the change.
type CatalogVersioner interface {
	// VersionedCatalog returns every dataset and job, sorted by id, and the
	// version they make up, read atomically.
	VersionedCatalog(ctx context.Context) ([]Dataset, []Job, int64, error)
}

// CatalogVersionTx is implemented by the Tx of a CatalogVersioner backend.
type CatalogVersionTx interface {
	// CatalogVersion returns the catalog version this transaction sees.
	CatalogVersion(ctx context.Context) (int64, error)
}

// versionedCatalog is a catalog and its version.
type versionedCatalog struct {
	cat     *Catalog
	version int64
}

// opCatalog is the catalog one operation works with.
type opCatalog struct {
	*Catalog
	version   int64
	versioned bool // e.update checks the version inside each transaction
	fresh     bool // read from the backend for this operation
	validated bool // a transaction of this operation found it current
}

// errCatalogChanged rolls back a transaction that found the catalog
// changed; withCatalog then runs the operation again.
var errCatalogChanged = errors.New("backends: the catalog changed during the operation")

// maxCatalogRetries bounds how many times an operation runs again because
// the catalog keeps changing under it; after that it goes ahead with a
// catalog read just before, as on a backend without versions.
const maxCatalogRetries = 4

// loadCatalog returns the cached catalog when cached is true and there is
// one, and otherwise reads it.
func (e *engine) loadCatalog(ctx context.Context, cached bool) (*opCatalog, error) {
	vb, ok := e.b.(CatalogVersioner)
	if !ok {
		cat, err := e.catalog(ctx)
		if err != nil {
			return nil, err
		}
		return &opCatalog{Catalog: cat, fresh: true}, nil
	}
	if cached {
		if c := e.cat.Load(); c != nil {
			return &opCatalog{Catalog: c.cat, version: c.version, versioned: true}, nil
		}
	}
	ds, js, version, err := vb.VersionedCatalog(ctx)
	if err != nil {
		return nil, err
	}
	c := &versionedCatalog{cat: NewCatalog(ds, js), version: version}
	for {
		// Keep the newest: a slow reader must not put back an older version.
		old := e.cat.Load()
		if (old != nil && old.version > version) || e.cat.CompareAndSwap(old, c) {
			break
		}
	}
	return &opCatalog{Catalog: c.cat, version: version, versioned: true, fresh: true}, nil
}

// forgetCatalog drops the cached catalog after this engine changed it.
func (e *engine) forgetCatalog() { e.cat.Store(nil) }

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
		if !errors.Is(err, errCatalogChanged) && (cat.fresh || cat.validated) {
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
// errCatalogChanged, whatever fn did.
func (e *engine) update(ctx context.Context, cat *opCatalog, fn func(Tx) error) error {
	if !cat.versioned {
		return e.b.Update(ctx, fn)
	}
	return e.b.Update(ctx, func(tx Tx) error {
		err := fn(tx)
		vt, ok := tx.(CatalogVersionTx)
		if !ok {
			return fmt.Errorf("backends: %T implements CatalogVersioner but its Tx %T does not implement CatalogVersionTx", e.b, tx)
		}
		version, verr := vt.CatalogVersion(ctx)
		switch {
		case verr != nil && err != nil:
			return err
		case verr != nil:
			return verr
		case version != cat.version:
			return errCatalogChanged
		}
		cat.validated = true
		return err
	})
}
