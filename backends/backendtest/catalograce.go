package backendtest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
)

// The catalog races: concurrent changes that are valid one by one but not
// together. They run on one store (RunConcurrency) and on two stores, as
// two servers, sharing one backend (RunSharedCatalog).

func init() {
	concurrencyTests = append(concurrencyTests,
		testCase{"CatalogCycleRace", func(s *suite, t *testing.T) { b := s.setup(t); catalogCycleRace(t, b.clock, b.s) }},
		testCase{"CatalogFirstUpsertRace", func(s *suite, t *testing.T) { b := s.setup(t); catalogFirstUpsertRace(t, b.clock, b.s) }},
		testCase{"CatalogProducerRace", func(s *suite, t *testing.T) { b := s.setup(t); catalogProducerRace(t, b.s) }},
	)
}

// SharedFactory opens two backends on one new, empty store (or returns one
// backend twice), as two servers sharing it would have; the test makes an
// engine on each and closes them.
type SharedFactory func(t *testing.T) (backends.Backend, backends.Backend)

// RunSharedCatalog runs the catalog races on two stores sharing a backend,
// so that the races are decided by the backend's conditional writes, not
// by one server's ordering of its own changes.
func RunSharedCatalog(t *testing.T, open SharedFactory) {
	setup := func(t *testing.T) (*backends.FakeClock, []backends.Store) {
		clock := backends.NewFakeClock(epoch)
		b1, b2 := open(t)
		one, two := engine.New(b1, engine.WithClock(clock)), engine.New(b2, engine.WithClock(clock))
		t.Cleanup(func() {
			require.NoError(t, one.Close())
			require.NoError(t, two.Close())
		})
		return clock, []backends.Store{one, two}
	}
	t.Run("CatalogCycleRace", func(t *testing.T) {
		clock, stores := setup(t)
		catalogCycleRace(t, clock, stores...)
	})
	t.Run("CatalogFirstUpsertRace", func(t *testing.T) {
		clock, stores := setup(t)
		catalogFirstUpsertRace(t, clock, stores...)
	})
	t.Run("CatalogProducerRace", func(t *testing.T) {
		_, stores := setup(t)
		catalogProducerRace(t, stores...)
	})
	t.Run("MaxConcurrentRace", func(t *testing.T) {
		clock, stores := setup(t)
		maxConcurrentRace(t, clock, stores...)
	})
	t.Run("PoolRace", func(t *testing.T) {
		clock, stores := setup(t)
		poolRace(t, clock, stores...)
	})
	t.Run("RecordSwapRace", func(t *testing.T) {
		_, stores := setup(t)
		recordSwapRace(t, stores...)
	})
}

// catalogCycleRace: for each of many pairs of datasets x, y, one goroutine
// upserts a job x -> y and another a job y -> x, all at once. Exactly one
// of each pair is stored, the other is refused as closing a cycle, and
// the stored graph is acyclic.
func catalogCycleRace(t *testing.T, clock *backends.FakeClock, stores ...backends.Store) {
	ctx := context.Background()
	const pairs = 40
	for k := range pairs {
		for _, d := range []string{"x" + strconv.Itoa(k), "y" + strconv.Itoa(k)} {
			_, err := stores[k%len(stores)].UpsertDataset(ctx, backends.Dataset{ID: d})
			require.NoError(t, err)
		}
	}
	errs := make([][2]error, pairs)
	var wg sync.WaitGroup
	for k := range pairs {
		for side := range 2 {
			wg.Go(func() {
				clock.Advance(time.Millisecond)
				_, errs[k][side] = stores[(k+side)%len(stores)].UpsertJob(ctx, pairJob(k, side))
			})
		}
	}
	wg.Wait()
	for k, e := range errs {
		for side, err := range e {
			if backends.CodeOf(err) == backends.CodeUnavailable {
				// Bounded retries ran out under the other store's stream of
				// changes: a client tries again.
				t.Logf("pair %d side %d: %v; trying again", k, side, err)
				_, errs[k][side] = stores[(k+side)%len(stores)].UpsertJob(ctx, pairJob(k, side))
			}
		}
	}
	for k, e := range errs {
		ok := 0
		for _, err := range e {
			if err == nil {
				ok++
				continue
			}
			require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "pair %d: %v", k, err)
			require.Contains(t, err.Error(), "would close a cycle")
		}
		require.Equal(t, 1, ok, "pair %d: exactly one of a%d and b%d is stored (errors: %v)", k, k, k, e)
	}
	for _, st := range stores {
		js, err := st.Jobs(ctx)
		require.NoError(t, err)
		require.Len(t, js, pairs)
		requireAcyclic(t, js)
	}
}

// pairJob is job a<k> (x<k> -> y<k>) for side 0, b<k> (y<k> -> x<k>) for 1.
func pairJob(k, side int) backends.Job {
	x, y := "x"+strconv.Itoa(k), "y"+strconv.Itoa(k)
	if side == 0 {
		return backends.Job{ID: "a" + strconv.Itoa(k), Inputs: []string{x}, Output: y}
	}
	return backends.Job{ID: "b" + strconv.Itoa(k), Inputs: []string{y}, Output: x}
}

// requireAcyclic fails when a job's output reaches one of its inputs.
func requireAcyclic(t *testing.T, jobs []backends.Job) {
	t.Helper()
	cat := backends.NewCatalog(nil, jobs)
	for _, j := range jobs {
		for _, d := range cat.Downstream(j.Output) {
			require.False(t, slices.Contains(j.Inputs, d), "cycle: job %q reads %q, computed from its output %q", j.ID, d, j.Output)
		}
	}
}

// catalogFirstUpsertRace: many goroutines upsert the same new job at once,
// at different times of the clock, over READY chunks of its input. Every
// upsert succeeds; the job is stored once, with the CreatedAt of the first
// one, which every answer carries; and every READY chunk is claimable once.
func catalogFirstUpsertRace(t *testing.T, clock *backends.FakeClock, stores ...backends.Store) {
	ctx := context.Background()
	for _, d := range []string{"src", "out"} {
		_, err := stores[0].UpsertDataset(ctx, backends.Dataset{ID: d})
		require.NoError(t, err)
	}
	const chunks = 20
	for i := 1; i <= chunks; i++ {
		_, err := stores[0].Publish(ctx, "src", strconv.Itoa(i))
		require.NoError(t, err)
	}
	const writers = 8
	got := make([]backends.Job, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			clock.Advance(time.Second)
			got[i], errs[i] = stores[i%len(stores)].UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "upsert %d", i)
	}
	js, err := stores[len(stores)-1].Jobs(ctx)
	require.NoError(t, err)
	require.Len(t, js, 1)
	for i, j := range got {
		require.True(t, js[0].CreatedAt.Equal(j.CreatedAt), "upsert %d answered CreatedAt %v, stored %v", i, j.CreatedAt, js[0].CreatedAt)
	}
	var claimed []string
	for {
		c, err := stores[0].FindNext(ctx, "j", "e")
		require.NoError(t, err)
		if c == nil {
			break
		}
		claimed = append(claimed, c.DataID)
		require.NoError(t, stores[0].Complete(ctx, c.Token))
	}
	want := make([]string, chunks)
	for i := range want {
		want[i] = strconv.Itoa(i + 1)
	}
	slices.SortFunc(claimed, backends.CompareDataID)
	require.Equal(t, want, claimed, "every READY chunk claimed once")
}

// catalogProducerRace: many goroutines upsert different jobs with one
// output at once. Exactly one is stored; the others are ALREADY_EXISTS.
func catalogProducerRace(t *testing.T, stores ...backends.Store) {
	ctx := context.Background()
	const writers = 8
	for i := range writers {
		_, err := stores[i%len(stores)].UpsertDataset(ctx, backends.Dataset{ID: fmt.Sprintf("in%d", i)})
		require.NoError(t, err)
	}
	_, err := stores[0].UpsertDataset(ctx, backends.Dataset{ID: "shared"})
	require.NoError(t, err)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			_, errs[i] = stores[i%len(stores)].UpsertJob(ctx, backends.Job{ID: fmt.Sprintf("p%d", i), Inputs: []string{fmt.Sprintf("in%d", i)}, Output: "shared"})
		})
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.Equal(t, backends.CodeAlreadyExists, backends.CodeOf(err), "job p%d: %v", i, err)
	}
	require.Equal(t, 1, ok, "exactly one producer of the dataset is stored")
	js, err := stores[0].Jobs(ctx)
	require.NoError(t, err)
	require.Len(t, js, 1)
}
