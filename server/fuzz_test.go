package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// FuzzHandler sends arbitrary bodies (POST) and query strings (GET) to the
// GraphQL endpoint as an admin. Whatever arrives, the answer is never a 5xx
// and never a panic, it is JSON, and every error in it carries
// extensions.code. `go test` runs the seed corpus only; run it longer with
// `go test ./server -run '^$' -fuzz FuzzHandler -fuzztime 30s`.
func FuzzHandler(f *testing.F) {
	for _, seed := range []string{
		`{"query": "{ datasets { id } }"}`,
		`{"query": "mutation { publish(dataset: \"a\", dataid: \"1\") { status } }"}`,
		`{"query": "mutation($j: String!) { findNext(job: $j, executor: \"e\") { token inputs { secret } } }", "variables": {"j": "ja"}}`,
		`{"query": "{ chunks(first: 2) { edges { cursor node { dataid locks } } pageInfo { endCursor } } }"}`,
		`{"query": "{ chunks(after: \"YzphADAwMTEAT1VUUFVUAA\") { edges { node { dataid } } } }"}`,
		`{"query": "{ events(after: \"ZTox\") { edges { node { from to } } } }"}`,
		`{"query": "{ lockGraph(dataid: \"1\") { nodes { id status } edges { locks } } }"}`,
		`{"query": "mutation { complete(token: \"ct1.amEvYi8xLzEvMDA\") }"}`,
		`{"query": "mutation { lockResource(client: \"c\", resource: \"r\", mode: WRITE, ttlSeconds: -1) { id } }"}`,
		`{"query": "{ __schema { types { name } } }"}`,
		`{"query": "{ datasets { id }", "variables": null}`,
		`{"query": 7}`,
		`{"query": "query($x: [[Int!]!]) { jobs { id } }", "variables": {"x": [[1, null]]}}`,
		`{"query": "{ a: jobs { id } ...F } fragment F on Query { ...F }"}`,
		`{"query": "{...F0} fragment F0 on Query {...F1 ...F1} fragment F1 on Query {...F2 ...F2} fragment F2 on Query {jobs {id}}"}`,
		`{"query": "subscription { events { dataid } }"}`,
		`{"query": "mutation { upsertDataset(input: {id: \"tz\", partitions: {kind: DAILY, start: \"2026-01-01\", timezone: \"posix/Europe/Berlin\", lagSeconds: 9223372036}}) { id } }"}`,
		`{"query": "mutation { upsertDataset(input: {id: \"m\", partitions: {kind: WEEKLY, start: \"0001-W01\", deadlineSeconds: 0}}) { partitionSummary { missing late truncated } } }"}`,
		`{"query": "{ partitions(dataset: \"p\", status: NONE, late: true, first: 3) { edges { cursor node { dataid windowEnd late } } pageInfo { endCursor } } }"}`,
		`{"query": "{ partitions(dataset: \"s\", from: \"eu\", after: \"cDp1cw\") { edges { node { dataid status } } } }"}`,
		`{"query": "{ a: dataset(id: \"p\") { partitionSummary { at missing oldestLate truncated } } b: datasets { partitions { values } partitionSummary { late } } }"}`,
		`{"query": "mutation { a: holdRange(dataset: \"p\", from: \"2026-01-01\", to: \"2026-01-02\") { changed skipped { code } } }"}`,
		`{"query": "mutation { a: publishRange(dataset: \"p\", from: \"2026-01-02\", to: \"2026-01-01\") { changed } b: resubmitRange(dataset: \"a\", from: \"1\", to: \"9\", cascade: true) { unchanged } }"}`,
		`[]`,
		`null`,
		"\x00\xff",
	} {
		f.Add(seed, false)
	}
	for _, seed := range []string{
		"query=%7Bjobs%7Bid%7D%7D",
		"query=mutation%7Bhold(dataset%3A%22a%22%2Cdataid%3A%221%22)%7Bstatus%7D%7D",
		"query=%7Bjobs%7Bid%7D%7D&variables=%7B",
		"query=%7Bjobs%7Bid%7D%7D&extensions=%5B%5D",
		"variables=%7B%7D",
		"%zz",
	} {
		f.Add(seed, true)
	}

	h, token := adminHandler(f)
	f.Fuzz(func(t *testing.T, in string, get bool) {
		var req *http.Request
		if get {
			req = httptest.NewRequest(http.MethodGet, "/graphql", nil)
			req.URL.RawQuery = in
		} else {
			req = httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(in))
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("status %d for %q: %s", rec.Code, in, rec.Body)
		}
		var resp struct{ Errors []gqlError }
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("the answer to %q is not JSON (%v): %s", in, err, rec.Body)
		}
		for _, e := range resp.Errors {
			if e.Extensions["code"] == nil {
				t.Fatalf("an error without extensions.code for %q: %s", in, rec.Body)
			}
			if e.Extensions["code"] == "INTERNAL" {
				t.Fatalf("INTERNAL for %q: %s", in, rec.Body)
			}
		}
	})
}

// adminHandler builds a server over a memory store holding datasets a, b,
// c, p (DAILY from 2025-12-01) and s (STATIC us, eu, apac), jobs ja
// (a -> b) and jb (b -> c) and chunk a/1, and returns its
// handler, to call in-process, and an admin token.
func adminHandler(f testing.TB) (http.Handler, string) {
	ctx := f.Context()
	store := teststores.Memory(backends.NewFakeClock(t0))
	f.Cleanup(func() { _ = store.Close() })
	for _, d := range []backends.Dataset{{ID: "a"}, {ID: "b"}, {ID: "c"},
		{ID: "p", Partitions: &partition.Def{Kind: partition.Daily, Start: "2025-12-01"}},
		{ID: "s", Partitions: &partition.Def{Kind: partition.Static, Values: []string{"us", "eu", "apac"}}}} {
		d.Location = "/" + d.ID + "/{dataid}"
		if _, err := store.UpsertDataset(ctx, d); err != nil {
			f.Fatal(err)
		}
	}
	for _, j := range []backends.Job{{ID: "ja", Inputs: []string{"a"}, Output: "b"}, {ID: "jb", Inputs: []string{"b"}, Output: "c"}} {
		if _, err := store.UpsertJob(ctx, j); err != nil {
			f.Fatal(err)
		}
	}
	if _, err := store.Publish(ctx, "a", "1"); err != nil {
		f.Fatal(err)
	}
	token, entry, err := auth.NewToken("fuzz", auth.RoleAdmin, nil)
	if err != nil {
		f.Fatal(err)
	}
	tokens, err := auth.ParseTokens([]byte("- name: fuzz\n  sha256: " + entry.SHA256 + "\n  role: admin\n"))
	if err != nil {
		f.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring, cfg.Tokens = store, age.New(), tokens
	srv, err := server.New(cfg)
	if err != nil {
		f.Fatal(err)
	}
	return srv.Handler(), token
}
