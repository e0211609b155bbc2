package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/server"
)

// TestBadInput sends malformed, ill-typed, oversized, too deep and too
// costly requests: each is answered with the right code, never a 500 or a
// panic (send fails on any 5xx and on any error without extensions.code).
func TestBadInput(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0], withConfig(func(c *server.Config) {
			c.MaxBodyBytes = 64 << 10
		}))
		s.define()
		s.publish("a", "1")

		deep := "{ jobs { outputDataset { producer { outputDataset { producer { outputDataset { producer { outputDataset { producer { outputDataset { producer { outputDataset { id } } } } } } } } } } } } }"
		var aliases strings.Builder
		aliases.WriteString("mutation {")
		for i := range 500 {
			fmt.Fprintf(&aliases, " c%d: findNext(job: \"ja\", executor: \"e\") { token }", i)
		}
		aliases.WriteString(" }")
		var cheapAliases strings.Builder
		cheapAliases.WriteString("{")
		for i := range 1200 {
			fmt.Fprintf(&cheapAliases, " d%d: datasets { id }", i)
		}
		cheapAliases.WriteString(" }")

		// One page of 1000 rows with every field is fine; six at once are not.
		const page = `chunks(first: 1000) { edges { cursor node { dataset dataid job role status attempt executor fence token leaseExpiresAt updatedAt reason locks location } } }`
		s.ok(reader, "{ "+page+" }", nil)
		bigPages := "{ a: " + page + " b: " + page + " c: " + page + " d: " + page + " e: " + page + " f: " + page + " }"

		cases := []struct {
			name   string
			req    request
			code   string
			status int
		}{
			{"syntax error", request{query: `{ datasets { id }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"empty query", request{query: ``}, "INVALID_ARGUMENT", http.StatusOK},
			{"unknown field", request{query: `{ datasets { nope } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"wrong literal type", request{query: `{ chunks(first: "ten") { pageInfo { hasNextPage } } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"wrong variable type", request{query: `query($n: Int) { chunks(first: $n) { pageInfo { hasNextPage } } }`, vars: vars("n", "ten")}, "INVALID_ARGUMENT", http.StatusOK},
			{"int overflow literal", request{query: `{ chunks(first: 99999999999) { pageInfo { hasNextPage } } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"int overflow variable", request{query: `query($n: Int) { chunks(first: $n) { pageInfo { hasNextPage } } }`, vars: vars("n", 1e20)}, "INVALID_ARGUMENT", http.StatusOK},
			{"unknown enum variable", request{query: `query($s: Status) { chunks(status: $s) { pageInfo { hasNextPage } } }`, vars: vars("s", "SLEEPING")}, "INVALID_ARGUMENT", http.StatusOK},
			{"missing argument", request{query: `mutation { findNext(job: "ja") { token } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"page size zero", request{query: `{ chunks(first: 0) { pageInfo { hasNextPage } } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"page size too big", request{query: `{ events(first: 5000) { pageInfo { hasNextPage } } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"status NONE filter", request{query: `{ chunks(status: NONE) { pageInfo { hasNextPage } } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"bad cursor", request{query: `{ chunks(after: "%%%") { pageInfo { hasNextPage } } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"event cursor for chunks", request{query: `{ chunks(after: "ZTox") { pageInfo { hasNextPage } } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"unknown dataset", request{query: `{ chunk(dataset: "nope", dataid: "1") { status } }`}, "NOT_FOUND", http.StatusOK},
			{"unknown job", request{query: `mutation { findNext(job: "nope", executor: "e") { token } }`}, "NOT_FOUND", http.StatusOK},
			{"unknown job blockers", request{query: `{ blockers(job: "nope", dataid: "1") { kind } }`}, "NOT_FOUND", http.StatusOK},
			{"unknown lockGraph dataset", request{query: `{ lockGraph(dataset: "nope") { nodes { id } } }`}, "NOT_FOUND", http.StatusOK},
			{"invalid dataid", request{query: `{ chunk(dataset: "a", dataid: "no spaces") { status } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"too long dataid", request{query: `mutation($id: String!) { publish(dataset: "a", dataid: $id) { status } }`, vars: vars("id", strings.Repeat("9", 129))}, "INVALID_ARGUMENT", http.StatusOK},
			{"empty executor", request{query: `mutation { findNext(job: "ja", executor: "") { token } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"malformed token", request{query: `mutation { complete(token: "garbage") }`}, "STALE_CLAIM", http.StatusOK},
			{"malformed token as runner", request{who: runnerA, query: `mutation { heartbeat(token: "ct1.!!!") { token } }`}, "STALE_CLAIM", http.StatusOK},
			{"too deep", request{query: deep}, "INVALID_ARGUMENT", http.StatusUnprocessableEntity},
			{"500 aliased findNext", request{query: aliases.String()}, "INVALID_ARGUMENT", http.StatusUnprocessableEntity},
			{"1200 aliased cheap queries", request{query: cheapAliases.String()}, "INVALID_ARGUMENT", http.StatusUnprocessableEntity},
			{"big pages too costly together", request{query: bigPages}, "INVALID_ARGUMENT", http.StatusUnprocessableEntity},
			{"unknown operation name", request{rawBody: `{"query": "query A { jobs { id } } query B { datasets { id } }", "operationName": "C"}`}, "INVALID_ARGUMENT", http.StatusOK},
			{"two operations, no name", request{query: `query A { jobs { id } } query B { datasets { id } }`}, "INVALID_ARGUMENT", http.StatusOK},
			{"body not JSON", request{rawBody: `query { jobs { id } }`}, "INVALID_ARGUMENT", http.StatusBadRequest},
			{"body JSON but not an object", request{rawBody: `[1, 2, 3]`}, "INVALID_ARGUMENT", http.StatusBadRequest},
			{"variables not an object", request{rawBody: `{"query": "{ jobs { id } }", "variables": 7}`}, "INVALID_ARGUMENT", http.StatusBadRequest},
			{"oversized body", request{rawBody: `{"query": "` + strings.Repeat(" ", 70<<10) + `{ jobs { id } }"}`}, "INVALID_ARGUMENT", http.StatusRequestEntityTooLarge},
			{"wrong content type", request{query: `{ jobs { id } }`, ctype: "text/plain"}, "INVALID_ARGUMENT", http.StatusUnsupportedMediaType},
			{"wrong method", request{method: http.MethodPut}, "INVALID_ARGUMENT", http.StatusMethodNotAllowed},
			{"mutation over GET", request{method: http.MethodGet, query: `mutation { publish(dataset: "a", dataid: "7") { status } }`}, "INVALID_ARGUMENT", http.StatusMethodNotAllowed},
			{"query over GET", request{method: http.MethodGet, query: `{ jobs { id } }`}, "", http.StatusOK},
			{"no query", request{rawBody: `{"qeury": "{ jobs { id } }"}`}, "INVALID_ARGUMENT", http.StatusBadRequest},
		}
		for _, c := range cases {
			if c.req.who == "" {
				c.req.who = admin
			}
			r := s.send(c.req)
			require.Equal(t, c.status, r.Status, "%s: %s", c.name, r.Body)
			if c.code == "" {
				require.Empty(t, r.Errors, "%s: %s", c.name, r.Body)
				continue
			}
			require.Equal(t, c.code, r.code(t), "%s: %s", c.name, r.Body)
			require.NotContains(t, r.Body, "goroutine", c.name)
		}
		// None of the 500 aliased findNext calls claimed anything.
		require.Equal(t, "NONE", s.chunk("b", "1").Status)
		// A GET query works; a GET with bad variables does not.
		req, err := http.NewRequest(http.MethodGet, s.url+"/graphql?query=%7Bjobs%7Bid%7D%7D&variables=nope", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+s.tokens[admin])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
}

// TestIntrospectionSwitch: introspection can be turned off; field
// suggestions go with it.
func TestIntrospectionSwitch(t *testing.T) {
	store := storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0]
	on := newStack(t, store)
	var schema struct{ QueryType struct{ Name string } }
	on.ok(reader, `{ __schema { queryType { name } } }`, nil).field(t, "__schema", &schema)
	require.Equal(t, "Query", schema.QueryType.Name)
	r := on.send(request{who: reader, query: `{ dataset { i } }`})
	require.Contains(t, r.Errors[0].Message, "Did you mean")

	off := newStack(t, store, withConfig(func(c *server.Config) { c.Introspection = false }))
	require.Equal(t, "FORBIDDEN", off.fails(reader, `{ __schema { queryType { name } } }`, nil))
	require.Equal(t, "FORBIDDEN", off.fails(reader, `{ __type(name: "Job") { name } }`, nil))
	r = off.send(request{who: reader, query: `{ datasets { i } }`})
	require.Equal(t, "INVALID_ARGUMENT", r.code(t))
	require.NotContains(t, r.Errors[0].Message, "Did you mean")
	off.ok(reader, `{ datasets { id __typename } }`, nil)
}
