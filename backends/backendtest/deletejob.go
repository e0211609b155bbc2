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

// testDeleteJobTakeOver: a job of another id declared for the output of a
// deleted job takes its chunks over: READY ones are not computed again,
// new and resubmitted ones are claimed with greater fences, consumers go
// on reading them, a delete of the new job while it holds a claim is
// LOCKED, and a third job takes them over again after the second is
// deleted; fences never repeat.
func (s *suite) testDeleteJobTakeOver(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	fences := map[string]int64{} // the last fence of each chunk of a
	for _, id := range []string{"1", "2"} {
		c := b.claim("ja", id)
		fences[id] = c.Fence
		b.complete(c)
	}
	require.Equal(t, []string{"1", "2"}, b.drain("jb"), "the consumer reads both")
	require.NoError(t, b.s.DeleteJob(b.ctx, "ja"))

	b.job("jz", "a", "src")
	require.Empty(t, b.drain("jz"), "READY chunks are not computed again")
	require.Empty(t, b.drain("jb"), "the consumer is unaffected")
	require.Equal(t, ready, b.status("a", "1"))
	b.publish("src", "3")
	c, _ := b.next("jz")
	require.NotNil(t, c)
	require.Equal(t, "3", c.DataID, "new chunks are computed")
	err := b.s.DeleteJob(b.ctx, "jz")
	requireCode(t, err, backends.CodeLocked, "jz holds a claim")
	b.complete(c)
	require.Equal(t, []string{"3"}, b.drain("jb"), "the consumer reads what the new job made")
	_, err = b.s.Resubmit(b.ctx, "a", "2", false)
	require.NoError(t, err)
	c, _ = b.next("jz")
	require.NotNil(t, c)
	require.Equal(t, "2", c.DataID)
	require.Greater(t, c.Fence, fences["2"], "fences never repeat across a delete and a takeover")
	fences["2"] = c.Fence
	b.complete(c)
	require.Equal(t, ready, b.status("a", "2"))

	require.NoError(t, b.s.DeleteJob(b.ctx, "jz"))
	b.job("jy", "a", "src")
	require.Empty(t, b.drain("jy"), "a second takeover does not compute READY chunks again")
	_, err = b.s.Resubmit(b.ctx, "a", "1", false)
	require.NoError(t, err)
	c, _ = b.next("jy")
	require.NotNil(t, c)
	require.Equal(t, "1", c.DataID)
	require.Greater(t, c.Fence, fences["1"], "fences never repeat across a second takeover")
	b.complete(c)
	for _, id := range []string{"1", "2", "3"} {
		require.Equal(t, ready, b.status("a", id))
	}
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

// testDeleteJobClearsItsBackfillRecord: a job with mappings owes its
// outputs a backfill, kept in a record; deleting the job empties the
// record (a job declared again under the id owes one of its own), on every
// backend, and an emptied record is empty bytes, never nil (PostgreSQL
// keeps a record's value NOT NULL, and store copy carries it).
func (s *suite) testDeleteJobClearsItsBackfillRecord(t *testing.T) {
	b := s.setup(t)
	for _, id := range []string{"wa", "wb"} {
		b.definedDataset(id, dailyDef)
	}
	_, err := b.s.UpsertJob(b.ctx, windowJob("wj", "wb", "wa", -1))
	require.NoError(t, err)
	before, err := b.s.Record(b.ctx, "backfill/wj")
	require.NoError(t, err)
	require.Positive(t, before.Version, "a job with mappings has a backfill record")
	require.NotEmpty(t, before.Value)
	require.NoError(t, b.s.DeleteJob(b.ctx, "wj"))
	after, err := b.s.Record(b.ctx, "backfill/wj")
	require.NoError(t, err)
	require.Empty(t, after.Value, "the deleted job's backfill record is emptied")
	require.NotEqual(t, before.Version, after.Version)
}
