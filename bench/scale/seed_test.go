package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd"
	"github.com/chunklock/chunklock/backends/postgres"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

func TestMain(m *testing.M) { teststores.Main(m) }

// A store seeded in bulk answers, through the API, exactly as a store into
// which the same history was put through the API: every row (fences and
// tokens included), the event log in order, partitions and their summary,
// chunks with their locks, and then the claims each job makes until it
// has nothing left, and a repeated completion of a seeded claim. Only
// times and actors differ (the seed's history is years old; its actors are
// named, the API's are anonymous).
func TestSeededStoreAnswersAsBuilt(t *testing.T) {
	l := newLayout(2, 12, 4, time.Now())
	for _, kind := range []string{"postgres", "etcd"} {
		t.Run(kind, func(t *testing.T) {
			open, _ := twinStore(t, kind)
			built := serveStore(t, open())
			require.NoError(t, createCatalog(t.Context(), built, l))
			buildThroughAPI(t, built, l)

			reopen, seed := twinStore(t, kind)
			first := serveStore(t, reopen())
			require.NoError(t, createCatalog(t.Context(), first, l))
			require.NoError(t, seed(l))
			seeded := serveStore(t, reopen()) // a new server: nothing cached from before the seed

			require.Equal(t, snapshot(t, built, l), snapshot(t, seeded, l))
			require.Equal(t, repeatCompletion(t, built, l), repeatCompletion(t, seeded, l))
			require.Equal(t, drain(t, built, l), drain(t, seeded, l))
		})
	}
}

// twinStore returns what opens a fresh store of kind (each call to open
// the same store) and what seeds it.
func twinStore(t *testing.T, kind string) (open func() backends.Store, seed func(layout) error) {
	ctx := t.Context()
	switch kind {
	case "postgres":
		dsn := teststores.PostgresDSN(t)
		schema := teststores.FreshSchema(t, "scale")
		open = func() backends.Store {
			b, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Schema: schema})
			require.NoError(t, err)
			s := engine.New(b)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}
		pg, err := openPG(ctx, dsn, schema)
		require.NoError(t, err)
		t.Cleanup(pg.pool.Close)
		return open, func(l layout) error { _, err := pg.seed(ctx, l, testWriter{t}); return err }
	default:
		srv := teststores.Etcd(t)
		prefix := teststores.EtcdPrefix("scale")
		open = func() backends.Store {
			cli, err := srv.Client()
			require.NoError(t, err)
			b, err := etcd.OpenClient(ctx, cli, etcd.Config{Prefix: prefix, MaxTxnOps: srv.MaxTxnOps()})
			require.NoError(t, err)
			s := engine.New(b)
			t.Cleanup(func() { _ = s.Close(); _ = cli.Close() })
			return s
		}
		e := &etcdStore{prefix: prefix}
		require.NoError(t, e.connect(srv.ClientURL()))
		t.Cleanup(e.close)
		return open, func(l layout) error {
			_, _, err := e.seed(ctx, l, false, testWriter{t})
			return err
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// serveStore serves a store's GraphQL API on 127.0.0.1 as chunklock serve
// does (open, age keys).
func serveStore(t *testing.T, st backends.Store) *api {
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = st, age.New()
	s, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return newAPI(hs.URL, 4)
}

// buildThroughAPI puts the layout's history into a store through the API,
// in the order the seed generates it: hour by hour, every publish, then
// every claim, then every completion.
func buildThroughAPI(t *testing.T, a *api, l layout) {
	ctx := t.Context()
	for h := range l.hours {
		for i := range l.pairs {
			require.NoError(t, a.do(ctx, `mutation($d: String!, $i: String!) { publish(dataset: $d, dataid: $i) { status } }`,
				map[string]any{"d": l.source(i), "i": l.dataid(h)}, nil))
		}
		var tokens []string
		for i := range l.pairs {
			if h >= l.consumed(i) {
				continue
			}
			var out struct{ Claim struct{ Token string } }
			require.NoError(t, a.do(ctx, `mutation($j: String!, $i: String!, $e: String!) { claim(job: $j, dataid: $i, executor: $e) { token } }`,
				map[string]any{"j": l.job(i), "i": l.dataid(h), "e": l.executor(i)}, &out))
			tokens = append(tokens, out.Claim.Token)
		}
		for _, tok := range tokens {
			require.NoError(t, a.do(ctx, `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": tok}, nil))
		}
	}
}

// snapshot renders what the API answers about the whole store, without
// times and actors.
func snapshot(t *testing.T, a *api, l layout) string {
	ctx := t.Context()
	var b strings.Builder
	var rows struct {
		Chunks struct {
			Edges []struct {
				Node struct {
					Dataset, Dataid, Role, Status, Executor, Reason, Token string
					Job, ReadFor, LeaseExpiresAt                           *string
					Attempt, Fence                                         int
					Locks                                                  []string
				}
			}
		}
	}
	require.NoError(t, a.do(ctx, `{ chunks(first: 1000) { edges { node { dataset dataid job role status attempt executor fence token
		leaseExpiresAt reason readFor locks } } } }`, nil, &rows))
	for _, e := range rows.Chunks.Edges {
		n := e.Node
		fmt.Fprintf(&b, "row %s %s %v %s %s a%d %s f%d %s lease=%v %q %v %v\n", n.Dataset, n.Dataid, deref(n.Job), n.Role, n.Status,
			n.Attempt, n.Executor, n.Fence, tokenClaim(t, n.Token), deref(n.LeaseExpiresAt), n.Reason, deref(n.ReadFor), n.Locks)
	}
	var events map[string]any
	require.NoError(t, a.do(ctx, `{ events(first: 1000) { edges { node { dataset dataid job role from to attempt executor reason readFor } } } }`, nil, &events))
	for _, e := range events["events"].(map[string]any)["edges"].([]any) {
		fmt.Fprintf(&b, "event %v\n", e.(map[string]any)["node"])
	}
	for i := range l.pairs {
		for _, ds := range []string{l.source(i), l.product(i)} {
			var parts map[string]any
			require.NoError(t, a.do(ctx, fmt.Sprintf(`{ partitions(dataset: %q, first: 1000) { edges { node { dataid status late } } }
				dataset(id: %q) { chunkCounts { total running ready failed resubmit hold } partitionSummary { missing late oldestMissing oldestLate truncated } } }`, ds, ds), nil, &parts))
			fmt.Fprintf(&b, "partitions %s %v\nsummary %s %v\n", ds, parts["partitions"], ds, parts["dataset"])
			for _, h := range []int{0, l.consumed(i) - 1, l.consumed(i), l.hours - 1} {
				var c map[string]any
				require.NoError(t, a.do(ctx, fmt.Sprintf(`{ chunk(dataset: %q, dataid: %q) { status rows { role job status } locks { kind job status } } }`,
					ds, l.dataid(h)), nil, &c))
				fmt.Fprintf(&b, "chunk %s %s %v\n", ds, l.dataid(h), c)
			}
		}
	}
	var claims map[string]any
	require.NoError(t, a.do(ctx, `{ claims { dataid } }`, nil, &claims))
	fmt.Fprintf(&b, "claims %v\n", claims)
	return b.String()
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// tokenClaim is what a claim token names: job, dataset, dataid and fence
// (its nonce is random).
func tokenClaim(t *testing.T, token string) string {
	if token == "" {
		return "no-token"
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, "ct1."))
	require.NoError(t, err, "token %q", token)
	require.True(t, strings.HasPrefix(token, "ct1."), "token %q", token)
	parts := strings.Split(string(raw), "/")
	require.Len(t, parts, 5, "token %q", token)
	require.Len(t, parts[4], 24, "nonce of token %q", token)
	return strings.Join(parts[:4], "/")
}

// repeatCompletion completes again the last claim of each job, whose
// answer a runner may have lost: the store answers as the first time.
func repeatCompletion(t *testing.T, a *api, l layout) []string {
	var out []string
	for i := range l.pairs {
		var row struct {
			Chunk struct{ Output struct{ Token string } }
		}
		require.NoError(t, a.do(t.Context(), fmt.Sprintf(`{ chunk(dataset: %q, dataid: %q) { output { token } } }`,
			l.product(i), l.dataid(l.consumed(i)-1)), nil, &row))
		var res map[string]any
		err := a.do(t.Context(), `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": row.Chunk.Output.Token}, &res)
		out = append(out, fmt.Sprint(res, err))
	}
	return out
}

// drain claims and completes each job's chunks until it has none left,
// and returns the dataids in the order claimed.
func drain(t *testing.T, a *api, l layout) []string {
	var out []string
	for i := range l.pairs {
		for {
			var c struct {
				FindNext *struct{ Token, Dataid string }
			}
			require.NoError(t, a.do(context.Background(), `mutation($j: String!) { findNext(job: $j, executor: "drain") { token dataid } }`,
				map[string]any{"j": l.job(i)}, &c))
			if c.FindNext == nil {
				break
			}
			out = append(out, l.job(i)+" "+c.FindNext.Dataid)
			require.NoError(t, a.do(t.Context(), `mutation($t: String!) { complete(token: $t) }`, map[string]any{"t": c.FindNext.Token}, nil))
		}
	}
	return out
}

// TestSeededRowsFillTheirPages: the PostgreSQL seed writes its rows at a
// fill factor of 100, as a store copy loads history, and leaves the
// table's own setting (migration 21's 50) as it found it. Here 2,394 rows
// take 67 pages; at the table's 50 they took 133.
func TestSeededRowsFillTheirPages(t *testing.T) {
	ctx := t.Context()
	l := newLayout(2, 400, 4, time.Now())
	dsn := teststores.PostgresDSN(t)
	schema := teststores.FreshSchema(t, "scale")
	b, err := postgres.Open(ctx, postgres.Config{DSN: dsn, Schema: schema})
	require.NoError(t, err)
	st := engine.New(b)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, createCatalog(ctx, serveStore(t, st), l))
	pg, err := openPG(ctx, dsn, schema)
	require.NoError(t, err)
	t.Cleanup(pg.pool.Close)
	_, err = pg.seed(ctx, l, testWriter{t})
	require.NoError(t, err)
	var ff string
	var rows, pages int64
	require.NoError(t, pg.pool.QueryRow(ctx, `SELECT coalesce((SELECT option_value FROM pg_options_to_table(reloptions) WHERE option_name = 'fillfactor'), '100'),
		(SELECT count(*) FROM status_rows), pg_relation_size('status_rows') / current_setting('block_size')::int FROM pg_class WHERE oid = 'status_rows'::regclass`).Scan(&ff, &rows, &pages))
	require.Equal(t, "50", ff, "the table's setting is back")
	t.Logf("%d rows in %d pages", rows, pages)
	require.Greater(t, rows/pages, int64(30), "%d rows in %d pages", rows, pages)
}
