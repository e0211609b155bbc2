package engine

import (
	"context"
	"encoding/json"
	"reflect"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Catalog changes (SPEC §11): each catalog operation hands the backend
// the change it records, in the transaction of the change itself
// (backends.WithChange).

// withChange returns ctx carrying the change op makes to object (kind,
// id), whose value before is before (nil, or not existed: created). An
// upsert whose object stays as it was (but for its times) records
// nothing: the change's Op is then empty.
func (e *engine) withChange(ctx context.Context, op, kind, id string, before, after any, existed bool) context.Context {
	c := &backends.CatalogChange{Actor: backends.ActorFrom(ctx), Time: e.clock.Now(), Kind: kind, ID: id, Op: op}
	switch kind {
	case backends.ChangeDataset:
		c.Dataset = id
	case backends.ChangeJob:
		c.Job = id
	}
	if existed {
		if after != nil && sameDefinition(before, after) {
			c.Op = ""
		}
		c.Before, _ = json.Marshal(withoutMembers(before))
	}
	return backends.WithChange(ctx, c)
}

// credentialChange returns ctx carrying the change op makes to the
// credential of (job, dataset); the backend sets its Before.
func (e *engine) credentialChange(ctx context.Context, op, job, dataset string) context.Context {
	return backends.WithChange(ctx, &backends.CatalogChange{Actor: backends.ActorFrom(ctx), Time: e.clock.Now(),
		Kind: backends.ChangeCredential, ID: job + "/" + dataset, Op: op, Job: job, Dataset: dataset})
}

// withoutMembers is v without the values of its DYNAMIC dimensions, when
// it is a dataset: a change records the values an add or a remove changed
// (valuesChange), not the whole set with each change of the dataset.
func withoutMembers(v any) any {
	ds, ok := v.(backends.Dataset)
	if !ok || ds.Partitions == nil || len(ds.Partitions.Dimensions) == 0 {
		return v
	}
	def := ds.Partitions.WithoutMembers()
	ds.Partitions = &def
	return ds
}

// sameDefinition tells whether two datasets, jobs or pools are equal but
// for their CreatedAt and UpdatedAt.
func sameDefinition(a, b any) bool {
	return reflect.DeepEqual(withoutTimes(a), withoutTimes(b))
}

func withoutTimes(v any) any {
	switch x := v.(type) {
	case backends.Dataset:
		x.CreatedAt, x.UpdatedAt = time.Time{}, time.Time{}
		return x
	case backends.Job:
		x.CreatedAt, x.UpdatedAt = time.Time{}, time.Time{}
		return x.Declared()
	case backends.Pool:
		x.CreatedAt, x.UpdatedAt = time.Time{}, time.Time{}
		return x
	}
	return v
}

func (e *engine) CatalogChanges(ctx context.Context, f backends.ChangeFilter) (backends.ChangePage, error) {
	if f.First < 0 || f.First > backends.MaxChangesPage {
		return backends.ChangePage{}, backends.InvalidArgument("first must be between 1 and %d, got %d", backends.MaxChangesPage, f.First)
	}
	if f.First == 0 {
		f.First = backends.PageSize(0)
	}
	page, err := e.b.ListChanges(ctx, f)
	if page.Changes == nil {
		page.Changes = []backends.CatalogChange{}
	}
	return page, err
}
