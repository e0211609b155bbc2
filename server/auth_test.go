package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// mutationCase is one mutation of the auth matrix. prepare (run as admin)
// sets up what the mutation needs so that, when allowed, it succeeds.
type mutationCase struct {
	name    string
	query   string
	prepare func(s *stack, n int) map[string]any
	// allowed lists who may run it, beside admin.
	allowed []string
}

// unchanged checks, for some mutations, that a refused call changed nothing.
var unchanged = map[string]func(s *stack, vs map[string]any){
	"hold":  func(s *stack, vs map[string]any) { require.Equal(s.t, "NONE", s.chunk("a", vs["id"].(string)).Status) },
	"force": func(s *stack, vs map[string]any) { require.Equal(s.t, "NONE", s.chunk("b", vs["id"].(string)).Status) },
	"publishRange": func(s *stack, vs map[string]any) {
		require.Equal(s.t, "NONE", s.chunk("pr", vs["id"].(string)).Status)
	},
	"holdRange": func(s *stack, vs map[string]any) {
		require.Equal(s.t, "READY", s.chunk("a", vs["id"].(string)).Status)
	},
	"resubmitRange": func(s *stack, vs map[string]any) {
		require.Equal(s.t, "READY", s.chunk("a", vs["id"].(string)).Status)
	},
	"addPartitions": func(s *stack, vs map[string]any) {
		require.Equal(s.t, 0, s.partitionCount("dyn", vs["id"].(string)), "a refused add adds nothing")
	},
	"removePartitions": func(s *stack, vs map[string]any) {
		require.Equal(s.t, 1, s.partitionCount("dyn", vs["id"].(string)), "a refused remove removes nothing")
	},
}

// publishedID publishes a/<prefix><n> as admin and names it as $id.
func publishedID(prefix string) func(s *stack, n int) map[string]any {
	return func(s *stack, n int) map[string]any {
		id := fmt.Sprintf("%s%d", prefix, n)
		s.publish("a", id)
		return vars("id", id)
	}
}

// forcedToken claims ja at a fresh dataid as admin and returns the token.
func forcedToken(s *stack, n int) map[string]any {
	var c claimDoc
	s.ok(admin, forceQ, vars("job", "ja", "id", fmt.Sprintf("t%d", n), "ex", "admin")).field(s.t, "force", &c)
	return vars("t", *c.Token)
}

var mutationCases = []mutationCase{
	{"upsertDataset", `mutation($id: String!) { upsertDataset(input: {id: $id}) { id } }`,
		func(_ *stack, n int) map[string]any { return vars("id", fmt.Sprintf("m%d", n)) }, nil},
	{"upsertJob", `mutation { upsertJob(input: {id: "ja", inputs: ["a"], output: "b", leaseSeconds: 30}) { job { id } } }`,
		func(*stack, int) map[string]any { return nil }, nil},
	{"setCredential", setCredentialQ,
		func(*stack, int) map[string]any { return vars("job", "ja", "d", "a", "s", "pw") }, nil},
	{"publish", publishQ,
		func(_ *stack, n int) map[string]any { return vars("d", "a", "id", fmt.Sprintf("p%d", n)) }, nil},
	{"resubmit", `mutation($id: String!) { resubmit(dataset: "a", dataid: $id, cascade: true) { status } }`,
		func(s *stack, n int) map[string]any {
			id := fmt.Sprintf("r%d", n)
			s.publish("a", id)
			return vars("id", id)
		}, nil},
	{"hold", `mutation($id: String!) { hold(dataset: "a", dataid: $id) { status } }`,
		func(_ *stack, n int) map[string]any { return vars("id", fmt.Sprintf("h%d", n)) }, nil},
	{"publishRange", `mutation($id: String!) { publishRange(dataset: "pr", from: $id, to: $id) { changed } }`,
		func(s *stack, n int) map[string]any {
			s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "pr", "partitions": map[string]any{"kind": "INTEGER"}}))
			return vars("id", fmt.Sprint(n))
		}, nil},
	{"holdRange", `mutation($id: String!) { holdRange(dataset: "a", from: $id, to: $id) { changed } }`, publishedID("g"), nil},
	{"resubmitRange", `mutation($id: String!) { resubmitRange(dataset: "a", from: $id, to: $id, cascade: true) { changed } }`,
		publishedID("s"), nil},
	{"addPartitions", `mutation($id: String!) { addPartitions(dataset: "dyn", dataids: [$id]) { changed } }`,
		func(s *stack, n int) map[string]any {
			s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "dyn", "partitions": map[string]any{"kind": "DYNAMIC"}}))
			return vars("id", fmt.Sprintf("v%d", n))
		}, nil},
	{"removePartitions", `mutation($id: String!) { removePartitions(dataset: "dyn", dataids: [$id]) { changed } }`,
		func(s *stack, n int) map[string]any {
			id := fmt.Sprintf("w%d", n)
			s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": "dyn", "partitions": map[string]any{"kind": "DYNAMIC"}}))
			s.ok(admin, `mutation($id: String!) { addPartitions(dataset: "dyn", dataids: [$id]) { changed } }`, vars("id", id))
			return vars("id", id)
		}, nil},
	{"pauseJob", `mutation { pauseJob(id: "jb") { paused } }`,
		func(*stack, int) map[string]any { return nil }, nil},
	{"resumeJob", `mutation { resumeJob(id: "jb") { paused } }`,
		func(*stack, int) map[string]any { return nil }, nil},
	{"deleteDataset", `mutation($id: String!) { deleteDataset(id: $id) }`,
		func(s *stack, n int) map[string]any {
			id := fmt.Sprintf("x%d", n)
			s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": id}))
			return vars("id", id)
		}, nil},
	{"deleteJob", `mutation($id: String!) { deleteJob(id: $id) }`,
		func(s *stack, n int) map[string]any {
			id := fmt.Sprintf("y%d", n)
			s.ok(admin, upsertDatasetQ, vars("in", map[string]any{"id": id}))
			s.ok(admin, `mutation($id: String!) { upsertJob(input: {id: $id, inputs: ["a"], output: $id}) { job { id } } }`, vars("id", id))
			return vars("id", id)
		}, nil},
	{"deletePool", `mutation($id: String!) { deletePool(id: $id) }`,
		func(s *stack, n int) map[string]any {
			id := fmt.Sprintf("z%d", n)
			s.ok(admin, `mutation($id: String!) { upsertPool(input: {id: $id, slots: 1}) { id } }`, vars("id", id))
			return vars("id", id)
		}, nil},
	{"findNext", `mutation { findNext(job: "ja", executor: "e") { dataid } }`,
		func(*stack, int) map[string]any { return nil }, []string{runnerA}},
	{"claim", claimQ,
		func(s *stack, n int) map[string]any {
			id := fmt.Sprintf("c%d", n)
			s.publish("a", id)
			return vars("job", "ja", "id", id, "ex", "e")
		}, []string{runnerA}},
	{"force", forceQ,
		func(_ *stack, n int) map[string]any { return vars("job", "ja", "id", fmt.Sprintf("f%d", n), "ex", "e") }, []string{runnerA}},
	{"heartbeat", heartbeatQ, forcedToken, []string{runnerA}},
	{"complete", completeQ, forcedToken, []string{runnerA}},
	{"fail", failQ, forcedToken, []string{runnerA}},
	{"release", releaseQ, forcedToken, []string{runnerA}},
	// Runners lock under their own name only: runner-b may not use runner-a's client.
	{"lockResource", `mutation($r: String!) { lockResource(client: "runner-a/c", resource: $r, mode: WRITE) { id } }`,
		func(_ *stack, n int) map[string]any { return vars("r", fmt.Sprintf("res://%d", n)) }, []string{runnerA}},
	{"unlockResource", `mutation($id: ID!) { unlockResource(id: $id, client: "runner-a/c") }`,
		func(s *stack, n int) map[string]any {
			var l struct{ ID string }
			s.ok(admin, `mutation($r: String!) { lockResource(client: "runner-a/c", resource: $r, mode: READ) { id } }`,
				vars("r", fmt.Sprintf("res://u%d", n))).field(s.t, "lockResource", &l)
			return vars("id", l.ID)
		}, []string{runnerA}},
}

// TestAuthMatrix runs every mutation as nobody, a reader, a runner of the
// job concerned, a runner of another job and an admin.
func TestAuthMatrix(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.define()
		n := 0
		for _, mc := range mutationCases {
			for _, who := range []string{nobody, reader, runnerA, runnerB, admin} {
				n++
				vs := mc.prepare(s, n)
				r := s.send(request{who: who, query: mc.query, vars: vs})
				allowed := who == admin
				for _, a := range mc.allowed {
					allowed = allowed || a == who
				}
				switch {
				case who == nobody:
					require.Equal(t, http.StatusUnauthorized, r.Status, "%s as nobody", mc.name)
					require.Equal(t, "UNAUTHENTICATED", r.code(t), mc.name)
				case allowed:
					require.Empty(t, r.Errors, "%s as %s: %s", mc.name, who, r.Body)
				default:
					require.Equal(t, "FORBIDDEN", r.code(t), "%s as %s: %s", mc.name, who, r.Body)
					require.Equal(t, http.StatusOK, r.Status)
					if check, ok := unchanged[mc.name]; ok {
						check(s, vs)
					}
				}
			}
		}

		// Every role may query; an unknown token may not.
		for _, who := range []string{reader, runnerA, admin} {
			s.ok(who, `{ datasets { id } }`, nil)
		}
		r := s.send(request{who: "clk_not-a-real-token", query: `{ datasets { id } }`})
		require.Equal(t, http.StatusUnauthorized, r.Status)
		require.Equal(t, "UNAUTHENTICATED", r.code(t))
	})
}

// TestOpenMode: without tokens every request is an admin named
// "anonymous", recorded as the actor of what it changes.
func TestOpenMode(t *testing.T) {
	s := newOpenStack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0])
	s.define()
	s.publish("a", "1")
	require.True(t, s.srv.Open())
	var evs struct {
		Edges []struct{ Node struct{ Actor string } }
	}
	s.ok(nobody, `{ events(dataset: "a") { edges { node { actor } } } }`, nil).field(t, "events", &evs)
	require.Equal(t, "anonymous", evs.Edges[0].Node.Actor)
}
