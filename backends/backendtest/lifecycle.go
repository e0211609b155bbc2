package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/stretchr/testify/require"
)

// The catalog lifecycle (SPEC §11).
var lifecycleTests = []testCase{
	{"PauseResume", (*suite).testPauseResume},
	{"PauseOtherReplica", (*suite).testPauseOtherReplica},
	{"DeleteDatasetRefused", (*suite).testDeleteDatasetRefused},
	{"DeleteDataset", (*suite).testDeleteDataset},
	{"DeleteDatasetFences", (*suite).testDeleteDatasetFences},
	{"DeletePool", (*suite).testDeletePool},
	{"DeleteJob", (*suite).testDeleteJob},
	{"DeleteJobClearsItsBackfillRecord", (*suite).testDeleteJobClearsItsBackfillRecord},
	{"DeleteJobTakeOver", (*suite).testDeleteJobTakeOver},
	{"DeleteJobTakeOverQueue", (*suite).testDeleteJobTakeOverQueue},
	{"DeleteJobManyReads", (*suite).testDeleteJobManyReads},
	{"PipelineOwner", (*suite).testPipelineOwner},
}

// testPauseResume: a paused job claims nothing, its live claim runs to its
// end, and resumed it claims again; pausing keeps the rest of the job.
func (s *suite) testPauseResume(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3")
	before := b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", MaxAttempts: 5,
		Env: []backends.EnvVar{{Name: "MODE", Value: "full"}}})
	live := b.claim("ja", "1")

	got, err := b.s.PauseJob(b.ctx, "ja")
	require.NoError(t, err)
	require.True(t, got.Paused)
	require.Equal(t, before.Inputs, got.Inputs)
	require.Equal(t, before.Env, got.Env)
	require.Equal(t, 5, got.MaxAttempts)
	stored, err := b.s.Job(b.ctx, "ja")
	require.NoError(t, err)
	require.True(t, stored.Paused)

	_, d := b.next("ja")
	require.Empty(t, d, "a paused job claims nothing")
	_, err = b.s.Claim(b.ctx, "ja", "2", executor)
	requireLocked(t, err, "2", bk{backends.BlockerPaused, "a", "ja", none})
	_, err = b.s.Heartbeat(b.ctx, live.Token)
	require.NoError(t, err, "a live claim runs on while its job is paused")
	b.complete(live)
	require.Equal(t, ready, b.status("a", "1"))

	_, err = b.s.PauseJob(b.ctx, "ja")
	require.NoError(t, err, "pausing a paused job changes nothing")
	got, err = b.s.ResumeJob(b.ctx, "ja")
	require.NoError(t, err)
	require.False(t, got.Paused)
	require.Equal(t, []string{"2", "3"}, b.drain("ja"), "resumed, the job claims again")

	_, err = b.s.PauseJob(b.ctx, "nope")
	requireCode(t, err, backends.CodeNotFound)
	_, err = b.s.ResumeJob(b.ctx, "nope")
	requireCode(t, err, backends.CodeNotFound)
	_, err = b.s.PauseJob(b.ctx, "Not a slug")
	requireCode(t, err, backends.CodeInvalidArgument)
}

// testPauseOtherReplica: a second engine on the same store (another
// server replica), its catalog cached, stops claiming for a job paused
// through the first at once, and claims again once it is resumed, without
// a restart.
func (s *suite) testPauseOtherReplica(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3", "4")
	b.job("ja", "a", "src")
	other := engine.New(b.be, engine.WithClock(b.clock))
	c, err := other.FindNext(b.ctx, "ja", executor)
	require.NoError(t, err)
	require.NotNil(t, c, "the other replica serves the job (and caches the catalog)")
	require.NoError(t, other.Complete(b.ctx, c.Token))

	_, err = b.s.PauseJob(b.ctx, "ja")
	require.NoError(t, err)
	c, err = other.FindNext(b.ctx, "ja", executor)
	require.NoError(t, err)
	require.Nil(t, c, "the other replica grants no claim once the pause has committed")
	_, err = other.Claim(b.ctx, "ja", "3", executor)
	requireLocked(t, err, "3", bk{backends.BlockerPaused, "a", "ja", none})

	_, err = b.s.ResumeJob(b.ctx, "ja")
	require.NoError(t, err)
	c, err = other.FindNext(b.ctx, "ja", executor)
	require.NoError(t, err)
	require.NotNil(t, c, "the other replica claims again once the job is resumed")
	require.Equal(t, "2", c.DataID)
}

// testDeleteDatasetRefused: a dataset a job reads or writes is not deleted
// (LOCKED, naming the jobs), nor one with chunks unless deleteChunks
// (INVALID_ARGUMENT, naming how many); a refusal changes nothing.
func (s *suite) testDeleteDatasetRefused(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3")
	b.job("ja", "a", "src")
	b.job("jb", "b", "a")

	err := b.s.DeleteDataset(b.ctx, "a", true)
	requireCode(t, err, backends.CodeLocked)
	require.Contains(t, err.Error(), `job "ja" writes it`)
	require.Contains(t, err.Error(), `job "jb" reads it`)
	err = b.s.DeleteDataset(b.ctx, "src", true)
	requireCode(t, err, backends.CodeLocked)
	require.Contains(t, err.Error(), `job "ja" reads it`)

	b.datasets("loose")
	b.publish("loose", "1", "2", "3")
	err = b.s.DeleteDataset(b.ctx, "loose", false)
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), "3 chunk(s)")
	require.Equal(t, ready, b.status("loose", "3"), "a refused deletion deletes nothing")
	_, err = b.s.Dataset(b.ctx, "loose")
	require.NoError(t, err)

	requireCode(t, b.s.DeleteDataset(b.ctx, "nope", true), backends.CodeNotFound)
	requireCode(t, b.s.DeleteDataset(b.ctx, "Not a slug", true), backends.CodeInvalidArgument)
}

// testDeleteDataset: a deleted dataset is gone from the catalog, with its
// rows, on this engine and on another replica at once; its events stay;
// declared again, it starts empty.
func (s *suite) testDeleteDataset(t *testing.T) {
	b := s.setup(t)
	b.datasets("empty", "loose", "kept")
	b.publish("loose", "1", "2")
	b.publish("kept", "1")
	other := engine.New(b.be, engine.WithClock(b.clock))
	_, err := other.Dataset(b.ctx, "loose") // the other replica caches the catalog
	require.NoError(t, err)

	require.NoError(t, b.s.DeleteDataset(b.ctx, "empty", false), "a dataset without chunks needs no deleteChunks")
	require.NoError(t, b.s.DeleteDataset(b.ctx, "loose", true))
	for _, st := range []backends.Store{b.s, other} {
		_, err = st.Dataset(b.ctx, "loose")
		requireCode(t, err, backends.CodeNotFound)
		_, err = st.Publish(b.ctx, "loose", "3")
		requireCode(t, err, backends.CodeNotFound)
		ds, err := st.Datasets(b.ctx)
		require.NoError(t, err)
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
		require.Equal(t, []string{"kept"}, ids)
	}
	require.Empty(t, b.allRowsOf("loose"), "its rows are deleted")
	require.Equal(t, ready, b.status("kept", "1"), "other datasets keep theirs")
	evs := b.events(backends.EventFilter{Dataset: "loose"})
	require.Len(t, evs, 2, "its events stay")

	b.datasets("loose")
	require.Empty(t, b.allRowsOf("loose"), "declared again, it starts empty")
	n, err := b.s.ChunkCounts(b.ctx, "loose")
	require.NoError(t, err)
	require.Zero(t, n.Total, "declared again, it counts no chunk")
	b.publish("loose", "1")
	require.Len(t, b.allRowsOf("loose"), 1)
	n, err = b.s.ChunkCounts(b.ctx, "loose")
	require.NoError(t, err)
	require.Equal(t, 1, n.Total, "the counts follow the deletion: %+v", n)
	require.Equal(t, 1, n.Ready)
}

// testDeleteDatasetFences: fencing tokens never repeat across a deletion
// and a re-creation of a dataset (SPEC §11, guarantee 4).
func (s *suite) testDeleteDatasetFences(t *testing.T) {
	b := s.setup(t)
	b.datasets("g", "h")
	b.job("gen", "g")
	c1 := b.claim("gen", "1")
	b.complete(c1)
	b.job("gen", "h") // g has no producer now
	require.NoError(t, b.s.DeleteDataset(b.ctx, "g", true))
	b.datasets("g")
	b.job("gen", "g")
	c2 := b.claim("gen", "1")
	require.Greater(t, c2.Fence, c1.Fence, "the re-created chunk's claim has a greater fence")
	require.NotEqual(t, c1.Token, c2.Token)
	requireCode(t, b.s.Complete(b.ctx, c1.Token), backends.CodeStaleClaim, "the old token is stale")
	b.complete(c2)
	require.Equal(t, ready, b.status("g", "1"))
}

// testDeletePool: a pool a job names is not deleted (LOCKED, naming the
// job); once none does, it is gone for every replica, a job can no longer
// name it, and it can be defined again.
func (s *suite) testDeletePool(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	_, err := b.s.UpsertPool(b.ctx, backends.Pool{ID: "p", Slots: 1})
	require.NoError(t, err)
	_, err = b.s.UpsertPool(b.ctx, backends.Pool{ID: "q", Slots: 2})
	require.NoError(t, err)
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", Pool: "p"})
	other := engine.New(b.be, engine.WithClock(b.clock))
	_, err = other.Job(b.ctx, "ja")
	require.NoError(t, err)

	err = b.s.DeletePool(b.ctx, "p")
	requireCode(t, err, backends.CodeLocked)
	require.Contains(t, err.Error(), `"ja"`)
	requireCode(t, b.s.DeletePool(b.ctx, "nope"), backends.CodeNotFound)

	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a"})
	require.NoError(t, b.s.DeletePool(b.ctx, "p"))
	for _, st := range []backends.Store{b.s, other} {
		_, err = st.Pool(b.ctx, "p")
		requireCode(t, err, backends.CodeNotFound)
		ps, err := st.Pools(b.ctx)
		require.NoError(t, err)
		require.Len(t, ps, 1)
		require.Equal(t, "q", ps[0].ID)
		_, err = st.UpsertJob(b.ctx, backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", Pool: "p"})
		requireCode(t, err, backends.CodeNotFound, "a job cannot name a deleted pool")
	}
	require.Equal(t, []string{"1", "2"}, b.drain("ja"), "the job that named it claims as before")

	_, err = b.s.UpsertPool(b.ctx, backends.Pool{ID: "p", Slots: 3})
	require.NoError(t, err)
	b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", Pool: "p"})
}
