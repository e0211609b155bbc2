package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/internal/teststores"
)

// TestGraphQLOverHTTPAnswers: the GraphQL over HTTP specification's media
// types and status codes. A client accepting
// application/graphql-response+json gets it, and 400 without a data entry
// for a document that does not parse or validate or whose variables do not
// fit, or that a limit refuses; a client of application/json (the Go client,
// the CLI, GraphiQL) or of anything else gets application/json and 200 for
// the same documents, as before a limit's 422; no query at all is 400.
func TestGraphQLOverHTTPAnswers(t *testing.T) {
	s := newOpenStack(t, teststores.Memory(backends.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))))
	deep := "{ jobs " + strings.Repeat("{ inputDatasets { producer ", 8) + "{ id }" + strings.Repeat(" } }", 8) + " }" // deeper than MaxDepth
	send := func(accept, body string) (int, string, map[string]json.RawMessage) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.url+"/graphql", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var out map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &out), "%s", raw)
		return resp.StatusCode, resp.Header.Get("Content-Type"), out
	}
	q := func(query string) string {
		b, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"n": "ten"}})
		return string(b)
	}
	const gr = "application/graphql-response+json"
	for _, c := range []struct {
		name, accept, body string
		status             int
		media              string
		data               bool
	}{
		{"ok, graphql-response", gr, q(`{ __typename }`), 200, gr, true},
		{"ok, json", "application/json", q(`{ __typename }`), 200, "application/json", true},
		{"ok, no Accept", "", q(`{ __typename }`), 200, "application/json", true},
		{"ok, both, graphql-response first", gr + ", application/json;q=0.9", q(`{ __typename }`), 200, gr, true},
		{"ok, json preferred", gr + ";q=0.5, application/json", q(`{ __typename }`), 200, "application/json", true},
		{"parse, graphql-response", gr, q(`{`), 400, gr, false},
		{"parse, json", "application/json", q(`{`), 200, "application/json", true},
		{"parse, anything", "*/*", q(`{`), 200, "application/json", true},
		{"validation, graphql-response", gr, q(`{ nope }`), 400, gr, false},
		{"validation, json", "application/json", q(`{ nope }`), 200, "application/json", true},
		{"variables, graphql-response", gr, q(`query($n: Int) { chunks(first: $n) { pageInfo { hasNextPage } } }`), 400, gr, false},
		{"variables, json", "application/json", q(`query($n: Int) { chunks(first: $n) { pageInfo { hasNextPage } } }`), 200, "application/json", true},
		{"limit, graphql-response", gr, q(deep), 400, gr, false},
		{"limit, json", "application/json", q(deep), 422, "application/json", true},
		{"no query, graphql-response", gr, `{"qeury": "{ __typename }"}`, 400, gr, false},
		{"no query, json", "application/json", `{"qeury": "{ __typename }"}`, 400, "application/json", true},
	} {
		status, media, out := send(c.accept, c.body)
		require.Equal(t, c.status, status, c.name)
		require.Contains(t, media, c.media, c.name)
		_, hasData := out["data"]
		require.Equal(t, c.data, hasData, "%s: data entry", c.name)
		if c.status != 200 || c.name[:2] != "ok" {
			require.Contains(t, string(out["errors"]), `"code":"INVALID_ARGUMENT"`, c.name)
		}
	}
}
