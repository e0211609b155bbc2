package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/chunklock/chunklock/backends"
)

// httpTransport runs operations sent over plain HTTP: POST with a JSON body
// {"query", "variables", "operationName", "extensions"}, and GET with the
// same as URL parameters (?query=...&variables=...). Unlike gqlgen's
// transports it sends every error through the error presenter, so each
// carries extensions.code, and it refuses at once, with INVALID_ARGUMENT,
// what the request cannot run: a subscription, which streams and so needs
// the websocket transport (gqlgen's POST would hold the request until the
// first event), and over GET a mutation, which changes state.
type httpTransport struct{}

var _ graphql.Transport = httpTransport{}

func (httpTransport) Supports(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodPost) && r.Header.Get("Upgrade") == ""
}

func (httpTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	media := answerType(r.Header.Get("Accept")) // see gqlhttp.go
	fail := func(status int, err error) {
		writeAnswer(w, media, status, exec.DispatchError(ctx, gqlerror.List{{Message: err.Error(), Err: err}}), media == mediaGraphQLResponse)
	}
	raw, err := readParams(r)
	if err != nil {
		fail(http.StatusBadRequest, err)
		return
	}
	opCtx, errs := exec.CreateOperationContext(ctx, raw)
	if errs != nil {
		status := http.StatusOK
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			status = refusedStatus(errs, media)
		}
		writeAnswer(w, media, status, exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs), media == mediaGraphQLResponse && status != http.StatusOK)
		return
	}
	switch op := opCtx.Operation.Operation; {
	case op == ast.Subscription:
		fail(http.StatusBadRequest, backends.InvalidArgument(
			"subscriptions need the websocket transport: open a websocket to /graphql with the graphql-transport-ws protocol (POST runs queries and mutations, GET queries)"))
		return
	case op == ast.Mutation && r.Method == http.MethodGet:
		fail(http.StatusMethodNotAllowed, backends.InvalidArgument("GET runs queries only; send a mutation with POST"))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, opCtx)
	writeAnswer(w, media, http.StatusOK, responses(ctx), false)
}

// readParams reads the operation of a POST body or GET URL.
func readParams(r *http.Request) (*graphql.RawParams, error) {
	raw := &graphql.RawParams{Headers: r.Header}
	raw.ReadTime.Start = graphql.Now()
	defer func() { raw.ReadTime.End = graphql.Now() }()
	notGraphQL := backends.InvalidArgument(`the request body is not a GraphQL request: send JSON {"query": "...", "variables": {...}, "operationName": "..."}`)
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(r.Body)
		if err != nil || decodeJSON(bytes.NewReader(body), raw) != nil || !hasQuery(body) {
			return nil, notGraphQL
		}
		return raw, nil
	}
	q := r.URL.Query()
	if !q.Has("query") {
		return nil, backends.InvalidArgument("a GET request needs the query in its query parameter: /graphql?query={...}")
	}
	raw.Query, raw.OperationName = q.Get("query"), q.Get("operationName")
	for name, into := range map[string]*map[string]any{"variables": &raw.Variables, "extensions": &raw.Extensions} {
		if v := q.Get(name); v != "" {
			if decodeJSON(strings.NewReader(v), into) != nil {
				return nil, backends.InvalidArgument("the %s parameter must be a JSON object", name)
			}
		}
	}
	return raw, nil
}

// decodeJSON decodes one JSON value, numbers as json.Number (as gqlgen's
// transports do, so that large integers keep their digits).
func decodeJSON(r io.Reader, into any) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	return dec.Decode(into)
}

func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	_ = json.NewEncoder(w).Encode(resp)
}
