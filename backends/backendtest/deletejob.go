package backendtest

import (
	"strconv"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/stretchr/testify/require"
)

// testDeleteJob: a job with a live claim is not deleted (LOCKED, the claim
// its blocker); once the claim ends it is, with its credentials and
// reads, for every replica at once; the chunks it produced stay READY and
// readable by consumers, and its events stay.
func (s *suite) testDeleteJob(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3")
	b.run("ja", "1")
	b.run("ja", "2")
	require.NoError(t, b.s.SetCredential(b.ctx, backends.Credential{Job: "ja", Dataset: "src", KeyKind: "age", Ciphertext: []byte("sealed")}))
	live := b.claim("ja", "3")
	other := engine.New(b.be, engine.WithClock(b.clock))
	_, err := other.Job(b.ctx, "ja")
	require.NoError(t, err)

	err = b.s.DeleteJob(b.ctx, "ja")
	requireLocked(t, err, "3", bk{backends.BlockerOutputLocked, "a", "ja", backends.StatusRunning})
	require.Contains(t, err.Error(), "1 live claim")
	_, err = b.s.Job(b.ctx, "ja")
	require.NoError(t, err, "a refused deletion deletes nothing")
	b.complete(live)

	require.NoError(t, b.s.DeleteJob(b.ctx, "ja"))
	for _, st := range []backends.Store{b.s, other} {
		_, err = st.Job(b.ctx, "ja")
		requireCode(t, err, backends.CodeNotFound)
		_, err = st.FindNext(b.ctx, "ja", executor)
		requireCode(t, err, backends.CodeNotFound, "no replica serves a deleted job")
		_, err = st.Claim(b.ctx, "ja", "1", executor)
		requireCode(t, err, backends.CodeNotFound)
		for _, id := range []string{"1", "2", "3"} {
			c, err := st.Chunk(b.ctx, "a", id)
			require.NoError(t, err)
			require.Equal(t, ready, backends.StatusOf(c.Output), "a/%s stays READY", id)
		}
	}
	creds, err := b.s.Credentials(b.ctx, "ja")
	require.NoError(t, err)
	require.Empty(t, creds, "its credentials are deleted")
	require.Empty(t, listRows(t, b, backends.ChunkFilter{Dataset: "src", Job: "ja", First: backends.MaxPageSize}), "its reads are deleted")
	d, err := b.s.Dataset(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "ja", d.OutputKey, "its output records the key of its chunks")
	n, err := b.s.ChunkCounts(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, backends.ChunkCount{Dataset: "a", Total: 3, Ready: 3}, n, "its chunks are counted under the key")
	b.datasets("a") // an upsert of the dataset keeps the key
	d, err = b.s.Dataset(b.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "ja", d.OutputKey, "an upsert of the dataset keeps the key of its chunks")
	require.Equal(t, ready, b.status("a", "1"))
	require.NotEmpty(t, b.events(backends.EventFilter{Job: "ja"}), "its events stay")

	require.Equal(t, []string{"1", "2", "3"}, b.drain("jb"), "consumers read what it produced")
	requireCode(t, b.s.DeleteJob(b.ctx, "ja"), backends.CodeNotFound)
	requireCode(t, b.s.DeleteJob(b.ctx, "Not a slug"), backends.CodeInvalidArgument)
	err = b.s.DeleteDataset(b.ctx, "a", true)
	requireCode(t, err, backends.CodeLocked, "jb still reads it")
}

// testDeleteJobTakeOver: a job declared again for the output of a deleted
// one, under its id, takes its chunks over: READY ones are not computed
// again, new and resubmitted ones are, with fences greater than any
// before; another id cannot take them (INVALID_ARGUMENT, saying which).
func (s *suite) testDeleteJobTakeOver(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	b.run("ja", "1")
	c := b.claim("ja", "2")
	first := c.Fence
	b.complete(c)
	require.NoError(t, b.s.DeleteJob(b.ctx, "ja"))

	_, err := b.s.UpsertJob(b.ctx, backends.Job{ID: "jz", Inputs: []string{"src"}, Output: "a"})
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), `"ja"`)

	b.job("ja", "a", "src")
	require.Empty(t, b.drain("ja"), "READY chunks are not computed again")
	b.publish("src", "3")
	require.Equal(t, []string{"3"}, b.drain("ja"), "new ones are")
	_, err = b.s.Resubmit(b.ctx, "a", "2", false)
	require.NoError(t, err)
	c, _ = b.next("ja")
	require.NotNil(t, c)
	require.Equal(t, "2", c.DataID)
	require.Greater(t, c.Fence, first, "fences never repeat across a delete and a re-creation")
	b.complete(c)
	require.Equal(t, ready, b.status("a", "2"))
}

// testDeleteJobManyReads: a job whose reads are more than one transaction
// of any backend holds (etcd: --max-txn-ops) loses them all with it, and a
// job declared again under its id finds no read lock of the old one.
func (s *suite) testDeleteJobManyReads(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	const n = 300
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(i + 1)
	}
	b.publish("src", ids...)
	require.Len(t, b.drain("ja"), n)
	require.Len(t, listRows(t, b, backends.ChunkFilter{Dataset: "src", Job: "ja", First: backends.MaxPageSize}), n)
	require.NoError(t, b.s.DeleteJob(b.ctx, "ja"))
	require.Empty(t, listRows(t, b, backends.ChunkFilter{Dataset: "src", Job: "ja", First: backends.MaxPageSize}), "every read is deleted")
	b.datasets("c")
	b.job("ja", "c", "src")
	require.Len(t, b.drain("ja"), n, "a job declared again under the id, for another output, holds no read lock of the old one")
}

// testDeleteJobTakeOverQueue: a job without inputs declared again under
// the id of a deleted one finds the RESUBMIT and FAILED chunks it takes
// over (deleting the job dropped its queue, and nothing publishes to a job
// without inputs), with greater fences; READY and HOLD ones stay as they
// are.
func (s *suite) testDeleteJobTakeOverQueue(t *testing.T) {
	b := s.setup(t)
	b.datasets("gen")
	b.upsertJob(backends.Job{ID: "jg", Output: "gen", MaxAttempts: 5})
	fences := map[string]int64{}
	for _, id := range []string{"1", "2", "3", "4"} {
		c := b.claim("jg", id)
		fences[id] = c.Fence
		switch id {
		case "2":
			b.fail(c, "first try")
		default:
			b.complete(c)
		}
	}
	_, err := b.s.Resubmit(b.ctx, "gen", "1", false)
	require.NoError(t, err)
	_, err = b.s.Hold(b.ctx, "gen", "4", "by hand")
	require.NoError(t, err)
	require.NoError(t, b.s.DeleteJob(b.ctx, "jg"))
	b.upsertJob(backends.Job{ID: "jg", Output: "gen", MaxAttempts: 5})

	var got []string
	for range 10 {
		c, id := b.next("jg")
		if c == nil {
			break
		}
		require.Greater(t, c.Fence, fences[id], "fences never repeat across a delete and a re-creation")
		got = append(got, id)
		b.complete(c)
	}
	require.ElementsMatch(t, []string{"1", "2"}, got, "the RESUBMIT and FAILED chunks, each once")
	for _, id := range []string{"1", "2", "3"} {
		require.Equal(t, ready, b.status("gen", id))
	}
	require.Equal(t, backends.StatusHold, b.status("gen", "4"))
}
