package backendtest

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// readModelTests cover what operators read: events (paged, filtered,
// watched), chunks, claims, locks and the lock graph.
var readModelTests = []testCase{
	{"Events", (*suite).testEvents},
	{"EventsPaging", (*suite).testEventsPaging},
	{"WatchEvents", (*suite).testWatchEvents},
	{"Chunks", (*suite).testChunks},
	{"Claims", (*suite).testClaims},
	{"Locks", (*suite).testLocks},
	{"LockGraph", (*suite).testLockGraph},
}

// ev is the part of an event the tests compare.
type ev struct {
	dataset, dataid, job string
	role                 backends.Role
	from, to             backends.Status
	actor                string
	at                   time.Duration // since epoch
}

func toEv(e backends.Event) ev {
	return ev{e.Dataset, e.DataID, e.Job, e.Role, e.From, e.To, e.Actor, e.Time.UTC().Sub(epoch)}
}

func toEvs(es []backends.Event) []ev {
	out := make([]ev, 0, len(es))
	for _, e := range es {
		out = append(out, toEv(e))
	}
	return out
}

func (s *suite) testEvents(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	alice := backends.WithActor(b.ctx, "alice")
	out, in := backends.RoleOutput, backends.RoleInput

	_, err := b.s.Publish(alice, "src", "1")
	require.NoError(t, err)
	b.clock.Advance(10 * time.Second)
	c, err := b.s.Claim(alice, "ja", "1", "exec-1")
	require.NoError(t, err)
	b.clock.Advance(10 * time.Second)
	require.NoError(t, b.s.Fail(alice, c.Token, "boom"))
	b.clock.Advance(10 * time.Second)
	c = b.claim("ja", "1") // actor "system"
	b.clock.Advance(10 * time.Second)
	b.complete(c)
	_, err = b.s.Resubmit(alice, "src", "1", true)
	require.NoError(t, err)

	all := b.events(backends.EventFilter{})
	for i := 1; i < len(all); i++ {
		require.Greater(t, all[i].Seq, all[i-1].Seq, "Seq grows")
	}
	s10, s20, s30, s40 := 10*time.Second, 20*time.Second, 30*time.Second, 40*time.Second
	// Within one operation the order of its events is not part of the
	// contract; across operations it is.
	groups := [][]ev{
		{{"src", "1", "", out, none, ready, "alice", 0}},
		{{"a", "1", "ja", out, none, running, "alice", s10}, {"src", "1", "ja", in, none, running, "alice", s10}},
		{{"a", "1", "ja", out, running, failed, "alice", s20}, {"src", "1", "ja", in, running, errored, "alice", s20}},
		{{"a", "1", "ja", out, failed, running, "system", s30}, {"src", "1", "ja", in, errored, running, "system", s30}},
		{{"a", "1", "ja", out, running, ready, "system", s40}, {"src", "1", "ja", in, running, done, "system", s40}},
		{{"src", "1", "", out, ready, resubmit, "alice", s40}, {"src", "1", "ja", in, done, errored, "alice", s40},
			{"a", "1", "ja", out, ready, resubmit, "alice", s40}},
	}
	got := toEvs(all)
	for i, g := range groups {
		require.GreaterOrEqual(t, len(got), len(g), "events of operation %d are missing: %+v", i, got)
		require.ElementsMatch(t, g, got[:len(g)], "events of operation %d", i)
		got = got[len(g):]
	}
	require.Empty(t, got, "no other events")

	// Details of the transitions.
	byKey := func(role backends.Role, to backends.Status) backends.Event {
		for _, e := range all {
			if e.Dataset == "a" && e.Role == role && e.To == to {
				return e
			}
		}
		t.Fatalf("no %s event to %s", role, to)
		return backends.Event{}
	}
	e := byKey(out, failed)
	require.Equal(t, "boom", e.Reason)
	require.Equal(t, 1, e.Attempt)
	require.Equal(t, "exec-1", e.Executor)
	e = byKey(out, ready)
	require.Equal(t, 2, e.Attempt)
	require.Equal(t, executor, e.Executor)

	checkEventFilters(t, b, all)
}

// checkEventFilters checks that each filter selects the events of all it
// names, and nothing else.
func checkEventFilters(t *testing.T, b *bundle, all []backends.Event) {
	filter := func(f backends.EventFilter, keep func(backends.Event) bool) {
		t.Helper()
		var want []backends.Event
		for _, e := range all {
			if keep(e) {
				want = append(want, e)
			}
		}
		require.NotEmpty(t, want, "filter %+v selects something", f)
		require.Equal(t, want, b.events(f), "filter %+v", f)
	}
	filter(backends.EventFilter{Dataset: "a"}, func(e backends.Event) bool { return e.Dataset == "a" })
	filter(backends.EventFilter{Job: "ja"}, func(e backends.Event) bool { return e.Job == "ja" })
	filter(backends.EventFilter{Dataset: "src", Job: "ja"}, func(e backends.Event) bool { return e.Dataset == "src" && e.Job == "ja" })
	filter(backends.EventFilter{DataID: "1"}, func(e backends.Event) bool { return true })
	require.Empty(t, b.events(backends.EventFilter{DataID: "2"}))
	require.Empty(t, b.events(backends.EventFilter{Job: "jb"}))
	require.Empty(t, b.events(backends.EventFilter{After: all[len(all)-1].Seq}))
}

func (s *suite) testEventsPaging(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3", "4", "5", "6", "7")
	b.run("ja", "3")
	all := b.events(backends.EventFilter{})
	require.Len(t, all, 11)

	for _, first := range []int{1, 2, 3, 10, 11, 12} {
		var got []backends.Event
		f := backends.EventFilter{First: first}
		pages := 0
		for {
			page, err := b.s.Events(b.ctx, f)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.Events), first)
			got = append(got, page.Events...)
			pages++
			if !page.HasNextPage {
				break
			}
			require.Len(t, page.Events, first, "only the last page may be short")
			f.After = page.Events[len(page.Events)-1].Seq
		}
		require.Equal(t, all, got, "first=%d", first)
		require.Equal(t, (len(all)+first-1)/first, pages, "first=%d: HasNextPage is false on the last page", first)
	}
	// A filtered page: HasNextPage counts matching events only.
	page, err := b.s.Events(b.ctx, backends.EventFilter{Job: "ja", First: 2})
	require.NoError(t, err)
	require.Len(t, page.Events, 2)
	require.True(t, page.HasNextPage)
	page, err = b.s.Events(b.ctx, backends.EventFilter{Job: "ja", First: 4})
	require.NoError(t, err)
	require.Len(t, page.Events, 4)
	require.False(t, page.HasNextPage)
	// Default page size.
	page, err = b.s.Events(b.ctx, backends.EventFilter{})
	require.NoError(t, err)
	require.Len(t, page.Events, len(all))
	require.False(t, page.HasNextPage)
}

// recv waits for the next event; the bound only keeps a broken backend
// from hanging the suite.
func recv(t *testing.T, ch <-chan backends.Event) backends.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		require.True(t, ok, "the event channel closed early")
		return e
	case <-time.After(20 * time.Second):
		t.Fatal("no event arrived")
	}
	return backends.Event{}
}

func (s *suite) testWatchEvents(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	first := b.lastSeq()
	b.publish("src", "2")
	seq := b.lastSeq()

	ctx, cancel := context.WithCancel(b.ctx)
	defer cancel()
	all, err := b.s.WatchEvents(ctx, backends.EventFilter{After: seq})
	require.NoError(t, err)
	onlyA, err := b.s.WatchEvents(ctx, backends.EventFilter{After: seq, Dataset: "a"})
	require.NoError(t, err)
	onlyJb, err := b.s.WatchEvents(ctx, backends.EventFilter{After: seq, Job: "jb"})
	require.NoError(t, err)
	replay, err := b.s.WatchEvents(ctx, backends.EventFilter{After: first})
	require.NoError(t, err)

	b.publish("src", "3")
	c := b.claim("ja", "3")
	b.complete(c)
	c = b.claim("jb", "3")

	e := recv(t, all)
	require.Greater(t, e.Seq, seq, "only events after the cursor")
	require.Equal(t, ev{"src", "3", "", backends.RoleOutput, none, ready, "system", 0}, toEv(e))
	var got []backends.Event
	for range 6 { // claim ja: 2 events, complete: 2, claim jb: 2
		got = append(got, recv(t, all))
	}
	for i, e := range got {
		require.Equal(t, "3", e.DataID)
		if i > 0 {
			require.Greater(t, e.Seq, got[i-1].Seq, "events arrive in Seq order")
		}
	}
	require.Equal(t, b.events(backends.EventFilter{After: seq})[1:], got, "watching sees what listing sees")

	e = recv(t, onlyA)
	require.Equal(t, "a", e.Dataset)
	require.Equal(t, running, e.To)
	e = recv(t, onlyA)
	require.Equal(t, "a", e.Dataset)
	require.Equal(t, ready, e.To)
	e = recv(t, onlyA)
	require.Equal(t, "a", e.Dataset, "jb's INPUT row on a/3")
	require.Equal(t, "jb", e.Job)
	e = recv(t, onlyJb)
	require.Equal(t, "jb", e.Job)
	require.Equal(t, running, e.To)

	e = recv(t, replay)
	require.Equal(t, "2", e.DataID, "watching from a cursor replays what came after it")
	require.Equal(t, seq, e.Seq)

	cancel()
	for _, ch := range []<-chan backends.Event{all, onlyA, onlyJb, replay} {
		closed := false
		timeout := time.After(20 * time.Second)
		for !closed {
			select {
			case _, ok := <-ch:
				closed = !ok
			case <-timeout:
				t.Fatal("the event channel did not close after its context ended")
			}
		}
	}
}

func compareRows(a, b backends.StatusRow) int {
	return cmp.Or(
		cmp.Compare(a.Dataset, b.Dataset),
		backends.CompareDataID(a.DataID, b.DataID),
		cmp.Compare(a.Role, b.Role),
		cmp.Compare(a.Job, b.Job),
	)
}

func keysOf(rows []backends.StatusRow) []backends.RowKey {
	out := make([]backends.RowKey, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.RowKey)
	}
	return out
}

func (s *suite) testChunks(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "100", "10", "9", "2", "1")
	for _, d := range []string{"1", "2", "10"} {
		b.run("ja", d)
	}
	b.claim("ja", "9")
	b.run("jb", "2")

	page, err := b.s.Chunks(b.ctx, backends.ChunkFilter{First: backends.MaxPageSize})
	require.NoError(t, err)
	require.False(t, page.HasNextPage)
	all := page.Rows
	// src: 5 OUTPUT + 4 INPUT of ja; a: 4 OUTPUT + 1 INPUT of jb; b: 1 OUTPUT.
	require.Len(t, all, 15)
	require.True(t, slices.IsSortedFunc(all, compareRows), "rows come in (dataset, shortlex dataid, role, job) order: %v", keysOf(all))
	require.Equal(t, backends.RowKey{Dataset: "a", DataID: "1", Job: "ja", Role: backends.RoleOutput}, all[0].RowKey)

	check := func(f backends.ChunkFilter, keep func(r backends.StatusRow) bool) {
		t.Helper()
		var want []backends.RowKey
		for _, r := range all {
			if keep(r) {
				want = append(want, r.RowKey)
			}
		}
		require.NotEmpty(t, want, "filter %+v selects something", f)
		for _, first := range []int{1, 2, 3, 100} {
			f.First = first
			require.Equal(t, want, keysOf(listRows(t, b, f)), "filter %+v", f)
		}
	}
	check(backends.ChunkFilter{Dataset: "src"}, func(r backends.StatusRow) bool { return r.Dataset == "src" })
	check(backends.ChunkFilter{Job: "ja"}, func(r backends.StatusRow) bool { return r.Job == "ja" })
	check(backends.ChunkFilter{Role: backends.RoleInput}, func(r backends.StatusRow) bool { return r.Role == backends.RoleInput })
	check(backends.ChunkFilter{Status: ready}, func(r backends.StatusRow) bool { return r.Status == ready })
	check(backends.ChunkFilter{Status: running}, func(r backends.StatusRow) bool { return r.Status == running })
	check(backends.ChunkFilter{From: "2", To: "10"}, func(r backends.StatusRow) bool {
		return r.DataID == "2" || r.DataID == "9" || r.DataID == "10"
	})
	check(backends.ChunkFilter{From: "10"}, func(r backends.StatusRow) bool { return r.DataID == "10" || r.DataID == "100" })
	check(backends.ChunkFilter{To: "9"}, func(r backends.StatusRow) bool { return len(r.DataID) == 1 })
	check(backends.ChunkFilter{Dataset: "src", Role: backends.RoleOutput, From: "9"}, func(r backends.StatusRow) bool {
		return r.Dataset == "src" && r.Role == backends.RoleOutput && r.DataID != "1" && r.DataID != "2"
	})
	check(backends.ChunkFilter{Dataset: "a", Job: "jb", Status: done}, func(r backends.StatusRow) bool {
		return r.Dataset == "a" && r.Job == "jb" && r.Status == done
	})
	page, err = b.s.Chunks(b.ctx, backends.ChunkFilter{Dataset: "b", Status: failed})
	require.NoError(t, err)
	require.Empty(t, page.Rows)
	require.False(t, page.HasNextPage)

	// Exactly full pages: the last one says there is nothing more.
	page, err = b.s.Chunks(b.ctx, backends.ChunkFilter{First: 15})
	require.NoError(t, err)
	require.Len(t, page.Rows, 15)
	require.False(t, page.HasNextPage)
	page, err = b.s.Chunks(b.ctx, backends.ChunkFilter{First: 14})
	require.NoError(t, err)
	require.True(t, page.HasNextPage)
	// A cursor from one page continues the same listing.
	page, err = b.s.Chunks(b.ctx, backends.ChunkFilter{First: 5})
	require.NoError(t, err)
	next, err := b.s.Chunks(b.ctx, backends.ChunkFilter{First: 5, After: page.Cursors[4]})
	require.NoError(t, err)
	require.Equal(t, keysOf(all[5:10]), keysOf(next.Rows))

	// Rows carry their fields.
	for _, r := range all {
		if r.Dataset == "a" && r.DataID == "9" {
			require.Equal(t, running, r.Status)
			require.Equal(t, executor, r.Executor)
			require.Equal(t, 1, r.Attempt)
			require.Equal(t, epoch.Add(60*time.Second), r.LeaseExpiresAt.UTC())
		}
	}
}

func (s *suite) testClaims(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	claims, err := b.s.Claims(b.ctx, "")
	require.NoError(t, err)
	require.Empty(t, claims)
	b.publish("src", "1", "2", "3")
	b.run("ja", "3")
	c1 := b.claim("ja", "1")
	c2 := b.claim("ja", "2")
	c3 := b.claim("jb", "3")
	tokens := func(job string) []string {
		t.Helper()
		cs, err := b.s.Claims(b.ctx, job)
		require.NoError(t, err)
		var out []string
		for _, c := range cs {
			require.Equal(t, running, b.status(c.Output, c.DataID))
			out = append(out, c.Token)
		}
		return out
	}
	require.ElementsMatch(t, []string{c1.Token, c2.Token}, tokens("ja"))
	require.ElementsMatch(t, []string{c3.Token}, tokens("jb"))
	require.ElementsMatch(t, []string{c1.Token, c2.Token, c3.Token}, tokens(""))
	b.complete(c1)
	b.fail(c3, "x")
	require.ElementsMatch(t, []string{c2.Token}, tokens(""))
	cs, err := b.s.Claims(b.ctx, "ja")
	require.NoError(t, err)
	got, want := cs[0], *c2
	got.LeaseExpiresAt, want.LeaseExpiresAt = got.LeaseExpiresAt.UTC(), want.LeaseExpiresAt.UTC()
	require.Equal(t, want, got, "Claims returns the claim as it was handed out")
}

func (s *suite) testLocks(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1")
	b.run("ja", "1")
	b.claim("jb", "1")
	all := []lk{
		{"src", "1", gw, "", ready},
		{"src", "1", lr, "ja", done},
		{"a", "1", gw, "ja", ready},
		{"a", "1", lr, "jb", running},
		{"b", "1", gw, "jb", running},
		{"b", "1", gr, "jb", running},
	}
	locks, err := b.s.Locks(b.ctx, backends.LockFilter{})
	require.NoError(t, err)
	requireLocks(t, locks, all...)
	locks, err = b.s.Locks(b.ctx, backends.LockFilter{Dataset: "a"})
	require.NoError(t, err)
	requireLocks(t, locks, all[2:4]...)
	locks, err = b.s.Locks(b.ctx, backends.LockFilter{Job: "jb"})
	require.NoError(t, err)
	requireLocks(t, locks, all[3:]...)
	requireLocks(t, b.chunk("a", "1").Locks, all[2:4]...)
	requireLocks(t, b.chunk("b", "1").Locks, all[4:]...)
	locks, err = b.s.Locks(b.ctx, backends.LockFilter{Dataset: "b", Job: "ja"})
	require.NoError(t, err)
	require.NotNil(t, locks, "an empty lock list is empty, not nil")
	require.Empty(t, locks)
}

// gn and ge are the comparable parts of lock graph nodes and edges.
type gn struct {
	id     string
	kind   backends.GraphNodeKind
	status backends.Status
}

type ge struct {
	from, to string
	kind     backends.GraphEdgeKind
	status   backends.Status
	locks    string
}

func graphOf(g backends.LockGraph) ([]gn, []ge) {
	nodes := make([]gn, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		nodes = append(nodes, gn{n.ID, n.Kind, n.Status})
	}
	edges := make([]ge, 0, len(g.Edges))
	for _, e := range g.Edges {
		ks := make([]string, 0, len(e.Locks))
		for _, k := range e.Locks {
			ks = append(ks, string(k))
		}
		slices.Sort(ks)
		locks := ""
		for i, k := range ks {
			if i > 0 {
				locks += ","
			}
			locks += k
		}
		edges = append(edges, ge{e.From, e.To, e.Kind, e.Status, locks})
	}
	return nodes, edges
}

func (s *suite) testLockGraph(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.datasets("lonely")
	b.publish("src", "1")
	b.run("ja", "1")
	b.claim("jb", "1")
	graph := func(f backends.GraphFilter) ([]gn, []ge) {
		t.Helper()
		g, err := b.s.LockGraph(b.ctx, f)
		require.NoError(t, err)
		for _, n := range g.Nodes {
			switch n.Kind {
			case backends.NodeJob:
				require.Equal(t, "job:"+n.Job, n.ID)
			case backends.NodeDataset:
				require.Equal(t, "dataset:"+n.Dataset, n.ID)
			case backends.NodeChunk:
				require.Equal(t, "chunk:"+n.Dataset+"/"+n.DataID, n.ID)
			}
		}
		return graphOf(g)
	}
	jobNode := func(id string) gn { return gn{"job:" + id, backends.NodeJob, none} }
	dsNode := func(id string) gn { return gn{"dataset:" + id, backends.NodeDataset, none} }
	reads, writes := backends.EdgeReads, backends.EdgeWrites
	catalogEdges := []ge{
		{"job:ja", "dataset:src", reads, none, ""}, {"job:ja", "dataset:a", writes, none, ""},
		{"job:jb", "dataset:a", reads, none, ""}, {"job:jb", "dataset:b", writes, none, ""},
	}

	nodes, edges := graph(backends.GraphFilter{})
	require.ElementsMatch(t, []gn{jobNode("ja"), jobNode("jb"), dsNode("src"), dsNode("a"), dsNode("b"), dsNode("lonely")}, nodes)
	require.ElementsMatch(t, catalogEdges, edges)

	nodes, edges = graph(backends.GraphFilter{Job: "jb"})
	require.ElementsMatch(t, []gn{jobNode("jb"), dsNode("a"), dsNode("b")}, nodes)
	require.ElementsMatch(t, catalogEdges[2:], edges)

	nodes, edges = graph(backends.GraphFilter{Dataset: "a"})
	require.ElementsMatch(t, []gn{jobNode("ja"), jobNode("jb"), dsNode("src"), dsNode("a"), dsNode("b")}, nodes)
	require.ElementsMatch(t, catalogEdges, edges)

	nodes, edges = graph(backends.GraphFilter{Job: "jb", DataID: "1"})
	require.ElementsMatch(t, []gn{jobNode("jb"), dsNode("a"), dsNode("b"),
		{"chunk:a/1", backends.NodeChunk, ready}, {"chunk:b/1", backends.NodeChunk, running}}, nodes)
	require.ElementsMatch(t, append(slices.Clone(catalogEdges[2:]),
		ge{"job:jb", "chunk:a/1", reads, running, "LOCAL_READ"},
		ge{"job:jb", "chunk:b/1", writes, running, "GLOBAL_READ,GLOBAL_WRITE"}), edges)

	nodes, edges = graph(backends.GraphFilter{DataID: "1"})
	require.ElementsMatch(t, []gn{jobNode("ja"), jobNode("jb"), dsNode("src"), dsNode("a"), dsNode("b"), dsNode("lonely"),
		{"chunk:src/1", backends.NodeChunk, ready}, {"chunk:a/1", backends.NodeChunk, ready},
		{"chunk:b/1", backends.NodeChunk, running}, {"chunk:lonely/1", backends.NodeChunk, none}}, nodes)
	require.ElementsMatch(t, append(slices.Clone(catalogEdges),
		ge{"job:ja", "chunk:src/1", reads, done, "LOCAL_READ"},
		ge{"job:ja", "chunk:a/1", writes, ready, "GLOBAL_WRITE"},
		ge{"job:jb", "chunk:a/1", reads, running, "LOCAL_READ"},
		ge{"job:jb", "chunk:b/1", writes, running, "GLOBAL_READ,GLOBAL_WRITE"}), edges)

	// A dataid nobody touched: chunk nodes without status, edges without locks.
	nodes, edges = graph(backends.GraphFilter{Job: "ja", DataID: "2"})
	require.ElementsMatch(t, []gn{jobNode("ja"), dsNode("src"), dsNode("a"),
		{"chunk:src/2", backends.NodeChunk, none}, {"chunk:a/2", backends.NodeChunk, none}}, nodes)
	require.ElementsMatch(t, append(slices.Clone(catalogEdges[:2]),
		ge{"job:ja", "chunk:src/2", reads, none, ""}, ge{"job:ja", "chunk:a/2", writes, none, ""}), edges)
}
