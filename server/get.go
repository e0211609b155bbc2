package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/chunklock/chunklock/backends"
)

// getTransport runs queries sent with HTTP GET
// (?query=...&variables=...&operationName=...). Unlike gqlgen's transport.GET
// it sends every error through the error presenter, so each carries
// extensions.code, and it refuses mutations and subscriptions (which change
// state or stream) with INVALID_ARGUMENT.
type getTransport struct{}

var _ graphql.Transport = getTransport{}

func (getTransport) Supports(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("Upgrade") == ""
}

func (getTransport) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	ctx := r.Context()
	w.Header().Set("Content-Type", "application/json")
	fail := func(status int, err error) {
		w.WriteHeader(status)
		writeResponse(w, exec.DispatchError(ctx, gqlerror.List{{Message: err.Error(), Err: err}}))
	}
	q := r.URL.Query()
	raw := &graphql.RawParams{Query: q.Get("query"), OperationName: q.Get("operationName"), Headers: r.Header}
	raw.ReadTime.Start = graphql.Now()
	for name, into := range map[string]*map[string]any{"variables": &raw.Variables, "extensions": &raw.Extensions} {
		if v := q.Get(name); v != "" {
			dec := json.NewDecoder(strings.NewReader(v))
			dec.UseNumber()
			if err := dec.Decode(into); err != nil {
				fail(http.StatusBadRequest, backends.InvalidArgument("the %s parameter must be a JSON object", name))
				return
			}
		}
	}
	raw.ReadTime.End = graphql.Now()
	opCtx, errs := exec.CreateOperationContext(ctx, raw)
	if errs != nil {
		if errcode.GetErrorKind(errs) == errcode.KindProtocol {
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
		writeResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs))
		return
	}
	if opCtx.Operation.Operation != ast.Query {
		fail(http.StatusMethodNotAllowed, backends.InvalidArgument("GET runs queries only; send a %s with POST", opCtx.Operation.Operation))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, opCtx)
	writeResponse(w, responses(ctx))
}

func writeResponse(w http.ResponseWriter, resp *graphql.Response) {
	_ = json.NewEncoder(w).Encode(resp)
}
