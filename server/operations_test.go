package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestCatalog covers datasets, jobs, dataset, job, upsertDataset, upsertJob
// and the navigation fields between them.
func TestCatalog(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.define()

		var ds []struct {
			ID, Location string
			Producer     *struct{ ID string }
			Consumers    []struct{ ID string }
		}
		s.ok(reader, `{ datasets { id location producer { id } consumers { id } } }`, nil).field(t, "datasets", &ds)
		require.Len(t, ds, 3)
		require.Equal(t, "a", ds[0].ID)
		require.Nil(t, ds[0].Producer, "a is a source")
		require.Equal(t, []struct{ ID string }{{"ja"}}, ds[0].Consumers)
		require.Equal(t, "ja", ds[1].Producer.ID)

		var j struct {
			ID, Output    string
			Inputs        []string
			InputDatasets []struct{ ID, URL string }
			OutputDataset struct{ ID string }
			Env           []struct{ Name, Value string }
			MaxAttempts   int
			LeaseSeconds  int
			Paused        bool
			Key           struct{ Kind, Public string }
			Credentials   []struct{ Dataset string }
		}
		s.ok(reader, `{ job(id: "ja") { id inputs output inputDatasets { id url } outputDataset { id } env { name value }
			maxAttempts leaseSeconds paused key { kind public } credentials { dataset } } }`, nil).field(t, "job", &j)
		require.Equal(t, []string{"a"}, j.Inputs)
		require.Equal(t, "b", j.OutputDataset.ID)
		require.Equal(t, "s3://lake", j.InputDatasets[0].URL)
		require.Equal(t, 3, j.MaxAttempts, "default")
		require.Equal(t, 30, j.LeaseSeconds)
		require.Equal(t, "age", j.Key.Kind)
		require.Regexp(t, `^age1`, j.Key.Public)
		require.Empty(t, j.Credentials)

		var jobs []struct{ ID string }
		s.ok(reader, `{ jobs { id } }`, nil).field(t, "jobs", &jobs)
		require.Equal(t, []struct{ ID string }{{"ja"}, {"jb"}}, jobs)

		// A second upsert keeps the key and returns no job key.
		var p struct {
			Job struct {
				Key    struct{ Public string }
				Paused bool
			}
			JobKey *string
		}
		s.ok(admin, `mutation { upsertJob(input: {id: "ja", inputs: ["a"], output: "b", paused: true}) { job { key { public } paused } jobKey } }`, nil).field(t, "upsertJob", &p)
		require.Nil(t, p.JobKey)
		require.Equal(t, j.Key.Public, p.Job.Key.Public)
		require.True(t, p.Job.Paused)

		// Later mutations of one request see what earlier ones changed.
		var both struct {
			D struct{ Producer *struct{ ID string } }
			J struct {
				Job struct {
					OutputDataset struct{ Producer *struct{ ID string } }
				}
			}
		}
		r0 := s.ok(admin, `mutation {
			d: upsertDataset(input: {id: "n1"}) { producer { id } }
			j: upsertJob(input: {id: "jn", inputs: ["c"], output: "n1"}) { job { outputDataset { producer { id } } } } }`, nil)
		r0.field(t, "d", &both.D)
		r0.field(t, "j", &both.J)
		require.Nil(t, both.D.Producer)
		require.Equal(t, "jn", both.J.Job.OutputDataset.Producer.ID)

		// Not found, invalid and conflicting definitions.
		r := s.send(request{who: reader, query: `{ dataset(id: "nope") { id } }`})
		require.Equal(t, "NOT_FOUND", r.code(t))
		require.JSONEq(t, `null`, string(r.Data["dataset"]))
		require.Equal(t, "NOT_FOUND", s.fails(reader, `{ job(id: "nope") { id } }`, nil))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { upsertDataset(input: {id: "Bad Id"}) { id } }`, nil))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { upsertDataset(input: {id: "x", location: "no placeholder"}) { id } }`, nil))
		require.Equal(t, "NOT_FOUND", s.fails(admin, `mutation { upsertJob(input: {id: "jx", inputs: ["nope"], output: "a"}) { jobKey } }`, nil))
		require.Equal(t, "ALREADY_EXISTS", s.fails(admin, `mutation { upsertJob(input: {id: "jx", inputs: ["a"], output: "c"}) { jobKey } }`, nil))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { upsertJob(input: {id: "jc", inputs: ["c"], output: "a"}) { jobKey } }`, nil), "a cycle")
	})
}

// TestClaimOperations covers claim, force, heartbeat, release, claims and
// the LOCKED error with its blockers.
func TestClaimOperations(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		clock := backends.NewFakeClock(t0)
		s := newStack(t, kind.Open(t, clock, 1)[0])
		s.define()

		// claim a dataid whose input is missing: LOCKED with its blockers.
		r := s.send(request{who: runnerA, query: claimQ, vars: vars("job", "ja", "id", "2026-03-01", "ex", "e1")})
		require.Equal(t, "LOCKED", r.code(t))
		require.Equal(t, []any{map[string]any{"dataset": "a", "dataid": "2026-03-01", "job": nil, "kind": "INPUT_NOT_READY", "status": "NONE"}},
			r.Errors[0].Extensions["blockers"])
		require.Equal(t, []any{"claim"}, r.Errors[0].Path)

		s.publish("a", "2026-03-01")
		var c claimDoc
		s.ok(runnerA, claimQ, vars("job", "ja", "id", "2026-03-01", "ex", "e1")).field(t, "claim", &c)
		require.Equal(t, "2026-03-01", c.DataID)

		var claims []struct {
			Token    *string
			Job      string
			Executor string
		}
		s.ok(runnerA, `{ claims(job: "ja") { token job executor } }`, nil).field(t, "claims", &claims)
		require.Len(t, claims, 1)
		require.Equal(t, c.Token, claims[0].Token, "runners of the job see its tokens")
		s.ok(runnerB, `{ claims { token job executor } }`, nil).field(t, "claims", &claims)
		require.Nil(t, claims[0].Token, "runners of other jobs do not")

		// heartbeat extends the lease by leaseSeconds from now.
		clock.Advance(20 * time.Second)
		var hb struct{ LeaseExpiresAt string }
		s.ok(runnerA, heartbeatQ, vars("t", *c.Token)).field(t, "heartbeat", &hb)
		require.Equal(t, t0.Add(50*time.Second).Format(time.RFC3339Nano), hb.LeaseExpiresAt)

		// force supersedes the live claim: the old token goes stale.
		var f claimDoc
		s.ok(admin, forceQ, vars("job", "ja", "id", "2026-03-01", "ex", "operator")).field(t, "force", &f)
		require.Equal(t, 2, f.Attempt)
		require.Equal(t, "STALE_CLAIM", s.fails(runnerA, heartbeatQ, vars("t", *c.Token)))

		// release gives the chunk back as it was: claimable again, attempts
		// not counted.
		s.ok(admin, releaseQ, vars("t", *f.Token))
		require.Equal(t, "NONE", s.chunk("b", "2026-03-01").Status)
		again := s.findNext(runnerA, "ja", "e2", "")
		require.NotNil(t, again)
		require.Equal(t, "2026-03-01", again.DataID)

		// A lease that passes makes the claim stale at once, and the reaper
		// fails it with reason "lease expired".
		clock.Advance(31 * time.Second)
		require.Equal(t, "STALE_CLAIM", s.fails(runnerA, heartbeatQ, vars("t", *again.Token)))
		n, err := s.store.ExpireLeases(t.Context())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		out := s.chunk("b", "2026-03-01").Output
		require.Equal(t, "FAILED", out.Status)
		require.Equal(t, "lease expired", out.Reason)

		// A paused job claims nothing.
		s.ok(admin, `mutation { upsertJob(input: {id: "ja", inputs: ["a"], output: "b", paused: true}) { jobKey } }`, nil)
		require.Nil(t, s.findNext(runnerA, "ja", "e2", ""))
	})
}

// TestChunkOperations covers publish, hold, resubmit, chunks (paging and
// filters), chunk, locks, lockGraph and events (paging and filters).
func TestChunkOperations(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.define()
		for _, id := range []string{"10", "9", "1", "2"} {
			s.publish("a", id)
		}
		// Publishing into a produced dataset is refused.
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, publishQ, vars("d", "b", "id", "1")))

		// chunks pages in shortlex dataid order.
		const chunksQ = `query($after: String) { chunks(dataset: "a", first: 3, after: $after) {
			edges { cursor node { dataid status role job } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`
		type page struct {
			Edges []struct {
				Cursor string
				Node   struct {
					DataID, Status, Role string
					Job                  *string
				}
			}
			PageInfo struct {
				HasNextPage, HasPreviousPage bool
				StartCursor, EndCursor       *string
			}
		}
		var p1, p2 page
		s.ok(reader, chunksQ, nil).field(t, "chunks", &p1)
		require.Len(t, p1.Edges, 3)
		require.Equal(t, []string{"1", "2", "9"}, []string{p1.Edges[0].Node.DataID, p1.Edges[1].Node.DataID, p1.Edges[2].Node.DataID})
		require.Nil(t, p1.Edges[0].Node.Job, "published chunks have no job")
		require.True(t, p1.PageInfo.HasNextPage)
		require.Equal(t, p1.Edges[2].Cursor, *p1.PageInfo.EndCursor)
		s.ok(reader, chunksQ, vars("after", *p1.PageInfo.EndCursor)).field(t, "chunks", &p2)
		require.Len(t, p2.Edges, 1)
		require.Equal(t, "10", p2.Edges[0].Node.DataID)
		require.False(t, p2.PageInfo.HasNextPage)
		var filtered page
		s.ok(reader, `{ chunks(dataset: "a", from: "2", to: "9", status: READY, role: OUTPUT) { edges { node { dataid } } pageInfo { hasNextPage } } }`, nil).field(t, "chunks", &filtered)
		require.Len(t, filtered.Edges, 2)

		// hold freezes a chunk; publish on it is LOCKED; resubmit thaws it.
		var held struct{ Status, Reason string }
		s.ok(admin, `mutation { hold(dataset: "a", dataid: "9", reason: "bad delivery") { status reason } }`, nil).field(t, "hold", &held)
		require.Equal(t, struct{ Status, Reason string }{"HOLD", "bad delivery"}, held)
		require.Equal(t, "LOCKED", s.fails(admin, publishQ, vars("d", "a", "id", "9")))
		s.ok(admin, `mutation { resubmit(dataset: "a", dataid: "9") { status } }`, nil)
		s.publish("a", "9")

		// locks: ja holds LOCAL_READ on a/1 after completing it.
		c := s.findNext(runnerA, "ja", "e", "")
		require.Equal(t, "1", c.DataID)
		s.ok(runnerA, completeQ, vars("t", *c.Token))
		var locks []lockDoc
		s.ok(reader, `{ locks(dataset: "a", job: "ja") { dataset dataid kind job status } }`, nil).field(t, "locks", &locks)
		require.Equal(t, []lockDoc{{Dataset: "a", DataID: "1", Kind: "LOCAL_READ", Job: ptr("ja"), Status: "DONE"}}, locks)

		// lockGraph around ja at dataid 1.
		var g struct {
			Nodes []struct {
				ID, Kind     string
				Job, Dataset *string
				Dataid       *string
				Status       *string
			}
			Edges []struct {
				From, To, Kind string
				Locks          []string
				Status         *string
			}
		}
		s.ok(reader, `{ lockGraph(job: "ja", dataid: "1") { nodes { id kind job dataset dataid status } edges { from to kind locks status } } }`, nil).field(t, "lockGraph", &g)
		require.Len(t, g.Nodes, 5, "job ja, datasets a and b, chunks a/1 and b/1")
		require.Equal(t, "job:ja", g.Nodes[0].ID)
		require.Nil(t, g.Nodes[0].Status)
		require.Equal(t, "chunk:b/1", g.Nodes[4].ID)
		require.Equal(t, "READY", *g.Nodes[4].Status)
		var chunkEdges int
		for _, e := range g.Edges {
			if e.To == "chunk:a/1" {
				chunkEdges++
				require.Equal(t, "READS", e.Kind)
				require.Equal(t, []string{"LOCAL_READ"}, e.Locks)
				require.Equal(t, "DONE", *e.Status)
			}
			if e.To == "dataset:a" {
				require.Nil(t, e.Status)
				require.Empty(t, e.Locks)
			}
		}
		require.Equal(t, 1, chunkEdges)

		// events: every transition, filtered and paged.
		const eventsQ = `query($after: String) { events(dataset: "b", first: 1, after: $after) {
			edges { cursor node { cursor time actor job dataset dataid role from to attempt executor reason } } pageInfo { hasNextPage endCursor } } }`
		type evPage struct {
			Edges []struct {
				Cursor string
				Node   struct {
					Cursor, Time, Actor, Dataset, DataID, Role, From, To, Executor, Reason string
					Job                                                                    *string
					Attempt                                                                int
				}
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
		var e1, e2 evPage
		s.ok(reader, eventsQ, nil).field(t, "events", &e1)
		require.Len(t, e1.Edges, 1)
		n := e1.Edges[0].Node
		require.Equal(t, "runner-a", n.Actor, "the actor is the token's name")
		require.Equal(t, []string{"NONE", "RUNNING", "OUTPUT"}, []string{n.From, n.To, n.Role})
		require.Equal(t, e1.Edges[0].Cursor, n.Cursor)
		require.True(t, e1.PageInfo.HasNextPage)
		s.ok(reader, eventsQ, vars("after", *e1.PageInfo.EndCursor)).field(t, "events", &e2)
		require.Equal(t, []string{"RUNNING", "READY"}, []string{e2.Edges[0].Node.From, e2.Edges[0].Node.To})
		var byChunk evPage
		s.ok(reader, `{ events(job: "ja", dataid: "1") { edges { node { dataset from to } } pageInfo { hasNextPage } } }`, nil).field(t, "events", &byChunk)
		require.Len(t, byChunk.Edges, 4, "ja's OUTPUT and INPUT rows on dataid 1, claimed then completed")
	})
}

// TestResourceLocks covers lockResource, unlockResource and resourceLocks
// (seed 004).
func TestResourceLocks(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		const lockQ = `mutation($c: String!, $r: String!, $m: LockMode!, $ttl: Int) { lockResource(client: $c, resource: $r, mode: $m, ttlSeconds: $ttl) { id client resource mode createdAt expiresAt } }`
		type lock struct{ ID, Client, Resource, Mode, CreatedAt, ExpiresAt string }
		var r1, r2 lock
		s.ok(runnerA, lockQ, vars("c", "runner-a/loader-1", "r", "mysql://db/warehouse", "m", "READ")).field(t, "lockResource", &r1)
		require.Equal(t, t0.Add(time.Hour).Format(time.RFC3339Nano), r1.ExpiresAt, "default TTL one hour")
		s.ok(runnerB, lockQ, vars("c", "runner-b/loader-2", "r", "mysql://db/warehouse", "m", "READ", "ttl", 60)).field(t, "lockResource", &r2)
		require.Equal(t, "FORBIDDEN", s.fails(runnerB, lockQ, vars("c", "runner-a/x", "r", "mysql://db/warehouse", "m", "READ")),
			"a runner locks under its own name only")
		require.Equal(t, t0.Add(time.Minute).Format(time.RFC3339Nano), r2.ExpiresAt)

		r := s.send(request{who: admin, query: lockQ, vars: vars("c", "migrator", "r", "mysql://db/warehouse", "m", "WRITE")})
		require.Equal(t, "LOCKED", r.code(t))
		holders := r.Errors[0].Extensions["holders"].([]any)
		require.Len(t, holders, 2)
		require.Equal(t, "runner-a/loader-1", holders[0].(map[string]any)["client"])

		var ls []lock
		s.ok(reader, `{ resourceLocks(resource: "mysql://db/warehouse", mode: READ) { id client resource mode createdAt expiresAt } }`, nil).field(t, "resourceLocks", &ls)
		require.Equal(t, []lock{r1, r2}, ls)

		const unlockQ = `mutation($id: ID!, $c: String!) { unlockResource(id: $id, client: $c) }`
		require.Equal(t, "FORBIDDEN", s.fails(runnerA, unlockQ, vars("id", r1.ID, "c", "runner-a/someone-else")), "the lock's client must match")
		require.Equal(t, "FORBIDDEN", s.fails(runnerA, unlockQ, vars("id", r2.ID, "c", r2.Client)), "runner-a cannot drop runner-b's lock by naming its client")
		s.ok(runnerA, unlockQ, vars("id", r1.ID, "c", r1.Client))
		s.ok(runnerB, unlockQ, vars("id", r2.ID, "c", r2.Client))
		require.Equal(t, "NOT_FOUND", s.fails(runnerA, unlockQ, vars("id", r1.ID, "c", r1.Client)))
		s.ok(admin, lockQ, vars("c", "migrator", "r", "mysql://db/warehouse", "m", "WRITE"))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, lockQ, vars("c", "x", "r", "mysql://db/other", "m", "READ", "ttl", 0)))
	})
}
