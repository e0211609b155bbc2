package server

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// The GraphQL over HTTP specification's media types and status codes
// (graphql-http's audit checks them; scripts/graphql-check.sh runs it).
//
// A client that accepts application/graphql-response+json (the dashboard,
// first) gets it, and with it HTTP 400, and no data entry, for a request
// that cannot run: not parsed, not valid, variables of the wrong type, or
// refused by a limit. Every other client (application/json, */*, no
// Accept: the Go client, the CLI, GraphiQL, scripts) gets
// application/json, and HTTP 200 for a document that does not parse or
// validate, as the specification asks; a request refused by one of the
// server's limits keeps its HTTP 422. A request that is not a GraphQL
// request at all (no query) is HTTP 400 either way.
const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// answerType is the media type to answer a request with Accept header
// accept.
func answerType(accept string) string {
	best, bestQ := mediaJSON, 0.0
	jsonQ := -1.0
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		switch mt {
		case mediaGraphQLResponse:
			if q > 0 && q > bestQ {
				best, bestQ = mediaGraphQLResponse, q
			}
		case mediaJSON:
			jsonQ = q
		}
	}
	if best == mediaGraphQLResponse && jsonQ > bestQ {
		return mediaJSON
	}
	return best
}

// refusedStatus is the HTTP status of an answer to a request that cannot
// run (errs are its errors, before the error presenter).
func refusedStatus(errs gqlerror.List, media string) int {
	if media == mediaGraphQLResponse {
		return http.StatusBadRequest
	}
	for _, e := range errs {
		if code, _ := e.Extensions["code"].(string); code != errcode.ParseFailed && code != errcode.ValidationFailed {
			return http.StatusUnprocessableEntity // a limit
		}
	}
	return http.StatusOK
}

// writeAnswer writes resp with status in media; without data when omitData
// (graphql-response+json's answer to a request that did not run).
func writeAnswer(w http.ResponseWriter, media string, status int, resp *graphql.Response, omitData bool) {
	w.Header().Set("Content-Type", media+"; charset=utf-8")
	w.WriteHeader(status)
	if !omitData {
		writeResponse(w, resp)
		return
	}
	_ = json.NewEncoder(w).Encode(struct {
		Errors     gqlerror.List  `json:"errors"`
		Extensions map[string]any `json:"extensions,omitempty"`
	}{resp.Errors, resp.Extensions})
}

// hasQuery reports whether a POST body names a query: a body without one
// is no GraphQL request (HTTP 400), unlike one whose query does not parse.
func hasQuery(body []byte) bool {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return true // readParams says what is wrong with it
	}
	_, ok := fields["query"]
	return ok
}
