package backends_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestCatalogWithJobMatchesRebuild: a catalog changed job by job (moving
// outputs, changing inputs) indexes the same producers and consumers as
// one built at once from the final jobs, and the catalogs it was changed
// from are unchanged.
func TestCatalogWithJobMatchesRebuild(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ds := make([]string, 300)
	var datasets []backends.Dataset
	for i := range ds {
		ds[i] = fmt.Sprintf("d%d", i)
		datasets = append(datasets, backends.Dataset{ID: ds[i]})
	}
	cat := backends.NewCatalog(datasets, nil)
	jobs := map[string]backends.Job{}
	var snapshots []*backends.Catalog
	var frozen []map[string]backends.Job
	for step := range 3000 {
		id := fmt.Sprintf("j%d", rng.IntN(400))
		var inputs []string
		for range rng.IntN(4) {
			if in := ds[rng.IntN(len(ds))]; !slices.Contains(inputs, in) {
				inputs = append(inputs, in)
			}
		}
		j := backends.Job{ID: id, Inputs: inputs, Output: ds[rng.IntN(len(ds))]}
		if p := cat.Producer(j.Output); p != "" && p != id {
			continue // one producer per dataset, as ValidateJob keeps it
		}
		cat = cat.WithJob(j)
		jobs[id] = j
		if step%500 == 0 {
			snapshots = append(snapshots, cat)
			frozen = append(frozen, maps(jobs))
		}
	}
	all := make([]backends.Job, 0, len(jobs))
	for _, j := range jobs {
		all = append(all, j)
	}
	requireSameIndex(t, backends.NewCatalog(datasets, all), cat, ds)
	for i, snap := range snapshots {
		require.Equal(t, len(frozen[i]), snap.Jobs.Len())
		for id, j := range frozen[i] {
			got, ok := snap.Jobs.Lookup(id)
			require.True(t, ok)
			require.Equal(t, j, got, "snapshot %d, job %s", i, id)
		}
	}
}

func maps(m map[string]backends.Job) map[string]backends.Job {
	out := make(map[string]backends.Job, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func requireSameIndex(t *testing.T, want, got *backends.Catalog, datasets []string) {
	t.Helper()
	require.Equal(t, want.Jobs.Keys(), got.Jobs.Keys())
	require.Equal(t, want.Datasets.Keys(), got.Datasets.Keys())
	for _, d := range datasets {
		require.Equal(t, want.Producer(d), got.Producer(d), "producer of %s", d)
		require.Equal(t, len(want.Consumers(d)), len(got.Consumers(d)), "consumers of %s", d)
		if len(want.Consumers(d)) > 0 {
			require.Equal(t, want.Consumers(d), got.Consumers(d), "consumers of %s", d)
		}
		require.Equal(t, want.Downstream(d), got.Downstream(d))
	}
}

// TestCatalogMapCollisions: many keys (so many shared hash prefixes) all
// found, with their latest values, and All visits each once.
func TestCatalogMapCollisions(t *testing.T) {
	c := backends.NewCatalog(nil, nil)
	for i := range 20000 {
		c = c.WithDataset(backends.Dataset{ID: fmt.Sprint(i), Description: "first"})
	}
	for i := 0; i < 20000; i += 3 {
		c = c.WithDataset(backends.Dataset{ID: fmt.Sprint(i), Description: "second"})
	}
	require.Equal(t, 20000, c.Datasets.Len())
	seen := 0
	for id, d := range c.Datasets.All() {
		seen++
		got, err := c.Dataset(id)
		require.NoError(t, err)
		require.Equal(t, d, got)
	}
	require.Equal(t, 20000, seen)
	for i := range 20000 {
		want := "first"
		if i%3 == 0 {
			want = "second"
		}
		require.Equal(t, want, c.Datasets.Get(fmt.Sprint(i)).Description)
	}
	_, ok := c.Datasets.Lookup("20000")
	require.False(t, ok)
}

// TestCatalogWithoutDataset: a catalog with datasets removed one by one
// holds exactly the others, in any order of removal, and the catalogs it
// was changed from are unchanged.
func TestCatalogWithoutDataset(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var ds []backends.Dataset
	want := map[string]bool{}
	for i := range 2000 {
		id := fmt.Sprintf("d%d", i)
		ds = append(ds, backends.Dataset{ID: id})
		want[id] = true
	}
	cat := backends.NewCatalog(ds, nil)
	first := cat
	for _, i := range rng.Perm(len(ds))[:1500] {
		id := ds[i].ID
		cat = cat.WithoutDataset(id)
		delete(want, id)
		_, err := cat.Dataset(id)
		require.Error(t, err, id)
		cat = cat.WithoutDataset(id) // again: nothing to remove
	}
	require.Equal(t, len(want), cat.Datasets.Len())
	for id := range want {
		_, err := cat.Dataset(id)
		require.NoError(t, err, id)
	}
	keys := cat.Datasets.Keys()
	require.Len(t, keys, len(want))
	require.Equal(t, 2000, first.Datasets.Len(), "the catalog changed from is unchanged")
	require.Len(t, first.Datasets.Keys(), 2000)
}
