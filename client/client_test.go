package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

type bundle struct {
	url   string
	token string // an admin token
	store backends.Store
}

// setup serves a fresh in-memory store over HTTP with one admin token.
func setup(t *testing.T) bundle {
	t.Helper()
	token, entry, err := auth.NewToken("tester", auth.RoleAdmin, nil)
	require.NoError(t, err)
	raw, err := yaml.Marshal([]auth.Entry{entry})
	require.NoError(t, err)
	tokens, err := auth.ParseTokens(raw)
	require.NoError(t, err)
	store := teststores.Memory(nil)
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring, cfg.Tokens = store, age.New(), tokens
	srv, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return bundle{url: hs.URL, token: token, store: store}
}

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, opts...)
	require.NoError(t, err)
	return c
}

// pipeline creates in -> j -> out with a secret on in; it returns j's key.
func (b bundle) pipeline(t *testing.T, c *client.Client) string {
	t.Helper()
	ctx := t.Context()
	for _, d := range []string{"in", "out"} {
		require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: d, URL: "file:///data", Location: "/data/" + d + "/{dataid}"}))
	}
	key, err := c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", LeaseSeconds: 30,
		Env: []backends.EnvVar{{Name: "MODE", Value: "fast"}}})
	require.NoError(t, err)
	require.NotEmpty(t, key, "the first upsert returns the job key")
	again, err := c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", LeaseSeconds: 30,
		Env: []backends.EnvVar{{Name: "MODE", Value: "fast"}}})
	require.NoError(t, err)
	require.Empty(t, again, "the key is shown once")
	require.NoError(t, c.SetCredential(ctx, "j", "in", "s3cret"))
	return key
}

func TestClaimCycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	admin := newClient(t, b.url, client.WithToken(b.token))
	key := b.pipeline(t, admin)

	jobs, err := admin.Jobs(ctx)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.True(t, jobs[0].HasCredential("in"))
	require.False(t, jobs[0].HasCredential("out"))
	require.Equal(t, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", LeaseSeconds: 30, MaxAttempts: 3, RetryMaxDelaySeconds: 3600,
		Env: []backends.EnvVar{{Name: "MODE", Value: "fast"}}}, jobs[0].Backend())

	// More than one batch of publish mutations.
	var ids []string
	for i := 1; i <= 30; i++ {
		ids = append(ids, fmt.Sprint(i))
	}
	require.NoError(t, admin.Publish(ctx, "in", ids))
	rows, err := admin.Chunks(ctx, client.ChunkFilter{Dataset: "in", Status: "READY"})
	require.NoError(t, err)
	require.Len(t, rows, 30)

	// With the job key the claim carries the decrypted secret.
	runner := newClient(t, b.url, client.WithToken(b.token), client.WithJobKey(key))
	claim, err := runner.FindNext(ctx, "j", "exec-1")
	require.NoError(t, err)
	require.NotNil(t, claim)
	require.Equal(t, "1", claim.DataID)
	require.Equal(t, "/data/out/1", claim.Output.Location)
	require.Len(t, claim.Inputs, 1)
	require.NotNil(t, claim.Inputs[0].Secret)
	require.Equal(t, "s3cret", *claim.Inputs[0].Secret)
	require.Equal(t, "fast", claim.Env[0].Value)

	// Without it, no secret.
	plain, err := admin.FindNext(ctx, "j", "exec-2")
	require.NoError(t, err)
	require.Nil(t, plain.Inputs[0].Secret)
	require.NoError(t, admin.Release(ctx, plain.Token))

	until, err := runner.Heartbeat(ctx, claim.Token)
	require.NoError(t, err)
	require.True(t, until.After(time.Now()))
	live, err := admin.Claims(ctx, "j")
	require.NoError(t, err)
	require.Len(t, live, 1)
	require.NoError(t, runner.Complete(ctx, claim.Token))

	require.NoError(t, runner.Complete(ctx, claim.Token), "a repeated completion answers as the first did")
	err = runner.Fail(ctx, claim.Token, "late")
	require.Equal(t, backends.CodeStaleClaim, client.CodeOf(err))
	require.ErrorIs(t, err, backends.ErrStaleClaim)
	require.False(t, client.IsTransient(err))

	// LOCKED carries the blockers, NONE read as no row.
	_, err = admin.Claim(ctx, "j", "31", "exec-3")
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, backends.CodeLocked, ce.Code)
	require.Contains(t, ce.Blockers, backends.Blocker{Dataset: "in", DataID: "31", Kind: backends.BlockerInputNotReady, Status: backends.StatusNone})
	bs, err := admin.Blockers(ctx, "j", "31")
	require.NoError(t, err)
	require.Equal(t, []client.Blocker{{Dataset: "in", DataID: "31", Kind: "INPUT_NOT_READY", Status: "NONE"}}, bs)

	// Events page forward.
	first, next, err := admin.Events(ctx, client.EventFilter{Dataset: "out"}, "", 2)
	require.NoError(t, err)
	require.Len(t, first, 2)
	require.NotEmpty(t, next)
	all, err := admin.AllEvents(ctx, client.EventFilter{Dataset: "out"})
	require.NoError(t, err)
	require.Equal(t, first, all[:2])
	require.Equal(t, "READY", all[len(all)-1].To)

	g, err := admin.LockGraph(ctx, "j", "", "1")
	require.NoError(t, err)
	require.NotEmpty(t, g.Edges)
}

func TestWrongJobKeyLeavesNoClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	admin := newClient(t, b.url, client.WithToken(b.token))
	b.pipeline(t, admin)
	require.NoError(t, admin.Publish(ctx, "in", []string{"1"}))
	_, otherKey, err := age.New().CreateJobKey(ctx, "someone-else")
	require.NoError(t, err)

	wrong := newClient(t, b.url, client.WithToken(b.token), client.WithJobKey(otherKey))
	claim, err := wrong.FindNext(ctx, "j", "exec")
	require.Nil(t, claim)
	require.Equal(t, backends.CodeForbidden, client.CodeOf(err))
	// The server refuses before claiming, or the client gives the claim
	// back: either way no claim is left to expire.
	live, err := admin.Claims(ctx, "j")
	require.NoError(t, err)
	require.Empty(t, live, "no claim is left to expire")
	claim, err = admin.FindNext(ctx, "j", "exec")
	require.NoError(t, err)
	require.Equal(t, 1, claim.Attempt, "a release counts no attempt")
}

func TestResourceLockHolders(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c := newClient(t, b.url, client.WithToken(b.token))
	l, err := c.LockResource(ctx, "alice", "s3://bucket", "WRITE", time.Minute)
	require.NoError(t, err)
	_, err = c.LockResource(ctx, "bob", "s3://bucket", "READ", 0)
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, backends.CodeLocked, ce.Code)
	require.Len(t, ce.Holders, 1)
	require.Equal(t, "alice", ce.Holders[0].Client)
	err = c.UnlockResource(ctx, l.ID, "bob")
	require.Equal(t, backends.CodeForbidden, client.CodeOf(err))
	require.NoError(t, c.UnlockResource(ctx, l.ID, "alice"))
	locks, err := c.ResourceLocks(ctx, "", "", "")
	require.NoError(t, err)
	require.Empty(t, locks)
}

func TestSubscribe(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	admin := newClient(t, b.url, client.WithToken(b.token))
	b.pipeline(t, admin)
	require.NoError(t, admin.Publish(ctx, "in", []string{"7"}))
	past, err := admin.AllEvents(ctx, client.EventFilter{})
	require.NoError(t, err)
	require.Len(t, past, 1)

	// From a cursor, the subscription replays what came since, then
	// follows: no event falls between the two.
	sub, err := admin.WatchEvents(ctx, past[0].Cursor, client.EventFilter{Dataset: "in"}, client.EventFilter{Job: "j"})
	require.NoError(t, err)
	defer sub.Close()
	require.NoError(t, admin.Publish(ctx, "in", []string{"8"}))
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := sub.Next(wctx)
	require.NoError(t, err)
	require.Equal(t, 0, m.Op, "the event matched the first filter")
	e, err := client.DecodeEvent(m)
	require.NoError(t, err)
	require.Equal(t, client.Event{Cursor: e.Cursor, Time: e.Time, Actor: "tester", Dataset: "in", DataID: "8", Role: "OUTPUT", From: "NONE", To: "READY"}, e)

	// The claim writes j's rows: its INPUT row on in matches both
	// filters, its OUTPUT row on out only the second.
	claim, err := admin.FindNext(ctx, "j", "exec")
	require.NoError(t, err)
	seen := map[int][]string{}
	for len(seen[1]) < 2 || len(seen[0]) < 1 {
		m, err = sub.Next(wctx)
		require.NoError(t, err, "seen %v", seen)
		e, err = client.DecodeEvent(m)
		require.NoError(t, err)
		require.Equal(t, claim.DataID, e.DataID)
		require.Equal(t, "j", e.Job)
		seen[m.Op] = append(seen[m.Op], e.Dataset+" "+e.Role)
	}
	require.Equal(t, []string{"in INPUT"}, seen[0])
	require.ElementsMatch(t, []string{"in INPUT", "out OUTPUT"}, seen[1])

	// Without a filter every event comes, from the cursor on.
	all, err := admin.WatchEvents(ctx, past[0].Cursor)
	require.NoError(t, err)
	defer all.Close()
	m, err = all.Next(wctx)
	require.NoError(t, err)
	e, err = client.DecodeEvent(m)
	require.NoError(t, err)
	require.Equal(t, "8", e.DataID)

	// Closing ends Next.
	require.NoError(t, sub.Close())
	_, err = sub.Next(wctx)
	require.Error(t, err)
	require.NoError(t, wctx.Err(), "Next returned at once")
}

func TestAuthenticationErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	anon := newClient(t, b.url)
	_, err := anon.Jobs(ctx)
	require.Equal(t, backends.CodeUnauthenticated, client.CodeOf(err))
	_, err = anon.WatchEvents(ctx, "")
	require.Equal(t, backends.CodeUnauthenticated, client.CodeOf(err))
	bad := newClient(t, b.url, client.WithToken("nope"))
	_, err = bad.WatchEvents(ctx, "")
	require.Equal(t, backends.CodeUnauthenticated, client.CodeOf(err))
}

func TestTransportErrors(t *testing.T) {
	t.Parallel()
	// Nothing listens on a port just closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	c := newClient(t, url)
	_, err = c.Jobs(t.Context())
	require.True(t, client.IsTransient(err), "%v", err)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	_, err = c.WatchEvents(t.Context(), "")
	require.True(t, client.IsTransient(err), "%v", err)

	// A proxy's 503 is transient; a page that is not GraphQL is not.
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("x") == "" && r.URL.Path == "/busy/graphql" {
			http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("<html>hello</html>"))
	}))
	defer hs.Close()
	_, err = newClient(t, hs.URL+"/busy").Jobs(t.Context())
	require.True(t, client.IsTransient(err), "%v", err)
	_, err = newClient(t, hs.URL).Jobs(t.Context())
	require.Error(t, err)
	require.False(t, client.IsTransient(err))
	require.Contains(t, err.Error(), "not GraphQL")

	// The caller's own cancellation is not transient.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = newClient(t, hs.URL+"/busy").Jobs(ctx)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.False(t, client.IsTransient(err))

	_, err = client.New("127.0.0.1:8080")
	require.ErrorContains(t, err, "not an http(s) URL")
}

// TestPartitionsAndJobLimitsRoundTrip: a dataset's partition definition and
// a job's backoff and concurrency settings travel through GraphQL both
// ways, and what the API cannot take from a default is refused.
func TestPartitionsAndJobLimitsRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c := newClient(t, b.url, client.WithToken(b.token))
	deadline := 6 * time.Hour
	def := &partition.Def{Kind: partition.Daily, Start: "2026-01-01", Timezone: "Europe/Berlin", Lag: time.Hour, Deadline: &deadline}
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "src", Location: "/d/{dataid}", Partitions: def}))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "tags", Partitions: &partition.Def{Kind: partition.Static, Values: []string{"b", "a"}}}))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "out"}))
	ds, err := c.Datasets(ctx)
	require.NoError(t, err)
	require.Len(t, ds, 3)
	require.Nil(t, ds[0].Backend().Partitions, "out has no definition")
	require.Equal(t, def, ds[1].Backend().Partitions)
	require.Equal(t, &partition.Def{Kind: partition.Static, Values: []string{"b", "a"}}, ds[2].Backend().Partitions)

	err = c.UpsertDataset(ctx, backends.Dataset{ID: "bad", Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", Timezone: "Nowhere/City"}})
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), "Nowhere/City")

	_, err = c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out",
		RetryDelaySeconds: 10, RetryMaxDelaySeconds: 90, MaxConcurrent: 2})
	require.NoError(t, err)
	j, err := c.Job(ctx, "j")
	require.NoError(t, err)
	bj := j.Backend()
	require.Equal(t, []int{10, 90, 2}, []int{bj.RetryDelaySeconds, bj.RetryMaxDelaySeconds, bj.MaxConcurrent})
	require.Nil(t, j.Pool)

	for name, in := range map[string]string{
		"maxConcurrent 0":        `maxConcurrent: 0`,
		"retryMaxDelaySeconds 0": `retryMaxDelaySeconds: 0`,
		"empty pool":             `pool: ""`,
		"negative delay":         `retryDelaySeconds: -5`,
	} {
		err := c.Do(ctx, `mutation { upsertJob(input: {id: "j", inputs: ["src"], output: "out", `+in+`}) { job { id } } }`, nil, nil)
		requireCode(t, err, backends.CodeInvalidArgument, name)
	}
}

func requireCode(t *testing.T, err error, code backends.Code, msgAndArgs ...any) {
	t.Helper()
	var ce *client.Error
	require.ErrorAs(t, err, &ce, msgAndArgs...)
	require.Equal(t, code, ce.Code, msgAndArgs...)
}

func TestInputMappingsRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c := newClient(t, b.url, client.WithToken(b.token))
	daily := &partition.Def{Kind: partition.Daily, Start: "2026-01-01"}
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "src", Location: "/d/{dataid}", Partitions: daily}))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "week", Partitions: &partition.Def{Kind: partition.Weekly, Start: "2026-W01"}}))
	want := []backends.InputMapping{{Dataset: "src", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -1, EndOffset: 1}}}
	_, err := c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "week", InputMappings: want})
	require.NoError(t, err)
	j, err := c.Job(ctx, "j")
	require.NoError(t, err)
	require.Equal(t, want, j.Backend().InputMappings)

	err = c.Do(ctx, `mutation { upsertJob(input: {id: "j", inputs: ["src"], output: "week", inputMappings: [{dataset: "src", kind: ALL}]}) { job { id } } }`, nil, nil)
	requireCode(t, err, backends.CodeInvalidArgument)
	require.Contains(t, err.Error(), "ALL reads every expected dataid")

	// A claim lists every chunk of the mapped set, each with its own
	// dataid, location and secret; the lock graph and the chunk show the
	// mapped reads.
	key, err := c.UpsertJob(ctx, backends.Job{ID: "roll", Inputs: []string{"src"}, Output: "rolling",
		InputMappings: []backends.InputMapping{{Dataset: "src", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -2}}}})
	requireCode(t, err, backends.CodeNotFound, "rolling does not exist yet")
	require.Empty(t, key)
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "rolling", Location: "/r/{dataid}", Partitions: daily}))
	key, err = c.UpsertJob(ctx, backends.Job{ID: "roll", Inputs: []string{"src"}, Output: "rolling",
		InputMappings: []backends.InputMapping{{Dataset: "src", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -2}}}})
	require.NoError(t, err)
	require.NoError(t, c.SetCredential(ctx, "roll", "src", "s3cret"))
	require.NoError(t, c.Publish(ctx, "src", []string{"2026-03-01", "2026-03-02", "2026-03-03"}))
	runner := newClient(t, b.url, client.WithToken(b.token), client.WithJobKey(key))
	claim, err := runner.Claim(ctx, "roll", "2026-03-03", "exec")
	require.NoError(t, err)
	var got []string
	for _, in := range claim.Inputs {
		require.NotNil(t, in.Secret)
		got = append(got, in.Dataset+" "+in.DataID+" "+in.Location+" "+*in.Secret)
	}
	require.Equal(t, []string{"src 2026-03-01 /d/2026-03-01 s3cret", "src 2026-03-02 /d/2026-03-02 s3cret", "src 2026-03-03 /d/2026-03-03 s3cret"}, got)
	g, err := c.LockGraph(ctx, "roll", "", "2026-03-03")
	require.NoError(t, err)
	var mapped, reads []string
	for _, e := range g.Edges {
		if e.Mapping != nil {
			mapped = append(mapped, e.To+" "+string(e.Mapping.Kind))
		}
		if e.Kind == "READS" && e.Status != "" {
			reads = append(reads, e.To+" "+e.Status)
		}
	}
	require.Equal(t, []string{"dataset:src TIME_WINDOW"}, mapped)
	require.Equal(t, []string{"chunk:src/2026-03-01 RUNNING", "chunk:src/2026-03-02 RUNNING", "chunk:src/2026-03-03 RUNNING"}, reads)
	var out struct {
		Chunk struct {
			Rows  []struct{ Job, Role, ReadFor *string }
			Locks []struct{ Kind, ReadFor *string }
		}
	}
	require.NoError(t, c.Do(ctx, `{ chunk(dataset: "src", dataid: "2026-03-02") { rows { job role readFor } locks { kind readFor } } }`, nil, &out))
	var rows []string
	for _, r := range out.Chunk.Rows {
		if *r.Role == "INPUT" {
			rows = append(rows, *r.Job+" for "+*r.ReadFor)
		} else {
			require.Nil(t, r.ReadFor)
		}
	}
	require.Equal(t, []string{"roll for 2026-03-03"}, rows, "only output 2026-03-03 was claimed: it reads 2026-03-02")
	listed, err := c.Chunks(ctx, client.ChunkFilter{Dataset: "src", Job: "roll"})
	require.NoError(t, err)
	var readRows []string
	for _, r := range listed {
		require.NotNil(t, r.ReadFor)
		readRows = append(readRows, r.DataID+" for "+*r.ReadFor)
	}
	require.Equal(t, []string{"2026-03-01 for 2026-03-03", "2026-03-02 for 2026-03-03", "2026-03-03 for 2026-03-03"}, readRows)
	require.NoError(t, runner.Complete(ctx, claim.Token))

	// Without mappings the job reads one to one again.
	_, err = c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "week"})
	require.NoError(t, err)
	j, err = c.Job(ctx, "j")
	require.NoError(t, err)
	require.Empty(t, j.Backend().InputMappings)
}

// TestRetentionRoundTrip: a dataset's own retention travels through
// GraphQL both ways (0, for ever, included), none stays none, an upsert
// without one drops it, and one out of bounds is refused.
func TestRetentionRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c := newClient(t, b.url, client.WithToken(b.token))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "a", Retention: &backends.Retention{EventsSeconds: 3600}}))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "b", Retention: &backends.Retention{EventsSeconds: 0}}))
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "c"}))
	ds, err := c.Datasets(ctx)
	require.NoError(t, err)
	require.Len(t, ds, 3)
	require.Equal(t, &backends.Retention{EventsSeconds: 3600}, ds[0].Backend().Retention)
	require.Equal(t, &backends.Retention{EventsSeconds: 0}, ds[1].Backend().Retention)
	require.Nil(t, ds[2].Backend().Retention)

	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "a"}))
	ds, err = c.Datasets(ctx)
	require.NoError(t, err)
	require.Nil(t, ds[0].Backend().Retention, "an upsert without a retention drops it")
	err = c.UpsertDataset(ctx, backends.Dataset{ID: "a", Retention: &backends.Retention{EventsSeconds: -1}})
	requireCode(t, err, backends.CodeInvalidArgument)
}
