package backendtest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/storecopy"
)

// RunCopy checks `chunklock store copy` (package storecopy) between two
// backends: a store seeded through the engine on a backend of newFrom
// (catalog, a credential, a pool, rows of every status, a live claim, a
// cascade, a resource lock, a record pointing into the event log) is
// copied into an empty backend of newTo, which the copy verifies, and from
// there into a second backend of newFrom. A copy into a store that is not
// empty is refused. Then the same operations on all three (the live
// claim's heartbeat and completion, findNext until nothing is left, a
// conflicting resource lock) answer alike, and no fence repeats one issued
// before the copy. The backends must implement backends.Dumper; the suite
// closes them.
func RunCopy(t *testing.T, newFrom, newTo func(t *testing.T) backends.Backend) {
	ctx := context.Background()
	clock := backends.NewFakeClock(epoch)
	open := copyOpener(t, clock)
	srcBe := newFrom(t)
	src := open(srcBe)
	seed := seedCopy(t, src, clock)

	toBe, backBe := newTo(t), newFrom(t)
	to, back := open(toBe), open(backBe)
	remap := func(key string, v []byte, seq func(int64) int64) []byte {
		if key != "test/cursor" {
			return v
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		require.NoError(t, err)
		return []byte(strconv.FormatInt(seq(n), 10))
	}
	for _, hop := range []struct{ from, to backends.Backend }{{srcBe, toBe}, {toBe, backBe}} {
		copied := time.Now().Truncate(time.Millisecond) // (stores keep microseconds)
		rep, err := storecopy.Copy(ctx, dumper(t, hop.from), dumper(t, hop.to), storecopy.Options{Batch: 7, RemapRecord: remap})
		require.NoError(t, err)
		// The datasets copied keep their creation times; their holds may
		// not have been checked where they come from: the target's mark
		// is the time of the copy.
		if m, ok := hop.to.(backends.HoldsMarker); ok {
			since, err := m.HoldsCheckedSince(ctx)
			require.NoError(t, err)
			require.False(t, since.Before(copied), "holds checked since %s, copied at %s", since, copied)
		}
		counts := map[backends.DumpKind]int64{}
		for _, k := range rep {
			counts[k.Kind] = k.Target
		}
		require.Equal(t, int64(3), counts[backends.DumpDatasets])
		require.Equal(t, int64(2), counts[backends.DumpJobs])
		require.Equal(t, int64(1), counts[backends.DumpCredentials])
		require.Equal(t, int64(1), counts[backends.DumpLocks])
		require.Greater(t, counts[backends.DumpEvents], int64(10))
		require.Greater(t, counts[backends.DumpSlots], int64(0))
		_, err = storecopy.Copy(ctx, dumper(t, hop.from), dumper(t, hop.to), storecopy.Options{})
		require.ErrorIs(t, err, storecopy.ErrNotEmpty)
	}

	want := behaveAfterCopy(t, src, clock, seed)
	for name, s := range map[string]backends.Store{"copy": to, "copy of the copy": back} {
		require.Equal(t, want, behaveAfterCopy(t, s, clock, seed), name)
	}
}

// copyOpener makes the engine over a backend of a copy test, on clock,
// closed when the test ends.
func copyOpener(t *testing.T, clock backends.Clock) func(backends.Backend) backends.Store {
	return func(be backends.Backend) backends.Store {
		s := engine.New(be, engine.WithClock(clock))
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func dumper(t *testing.T, be backends.Backend) backends.Dumper {
	d, ok := be.(backends.Dumper)
	require.True(t, ok, "%T does not implement backends.Dumper", be)
	return d
}

// copySeed is what seedCopy left that the checks after the copy need.
type copySeed struct {
	live   string // token of the live claim
	fences map[string]int64
	cursor backends.Event // the event test/cursor names
}

func seedCopy(t *testing.T, s backends.Store, clock *backends.FakeClock) copySeed {
	ctx := context.Background()
	// The pipeline owning an object (apply --prune) is copied with it:
	// "out" was created otherwise.
	owner := map[string]string{"src": "etl", "mid": "etl"}
	for _, id := range []string{"src", "mid", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Description: "dataset " + id, URL: "s3://lake", Location: id + "/{dataid}", Pipeline: owner[id]})
		require.NoError(t, err)
	}
	_, err := s.UpsertPool(ctx, backends.Pool{ID: "p", Slots: 3, Pipeline: "etl"})
	require.NoError(t, err)
	key := backends.JobKey{Kind: "age", Public: "age1publicpart"}
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j1", Inputs: []string{"src"}, Output: "mid", Pool: "p", Key: key,
		Env: []backends.EnvVar{{Name: "MODE", Value: "full"}}, Pipeline: "etl"})
	require.NoError(t, err)
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j2", Inputs: []string{"mid"}, Output: "out", MaxConcurrent: 1, Key: key})
	require.NoError(t, err)
	require.NoError(t, s.SetCredential(ctx, backends.Credential{Job: "j1", Dataset: "src", KeyKind: "age", Ciphertext: []byte("ciphertext\x00\xff"), UpdatedAt: clock.Now()}))
	for i := 1; i <= 6; i++ {
		_, err := s.Publish(ctx, "src", strconv.Itoa(i))
		require.NoError(t, err)
	}
	seed := copySeed{fences: map[string]int64{}}
	next := func(job string) *backends.Claim {
		c, err := s.FindNext(ctx, job, "seeder")
		require.NoError(t, err)
		require.NotNil(t, c, job)
		seed.fences[c.Output+"/"+c.DataID] = max(seed.fences[c.Output+"/"+c.DataID], c.Fence)
		return c
	}
	require.NoError(t, s.Complete(ctx, next("j1").Token)) // mid/1 READY
	require.NoError(t, s.Fail(ctx, next("j1").Token, "bad"))
	c := next("j1") // mid/2 again, attempt 2
	require.NoError(t, s.Complete(ctx, c.Token))
	require.NoError(t, s.Complete(ctx, next("j2").Token)) // out/1
	seed.live = next("j1").Token                          // mid/3, live
	_, err = s.Resubmit(ctx, "src", "1", true)            // mid/1, out/1 RESUBMIT
	require.NoError(t, err)
	_, err = s.LockResource(ctx, "etl", "s3://lake/src", backends.LockWrite, time.Hour)
	require.NoError(t, err)
	page, err := s.Events(ctx, backends.EventFilter{First: 1000})
	require.NoError(t, err)
	seed.cursor = page.Events[len(page.Events)/2]
	_, ok, err := s.SwapRecord(ctx, "test/cursor", []byte(strconv.FormatInt(seed.cursor.Seq, 10)), 0)
	require.NoError(t, err)
	require.True(t, ok)
	return seed
}

// behaveAfterCopy runs the same operations on a store and returns what
// they answered, fences aside (checked against the seed's).
func behaveAfterCopy(t *testing.T, s backends.Store, clock *backends.FakeClock, seed copySeed) []string {
	ctx := context.Background()
	var out []string
	note := func(f string, args ...any) { out = append(out, fmt.Sprintf(f, args...)) }

	r, err := s.Record(ctx, "test/cursor")
	require.NoError(t, err)
	seq, err := strconv.ParseInt(string(r.Value), 10, 64)
	require.NoError(t, err)
	page, err := s.Events(ctx, backends.EventFilter{After: seq - 1, First: 1})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	e := page.Events[0]
	require.Equal(t, seed.cursor.Seq == 0, seq == 0)
	require.Equal(t, []any{seed.cursor.Dataset, seed.cursor.DataID, seed.cursor.To, seed.cursor.Reason},
		[]any{e.Dataset, e.DataID, e.To, e.Reason}, "the cursor names the same event")

	owners := map[string]string{}
	ds, err := s.Datasets(ctx)
	require.NoError(t, err)
	for _, d := range ds {
		owners["dataset "+d.ID] = d.Pipeline
	}
	jobs, err := s.Jobs(ctx)
	require.NoError(t, err)
	for _, j := range jobs {
		owners["job "+j.ID] = j.Pipeline
	}
	pools, err := s.Pools(ctx)
	require.NoError(t, err)
	for _, p := range pools {
		owners["pool "+p.ID] = p.Pipeline
	}
	require.Equal(t, map[string]string{"dataset src": "etl", "dataset mid": "etl", "dataset out": "",
		"job j1": "etl", "job j2": "", "pool p": "etl"}, owners, "each object keeps the pipeline that created it")
	for _, d := range []string{"src", "mid", "out"} {
		n, err := s.ChunkCounts(ctx, d)
		require.NoError(t, err)
		note("counts %s: %+v", d, n) // counts are kept, not copied: the target's must agree
	}
	_, err = s.Heartbeat(ctx, seed.live)
	require.NoError(t, err, "the live claim is live")
	require.NoError(t, s.Complete(ctx, seed.live))
	_, err = s.LockResource(ctx, "other", "s3://lake/src", backends.LockRead, time.Hour)
	note("lock: %v", backends.CodeOf(err))
	for _, job := range []string{"j1", "j2", "j1", "j2"} {
		for {
			c, err := s.FindNext(ctx, job, "after")
			require.NoError(t, err)
			if c == nil {
				break
			}
			require.Greater(t, c.Fence, seed.fences[c.Output+"/"+c.DataID], "fences never repeat")
			note("%s claims %s attempt %d", job, c.DataID, c.Attempt)
			require.NoError(t, s.Complete(ctx, c.Token))
		}
	}
	for _, ds := range []string{"src", "mid", "out"} {
		for i := 1; i <= 6; i++ {
			ch, err := s.Chunk(ctx, ds, strconv.Itoa(i))
			require.NoError(t, err)
			note("%s/%d %s", ds, i, ch.Output.Status)
		}
	}
	creds, err := s.Credentials(ctx, "j1")
	require.NoError(t, err)
	require.Len(t, creds, 1)
	note("credential %q", creds[0].Ciphertext)
	return out
}

// RunCopyFenceFloor checks guarantee 4 across a store copy for chunks the
// source no longer names: a dataset whose chunk was fenced, deleted with
// its chunks, its events pruned by retention, then copied from newFrom
// into newTo (and on into another newTo) and declared again: the chunk's
// next fence exceeds every fence issued before the copy.
func RunCopyFenceFloor(t *testing.T, newFrom, newTo func(t *testing.T) backends.Backend) {
	ctx := context.Background()
	clock := backends.NewFakeClock(epoch)
	open := copyOpener(t, clock)
	declare := func(s backends.Store) {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "out", Location: "/out/{dataid}"})
		require.NoError(t, err)
		_, err = s.UpsertJob(ctx, backends.Job{ID: "make", Output: "out"})
		require.NoError(t, err)
	}
	srcBe := newFrom(t)
	src := open(srcBe)
	declare(src)
	var issued int64
	for range 3 {
		c, err := src.Claim(ctx, "make", "1", "x")
		require.NoError(t, err)
		issued = max(issued, c.Fence)
		require.NoError(t, src.Release(ctx, c.Token))
	}
	require.NoError(t, src.DeleteJob(ctx, "make"))
	require.NoError(t, src.DeleteDataset(ctx, "out", true))
	clock.Advance(48 * time.Hour)
	pruner, ok := src.(backends.EventPruner)
	require.True(t, ok)
	for after := int64(0); ; {
		res, err := pruner.PruneEvents(ctx, backends.PrunePolicy{Events: time.Hour, After: after})
		require.NoError(t, err)
		if after = res.Next; after == 0 {
			break
		}
	}
	evs, err := src.Events(ctx, backends.EventFilter{Dataset: "out", First: 10})
	require.NoError(t, err)
	require.Empty(t, evs.Events, "the chunk's events are pruned: nothing names it")

	toBe, nextBe := newTo(t), newTo(t)
	for _, hop := range []struct{ from, to backends.Backend }{{srcBe, toBe}, {toBe, nextBe}} {
		_, err := storecopy.Copy(ctx, dumper(t, hop.from), dumper(t, hop.to), storecopy.Options{})
		require.NoError(t, err)
	}
	for name, be := range map[string]backends.Backend{"copy": toBe, "copy of the copy": nextBe} {
		s := open(be)
		declare(s)
		c, err := s.Claim(ctx, "make", "1", "x")
		require.NoError(t, err, name)
		require.Greater(t, c.Fence, issued, "%s: a fence issued before the copy is issued again", name)
	}
}
