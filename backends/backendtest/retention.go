package backendtest

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/partition"
)

var retentionTests = []testCase{
	{"RetentionPrunesOldEvents", (*suite).testRetentionPrunesOldEvents},
	{"RetentionPerDataset", (*suite).testRetentionPerDataset},
	{"RetentionKeepsUndelivered", (*suite).testRetentionKeepsUndelivered},
	{"RetentionSweepGoesOn", (*suite).testRetentionSweepGoesOn},
	{"RetentionReplicas", (*suite).testRetentionReplicas},
	{"RetentionValidation", (*suite).testRetentionValidation},
}

// prune runs the sweep of p to its end and returns how many events it
// removed and how many calls it took.
func (b *bundle) prune(p backends.PrunePolicy) (pruned, calls int) {
	b.t.Helper()
	for calls = 1; calls <= 1000; calls++ {
		res, err := b.s.PruneEvents(b.ctx, p)
		require.NoError(b.t, err, "prune events")
		pruned += res.Pruned
		if p.After = res.Next; p.After == 0 {
			return pruned, calls
		}
	}
	b.t.Fatal("the pruning sweep does not end")
	return 0, 0
}

// dataids lists the DataID of each event.
func eventKeys(evs []backends.Event) [][2]string {
	var out [][2]string
	for _, e := range evs {
		out = append(out, [2]string{e.Dataset, e.DataID})
	}
	return out
}

// testRetentionPrunesOldEvents: events older than the retention go, newer
// ones stay, catalog changes all stay, and what may be claimed and what a
// cascade reaches are those of a store that never pruned: a chunk
// completed long ago is not claimed again, a cascade from it still reaches
// what was computed from it.
func (s *suite) testRetentionPrunesOldEvents(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2")
	b.run("ja", "1")
	b.run("jb", "1")
	old := b.events(backends.EventFilter{})
	require.NotEmpty(t, old)
	changes := b.allChanges()
	b.clock.Advance(48 * time.Hour)
	b.publish("src", "3")
	rows := b.allRows()

	// Nothing is old enough for a retention longer than the history.
	pruned, _ := b.prune(backends.PrunePolicy{Events: 72 * time.Hour})
	require.Zero(t, pruned)
	// No retention, nothing pruned.
	pruned, _ = b.prune(backends.PrunePolicy{})
	require.Zero(t, pruned)

	pruned, _ = b.prune(backends.PrunePolicy{Events: 24 * time.Hour})
	require.Equal(t, len(old), pruned, "every event of the first day is pruned")
	left := b.events(backends.EventFilter{})
	require.Equal(t, [][2]string{{"src", "3"}}, eventKeys(left), "the new event stays")
	require.Equal(t, changes, b.allChanges(), "catalog changes are never pruned")
	require.Equal(t, rows, b.allRows(), "pruning changes no row")
	pruned, _ = b.prune(backends.PrunePolicy{Events: 24 * time.Hour})
	require.Zero(t, pruned, "pruning again prunes nothing")
	// A seq is never given out again: the next event comes after all.
	b.publish("src", "4")
	evs := b.events(backends.EventFilter{})
	require.Len(t, evs, 2)
	require.Greater(t, evs[1].Seq, left[0].Seq)
	require.Greater(t, evs[1].Seq, old[len(old)-1].Seq)

	// ja completed 1 long ago: it claims 2, 3 and 4, never 1 again.
	for _, want := range []string{"2", "3", "4"} {
		c, id := b.next("ja")
		require.Equal(t, want, id)
		b.complete(c)
	}
	c, _ := b.next("ja")
	require.Nil(t, c, "a chunk completed before its events were pruned is not claimed again")
	// A cascade from the old chunk still reaches what was computed from it.
	changed, err := b.s.Resubmit(b.ctx, "a", "1", true)
	require.NoError(t, err)
	require.Len(t, changed, 2, "resubmit a/1 with cascade: a/1 and b/1")
	require.Equal(t, resubmit, b.status("b", "1"))
	require.Equal(t, errored, b.inputStatus("a", "1", "jb"))
}

// allChanges lists every catalog change.
func (b *bundle) allChanges() []backends.CatalogChange {
	b.t.Helper()
	var out []backends.CatalogChange
	f := backends.ChangeFilter{First: backends.MaxChangesPage}
	for {
		page, err := b.s.CatalogChanges(b.ctx, f)
		require.NoError(b.t, err)
		out = append(out, page.Changes...)
		if !page.HasNextPage {
			return out
		}
		f.After = page.Changes[len(page.Changes)-1].Cursor
	}
}

// testRetentionPerDataset: a dataset's own retention replaces the
// server's, shorter or longer (0: for ever), and is stored with it.
func (s *suite) testRetentionPerDataset(t *testing.T) {
	b := s.setup(t)
	b.datasets("x", "keep", "short")
	for id, secs := range map[string]int{"keep": 0, "short": 3600} {
		d, err := b.s.Dataset(b.ctx, id)
		require.NoError(t, err)
		d.Retention = &backends.Retention{EventsSeconds: secs}
		_, err = b.s.UpsertDataset(b.ctx, d)
		require.NoError(t, err)
	}
	d, err := b.s.Dataset(b.ctx, "keep")
	require.NoError(t, err)
	require.Equal(t, &backends.Retention{EventsSeconds: 0}, d.Retention, "the retention is stored")
	d, err = b.s.Dataset(b.ctx, "x")
	require.NoError(t, err)
	require.Nil(t, d.Retention)

	b.publish("x", "1")
	b.publish("keep", "1")
	b.publish("short", "1")
	b.clock.Advance(2 * time.Hour)
	b.publish("x", "2")
	b.publish("keep", "2")
	b.publish("short", "2")

	// No server-wide retention: only short's own applies.
	pruned, _ := b.prune(backends.PrunePolicy{})
	require.Equal(t, 1, pruned)
	require.Equal(t, [][2]string{{"x", "1"}, {"keep", "1"}, {"x", "2"}, {"keep", "2"}, {"short", "2"}},
		eventKeys(b.events(backends.EventFilter{})))
	// A server-wide minute: x's old event goes, keep's stays for ever.
	pruned, _ = b.prune(backends.PrunePolicy{Events: time.Minute})
	require.Equal(t, 1, pruned)
	require.Equal(t, [][2]string{{"keep", "1"}, {"x", "2"}, {"keep", "2"}, {"short", "2"}},
		eventKeys(b.events(backends.EventFilter{})))

	// A dataset given a longer retention keeps its events from then on.
	b.clock.Advance(30 * time.Minute)
	d, err = b.s.Dataset(b.ctx, "short")
	require.NoError(t, err)
	d.Retention = &backends.Retention{EventsSeconds: 24 * 3600}
	_, err = b.s.UpsertDataset(b.ctx, d)
	require.NoError(t, err)
	b.clock.Advance(2 * time.Hour)
	pruned, _ = b.prune(backends.PrunePolicy{Events: time.Hour})
	require.Equal(t, 1, pruned, "x/2 only")
	require.Equal(t, [][2]string{{"keep", "1"}, {"keep", "2"}, {"short", "2"}},
		eventKeys(b.events(backends.EventFilter{})))
	// Dropping the own retention (nil) puts the dataset back under the server's.
	d.Retention = nil
	_, err = b.s.UpsertDataset(b.ctx, d)
	require.NoError(t, err)
	pruned, _ = b.prune(backends.PrunePolicy{Events: time.Hour})
	require.Equal(t, 1, pruned, "short/2")
	require.Equal(t, [][2]string{{"keep", "1"}, {"keep", "2"}}, eventKeys(b.events(backends.EventFilter{})))
}

// testRetentionKeepsUndelivered: events after a consumer's cursor (a
// webhook's) stay however old, and so every event after them.
func (s *suite) testRetentionKeepsUndelivered(t *testing.T) {
	b := s.setup(t)
	b.datasets("x")
	b.publish("x", "1", "2", "3", "4")
	evs := b.events(backends.EventFilter{})
	require.Len(t, evs, 4)
	b.clock.Advance(48 * time.Hour)
	pruned, _ := b.prune(backends.PrunePolicy{Events: time.Hour, Hold: true, KeepAfter: evs[1].Seq})
	require.Equal(t, 2, pruned)
	require.Equal(t, [][2]string{{"x", "3"}, {"x", "4"}}, eventKeys(b.events(backends.EventFilter{})))
	// A cursor before every event holds them all.
	pruned, _ = b.prune(backends.PrunePolicy{Events: time.Hour, Hold: true, KeepAfter: 0})
	require.Zero(t, pruned)
	pruned, _ = b.prune(backends.PrunePolicy{Events: time.Hour, Hold: true, KeepAfter: evs[3].Seq})
	require.Equal(t, 2, pruned)
	require.Empty(t, b.events(backends.EventFilter{}))
}

// testRetentionSweepGoesOn: a sweep longer than one call goes on where the
// call before stopped, past events a dataset keeps longer, to the old
// events behind them.
func (s *suite) testRetentionSweepGoesOn(t *testing.T) {
	b := s.setup(t)
	n := backends.PruneBatch*backends.PrunePages + 100
	b.definedDataset("keep", partition.Def{Kind: partition.Integer, Start: "1", End: "100000"})
	d, err := b.s.Dataset(b.ctx, "keep")
	require.NoError(t, err)
	d.Retention = &backends.Retention{EventsSeconds: 0}
	_, err = b.s.UpsertDataset(b.ctx, d)
	require.NoError(t, err)
	b.datasets("x")
	res, err := b.s.PublishRange(b.ctx, "keep", "1", itoa(n))
	require.NoError(t, err)
	require.Equal(t, n, res.Changed)
	b.publish("x", "1", "2")
	b.clock.Advance(48 * time.Hour)
	b.publish("x", "3")

	first, err := b.s.PruneEvents(b.ctx, backends.PrunePolicy{Events: time.Hour})
	require.NoError(t, err)
	require.Zero(t, first.Pruned, "one call reads the kept events only")
	require.NotZero(t, first.Next, "and says where to go on")
	pruned, calls := b.prune(backends.PrunePolicy{Events: time.Hour, After: first.Next})
	require.Equal(t, 2, pruned, "x/1 and x/2, behind the kept ones")
	require.Equal(t, 1, calls)
	left := b.events(backends.EventFilter{Dataset: "x"})
	require.Equal(t, [][2]string{{"x", "3"}}, eventKeys(left))
	require.Len(t, b.events(backends.EventFilter{Dataset: "keep"}), n)
}

func itoa(n int) string { return strconv.Itoa(n) }

// testRetentionReplicas: two servers sweeping one store at once fail
// nothing and prune every old event between them, and no new one.
func (s *suite) testRetentionReplicas(t *testing.T) {
	b := s.setup(t)
	b.datasets("x")
	for i := 1; i <= 300; i++ {
		b.publish("x", itoa(i))
	}
	b.clock.Advance(48 * time.Hour)
	b.publish("x", "301")
	other := engine.New(b.be, engine.WithClock(b.clock))
	p := backends.PrunePolicy{Events: time.Hour}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 2)
	for _, st := range []backends.Store{b.s, other} {
		go func() {
			n, q := 0, p
			for range 100 {
				res, err := st.PruneEvents(b.ctx, q)
				if err != nil {
					done <- result{n, err}
					return
				}
				n += res.Pruned
				if q.After = res.Next; q.After == 0 {
					break
				}
			}
			done <- result{n, nil}
		}()
	}
	total := 0
	for range 2 {
		r := <-done
		require.NoError(t, r.err)
		total += r.n
	}
	// A backend that sequences events in the background may have left one
	// a racing sweep saw unsequenced: the next sweep prunes it.
	more, _ := b.prune(p)
	require.GreaterOrEqual(t, total+more, 300, "every old event is pruned by one of them")
	require.Equal(t, [][2]string{{"x", "301"}}, eventKeys(b.events(backends.EventFilter{})))
}

// testRetentionValidation: a dataset's retention is 0 to MaxRetentionSeconds.
func (s *suite) testRetentionValidation(t *testing.T) {
	b := s.setup(t)
	for _, secs := range []int{-1, backends.MaxRetentionSeconds + 1} {
		_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "x", Retention: &backends.Retention{EventsSeconds: secs}})
		requireCode(t, err, backends.CodeInvalidArgument, "retention %d", secs)
	}
	_, err := b.s.UpsertDataset(b.ctx, backends.Dataset{ID: "x", Retention: &backends.Retention{EventsSeconds: backends.MaxRetentionSeconds}})
	require.NoError(t, err)
	_, err = b.s.PruneEvents(b.ctx, backends.PrunePolicy{Events: -time.Second})
	requireCode(t, err, backends.CodeInvalidArgument)
}
