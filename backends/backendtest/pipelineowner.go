package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/stretchr/testify/require"
)

// testPipelineOwner: a dataset, job or pool records the pipeline named by
// the upsert that created it (what `chunklock apply --prune` may delete);
// later upserts keep it, whether they name it or none; one naming another
// pipeline is refused and changes nothing; an object created without a
// pipeline never gets one; a deleted object created again takes the
// pipeline of its new creation; every replica sees the owner.
func (s *suite) testPipelineOwner(t *testing.T) {
	b := s.setup(t)
	other := engine.New(b.be, engine.WithClock(b.clock))
	owners := func(st backends.Store) map[string]string {
		t.Helper()
		out := map[string]string{}
		ds, err := st.Datasets(b.ctx)
		require.NoError(t, err)
		for _, d := range ds {
			out["dataset "+d.ID] = d.Pipeline
		}
		js, err := st.Jobs(b.ctx)
		require.NoError(t, err)
		for _, j := range js {
			out["job "+j.ID] = j.Pipeline
		}
		ps, err := st.Pools(b.ctx)
		require.NoError(t, err)
		for _, p := range ps {
			out["pool "+p.ID] = p.Pipeline
		}
		return out
	}
	ds := func(id, pipeline, desc string) error {
		_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: id, Description: desc, URL: "s3://lake", Location: id + "/{dataid}", Pipeline: pipeline})
		return err
	}
	job := func(id, in, out, pipeline string) error {
		_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: id, Inputs: []string{in}, Output: out, Pool: "p", Pipeline: pipeline})
		return err
	}
	pool := func(id, pipeline string, slots int) error {
		_, err := b.s.UpsertPool(b.ctx, backends.Pool{ID: id, Slots: slots, Pipeline: pipeline})
		return err
	}
	require.NoError(t, ds("src", "", "made otherwise"))
	require.NoError(t, ds("a", "etl", "made by etl"))
	require.NoError(t, pool("p", "etl", 2))
	require.NoError(t, pool("q", "", 1))
	require.NoError(t, job("ja", "src", "a", "etl"))
	want := map[string]string{"dataset src": "", "dataset a": "etl", "job ja": "etl", "pool p": "etl", "pool q": ""}
	require.Equal(t, want, owners(b.s))
	require.Equal(t, want, owners(other), "a second replica sees the owners")

	// Upserts keep the owner, naming it or none; a file naming another
	// pipeline is refused; an object made otherwise is never adopted.
	require.NoError(t, ds("a", "", "changed through the API"))
	require.NoError(t, ds("a", "etl", "changed by etl"))
	require.NoError(t, ds("src", "etl", "declared by etl too"))
	require.NoError(t, job("ja", "src", "a", ""))
	require.NoError(t, pool("p", "", 3))
	require.NoError(t, pool("q", "etl", 1))
	require.Equal(t, want, owners(b.s), "upserts keep the owner; objects made otherwise stay unowned")
	for what, err := range map[string]error{
		"dataset": ds("a", "sales", "changed by sales"),
		"job":     job("ja", "src", "a", "sales"),
		"pool":    pool("p", "sales", 5),
	} {
		requireCode(t, err, backends.CodeInvalidArgument, "a %s of pipeline etl upserted by pipeline sales", what)
		require.Contains(t, err.Error(), `pipeline "etl"`, what)
	}
	d, err := b.s.Dataset(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "changed by etl", d.Description, "a refused upsert changes nothing")
	p, err := b.s.Pool(b.ctx, "p")
	require.NoError(t, err)
	require.Equal(t, 3, p.Slots, "a refused upsert changes nothing")
	requireCode(t, ds("x", "Not a slug", ""), backends.CodeInvalidArgument)
	requireCode(t, job("jx", "src", "a", "-bad"), backends.CodeInvalidArgument)
	requireCode(t, pool("x", "bad/name", 1), backends.CodeInvalidArgument)
	require.Equal(t, want, owners(b.s))

	// Deleted and created again, an object takes its new creator's owner.
	require.NoError(t, b.s.DeleteJob(b.ctx, "ja"))
	require.NoError(t, b.s.DeleteDataset(b.ctx, "a", false))
	require.NoError(t, b.s.DeletePool(b.ctx, "q"))
	require.NoError(t, ds("a", "sales", "made by sales"))
	require.NoError(t, pool("q", "sales", 1))
	require.NoError(t, job("ja", "src", "a", ""))
	want = map[string]string{"dataset src": "", "dataset a": "sales", "job ja": "", "pool p": "etl", "pool q": "sales"}
	require.Equal(t, want, owners(b.s))
	require.Equal(t, want, owners(other), "a second replica sees the new owners")
}
