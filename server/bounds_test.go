package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/99designs/gqlgen/graphql/introspection"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/lexer"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/server"
)

// hangGuard bounds each exchange of these tests: a server that works on a
// hostile query for minutes fails the test rather than stalling it. It is
// not a speed target (BenchmarkHostileQueries measures that).
const hangGuard = 60 * time.Second

// nestedFragments is a query of levels fragments each spreading the next
// twice, so that expanding them selects 2^levels times jobs { id }; pad
// blanks are added between fragments (commas are blanks in GraphQL).
func nestedFragments(levels, pad int) string {
	var b strings.Builder
	b.WriteString("{...F0}")
	for i := range levels {
		fmt.Fprintf(&b, " fragment F%d on Query {...F%d ...F%d}", i, i+1, i+1)
		b.WriteString(strings.Repeat(",", pad/levels))
	}
	fmt.Fprintf(&b, " fragment F%d on Query {jobs {id}}", levels)
	return b.String()
}

// repeatedSelection is { sel sel ... } with sel n times.
func repeatedSelection(sel string, n int) string {
	return "{" + strings.Repeat(" "+sel, n) + " }"
}

// aliased is { a0: __typename a1: __typename ... } with n aliases.
func aliased(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: __typename", i)
	}
	b.WriteString(" }")
	return b.String()
}

// nearMiB is how long a query may be for its POST body to stay under the
// default --max-body-bytes (1 MiB).
const nearMiB = 1<<20 - 64

// hostileQueries are the reported costly queries and their 1 MiB variants,
// each with the setting whose bound refuses it.
func hostileQueries() []struct{ name, query, setting string } {
	return []struct{ name, query, setting string }{
		{"30 levels of nested fragments", nestedFragments(30, 0), "--max-selections"},
		{"30 levels of nested fragments padded to 1 MiB", nestedFragments(30, nearMiB-1200), "--max-selections"},
		{"20000 __typename", repeatedSelection("__typename", 20000), "--max-tokens"},
		{"__typename up to 1 MiB", repeatedSelection("__typename", nearMiB/len(" __typename")), "--max-tokens"},
		{"a field name of 1 MiB", "{ " + strings.Repeat("a", nearMiB) + " }", "longer than 1024 bytes"},
		{"a mutation name of 1 MiB", "mutation { " + strings.Repeat("a", nearMiB) + " }", "longer than 1024 bytes"},
	}
}

// TestLongStringValuesPass: the name bound reads names only; a long string
// value is the store's to judge.
func TestLongStringValuesPass(t *testing.T) {
	store := storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0]
	s := newStack(t, store)
	desc := strings.Repeat("a", 3000)
	s.ok(admin, `mutation($d: String!) { upsertDataset(input: {id: "d", description: $d}) { id } }`, vars("d", desc))
	s.ok(admin, `mutation { upsertDataset(input: {id: "e", description: "`+desc+`"}) { id } }`, nil)
	require.Equal(t, "INVALID_ARGUMENT", s.fails(admin, `mutation { upsertDataset(input: {id: "f", description: "`+strings.Repeat("a", 5000)+`"}) { id } }`, nil),
		"the store bounds a description")
}

// TestHostileQueriesRefusedEarly: the reported costly queries, and 1 MiB
// variants of them, are refused by the early bounds, with INVALID_ARGUMENT
// and a message naming the setting, over POST (a reader), GET and on an
// open server (anyone on loopback).
func TestHostileQueriesRefusedEarly(t *testing.T) {
	store := storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0]
	s := newStack(t, store)
	open := newOpenStack(t, store)
	for _, q := range hostileQueries() {
		for _, via := range []struct {
			name   string
			stack  *stack
			who    string
			method string
		}{
			{"POST as reader", s, reader, http.MethodPost},
			{"POST on an open server", open, nobody, http.MethodPost},
			{"GET as reader", s, reader, http.MethodGet},
		} {
			if via.method == http.MethodGet && len(q.query) > 64<<10 {
				continue // beyond what a URL carries
			}
			r := via.stack.send(request{who: via.who, method: via.method, query: q.query, timeout: hangGuard})
			require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s, %s: %s", q.name, via.name, r.Body)
			require.Equal(t, "INVALID_ARGUMENT", r.code(t), "%s, %s", q.name, via.name)
			require.Contains(t, r.Errors[0].Message, q.setting, "%s, %s", q.name, via.name)
			require.Nil(t, r.Data, "%s, %s", q.name, via.name)
		}
	}
}

// tokensLong is a valid mutation of exactly n tokens (n >= 40), most of
// them items of a list.
func tokensLong(t *testing.T, n int) string {
	q := func(items int) string {
		return `mutation { upsertJob(input: {id: "x", inputs: [` + strings.Repeat(`"a" `, items) + `], output: "b"}) { jobKey } }`
	}
	fixed := countTokens(t, q(0))
	long := q(n - fixed)
	require.Equal(t, n, countTokens(t, long))
	return long
}

func countTokens(t *testing.T, query string) int {
	lx := lexer.New(&ast.Source{Input: query})
	n := 0
	for {
		tok, err := lx.ReadToken()
		require.NoError(t, err)
		if tok.Kind == lexer.EOF {
			return n
		}
		n++
	}
}

// TestQueryBoundsAtTheirLimits: a query exactly at each default bound is
// not refused by it; one more token, selection or alias is, with a message
// naming the bound.
func TestQueryBoundsAtTheirLimits(t *testing.T) {
	d := server.DefaultConfig()
	s := newStack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0])
	for _, c := range []struct {
		name      string
		at, over  string
		refusedBy string
	}{
		{"tokens", tokensLong(t, d.MaxTokens), tokensLong(t, d.MaxTokens+1), fmt.Sprintf("longer than %d tokens", d.MaxTokens)},
		{"selections", repeatedSelection("__typename", d.MaxSelections), repeatedSelection("__typename", d.MaxSelections+1),
			fmt.Sprintf("more than %d selections", d.MaxSelections)},
		{"aliases", aliased(d.MaxAliases), aliased(d.MaxAliases + 1), fmt.Sprintf("more than %d aliases", d.MaxAliases)},
	} {
		r := s.send(request{who: reader, query: c.at, timeout: hangGuard})
		require.NotContains(t, r.Body, "--max-", "%s: at the bound: %s", c.name, r.Body)
		r = s.send(request{who: reader, query: c.over, timeout: hangGuard})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, "%s: %s", c.name, r.Body)
		require.Equal(t, "INVALID_ARGUMENT", r.code(t), c.name)
		require.Contains(t, r.Errors[0].Message, c.refusedBy, c.name)
	}
	// The mutation at the token bound was refused for the reader's role
	// only; the others run.
	require.Equal(t, "FORBIDDEN", s.fails(reader, tokensLong(t, d.MaxTokens), nil))
	s.ok(reader, repeatedSelection("__typename", d.MaxSelections), nil)
	s.ok(reader, aliased(d.MaxAliases), nil)
}

// TestFragmentCycleRefusedEarly: a fragment that spreads itself, directly
// or through others, is refused by the early bound, naming the cycle, and
// so are two fragments of one name (the second would escape the count).
func TestFragmentCycleRefusedEarly(t *testing.T) {
	s := newStack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0])
	for query, cycle := range map[string]string{
		`{ ...A } fragment A on Query { jobs { id } ...A }`:                                                                "A -> A",
		`{ ...A } fragment A on Query { ...B } fragment B on Query { ... on Query { ...C } } fragment C on Query { ...B }`: "B -> C -> B",
		`{ __typename } fragment U on Query { ...U }`:                                                                      "U -> U",
	} {
		r := s.send(request{who: reader, query: query, timeout: hangGuard})
		require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
		require.Equal(t, "INVALID_ARGUMENT", r.code(t))
		require.Contains(t, r.Errors[0].Message, "spreads itself (through "+cycle+")")
	}
	r := s.send(request{who: reader, query: `{ ...F } fragment F on Query` + repeatedSelection("__typename", 4000) + ` fragment F on Query { jobs { id } }`, timeout: hangGuard})
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Body)
	require.Equal(t, "INVALID_ARGUMENT", r.code(t))
	require.Contains(t, r.Errors[0].Message, "two fragments are named F")
}

// fullIntrospection is the largest introspection query GraphQL clients
// send: every option of graphql-js's getIntrospectionQuery, with type
// references ten levels deep.
var fullIntrospection = func() string {
	typeRef := "kind name"
	for range 10 {
		typeRef = "kind name ofType { " + typeRef + " }"
	}
	return `query IntrospectionQuery {
  __schema {
    description
    queryType { name kind } mutationType { name kind } subscriptionType { name kind }
    types { ...FullType }
    directives { name description isRepeatable locations args(includeDeprecated: true) { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description specifiedByURL isOneOf
  fields(includeDeprecated: true) {
    name description args(includeDeprecated: true) { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason
  }
  inputFields(includeDeprecated: true) { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue isDeprecated deprecationReason }
fragment TypeRef on __Type { ` + typeRef + ` }`
}()

// TestOrdinaryQueriesPass: the playground's schema query, the largest
// introspection query clients send, and every query of chunklock's client
// (publish batches with their aliases included) pass the default bounds.
func TestOrdinaryQueriesPass(t *testing.T) {
	s := newStack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0])
	s.define()
	var schema struct{ QueryType struct{ Name string } }
	s.ok(reader, introspection.Query, nil).field(t, "__schema", &schema)
	require.Equal(t, "Query", schema.QueryType.Name)
	s.ok(reader, fullIntrospection, nil)

	ctx := t.Context()
	c, err := client.New(s.url, client.WithToken(s.tokens[admin]))
	require.NoError(t, err)
	dataids := make([]string, 60)
	for i := range dataids {
		dataids[i] = fmt.Sprintf("%03d", i)
	}
	require.NoError(t, c.Publish(ctx, "a", dataids))
	_, err = c.Datasets(ctx)
	require.NoError(t, err)
	_, err = c.Jobs(ctx)
	require.NoError(t, err)
	claim, err := c.FindNext(ctx, "ja", "e")
	require.NoError(t, err)
	require.NotNil(t, claim)
	_, err = c.Claims(ctx, "")
	require.NoError(t, err)
	rows, err := c.Chunks(ctx, client.ChunkFilter{})
	require.NoError(t, err)
	require.Len(t, rows, 62, "60 READY chunks of a, one of them and its output claimed")
	_, err = c.AllEvents(ctx, client.EventFilter{})
	require.NoError(t, err)
	_, err = c.LockGraph(ctx, "ja", "", dataids[1])
	require.NoError(t, err)
	require.NoError(t, c.Complete(ctx, claim.Token))
}

// TestWebsocketBounds: an operation sent over the websocket meets the same
// early bounds, and a message larger than --max-body-bytes closes
// the connection.
func TestWebsocketBounds(t *testing.T) {
	s := newStack(t, storeKinds[0].Open(t, backends.NewFakeClock(t0), 1)[0], withConfig(func(c *server.Config) {
		c.MaxBodyBytes = 256 << 10
	}))
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()
	ws := s.dialWS(ctx, reader)
	ws.expect("connection_ack")
	ws.subscribe("1", nestedFragments(30, 0))
	ws.subscribe("2", repeatedSelection("__typename", 20000))
	for _, want := range []string{"--max-selections", "--max-tokens"} {
		m := ws.expect("error")
		var errs []gqlError
		require.NoError(t, json.Unmarshal(m.Payload, &errs), "%s", m.Payload)
		require.Len(t, errs, 1, "%s", m.Payload)
		require.Equal(t, "INVALID_ARGUMENT", errs[0].Extensions["code"], "%s", m.Payload)
		require.Contains(t, errs[0].Message, want)
		ws.expect("complete")
	}

	ws = s.dialWS(ctx, reader)
	ws.expect("connection_ack")
	ws.subscribe("1", "subscription { events { dataid } }"+strings.Repeat(" ", 256<<10))
	_, err := ws.next()
	require.Equal(t, websocket.StatusMessageTooBig, websocket.CloseStatus(err), "err: %v", err)
}
