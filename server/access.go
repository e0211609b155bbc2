package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler/transport"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
)

// access decides whether principal p may run a mutation with the given
// arguments; nil means yes.
type access func(p auth.Principal, args map[string]any) error

var (
	adminOnly access = func(p auth.Principal, _ map[string]any) error {
		if p.IsAdmin() {
			return nil
		}
		return backends.Forbidden("this operation needs an admin token; %q is a %s token", p.Name, p.Role)
	}
	// runnerClients lets runners take and drop resource locks (they are the
	// processes the locks coordinate) under their own name only: the
	// "client" argument must be the token's name or start with "<name>/",
	// so one runner cannot drop another's lock by naming its client.
	// Admins may use any client.
	runnerClients access = func(p auth.Principal, args map[string]any) error {
		if p.IsAdmin() {
			return nil
		}
		if !p.IsRunner() {
			return backends.Forbidden("this operation needs an admin or runner token; %q is a %s token", p.Name, p.Role)
		}
		client, _ := args["client"].(string)
		if client == p.Name || strings.HasPrefix(client, p.Name+"/") {
			return nil
		}
		return backends.Forbidden("runner token %q may lock and unlock only as client %q or %q", p.Name, p.Name, p.Name+"/<anything>")
	}
	// byJobArg lets admins and runners of the job named by the "job"
	// argument.
	byJobArg access = func(p auth.Principal, args map[string]any) error {
		job, _ := args["job"].(string)
		return mayOperate(p, job)
	}
	// byToken lets admins and runners of the job the claim token names. A
	// malformed token names no claim: STALE_CLAIM, as the store would say.
	byToken access = func(p auth.Principal, args map[string]any) error {
		token, _ := args["token"].(string)
		key, _, err := backends.ParseToken(token)
		if err != nil {
			return err
		}
		return mayOperate(p, key.Job)
	}
)

// byTokens lets admins, and runners of every job the claim tokens of a
// batch (tokens, or the tokens of items) name: one token of another job
// refuses the whole batch, nothing done. Malformed tokens name no job: the
// store answers each STALE_CLAIM.
var byTokens access = func(p auth.Principal, args map[string]any) error {
	var tokens []string
	switch v := args["tokens"].(type) {
	case []string:
		tokens = v
	case []any:
		for _, t := range v {
			s, _ := t.(string)
			tokens = append(tokens, s)
		}
	}
	if items, ok := args["items"].([]backends.FailItem); ok {
		for _, it := range items {
			tokens = append(tokens, it.Token)
		}
	}
	for _, t := range tokens {
		if key, _, err := backends.ParseToken(t); err == nil {
			if err := mayOperate(p, key.Job); err != nil {
				return err
			}
		}
	}
	return nil
}

func mayOperate(p auth.Principal, job string) error {
	if p.CanOperate(job) {
		return nil
	}
	return backends.Forbidden("token %q (%s) may not operate job %q", p.Name, p.Role, job)
}

// mutationAccess says who may run each mutation. A mutation missing here is
// admin only (TestEveryMutationHasAnAccessRule keeps the table complete).
var mutationAccess = map[string]access{
	"upsertDataset":    adminOnly,
	"upsertJob":        adminOnly,
	"upsertPool":       adminOnly,
	"pauseJob":         adminOnly,
	"resumeJob":        adminOnly,
	"deleteJob":        adminOnly,
	"deleteDataset":    adminOnly,
	"deletePool":       adminOnly,
	"setCredential":    adminOnly,
	"publish":          adminOnly,
	"resubmit":         adminOnly,
	"hold":             adminOnly,
	"publishRange":     adminOnly,
	"resubmitRange":    adminOnly,
	"holdRange":        adminOnly,
	"addPartitions":    adminOnly,
	"removePartitions": adminOnly,
	"findNext":         byJobArg,
	"claim":            byJobArg,
	"force":            byJobArg,
	"heartbeat":        byToken,
	"complete":         byToken,
	"fail":             byToken,
	"release":          byToken,
	"claimNext":        byJobArg,
	"completeMany":     byTokens,
	"failMany":         byTokens,
	"heartbeatMany":    byTokens,
	"lockResource":     runnerClients,
	"unlockResource":   runnerClients,
	"renewResource":    runnerClients,
}

// authorize checks every mutation field against mutationAccess before it
// runs. Queries and subscriptions are open to every authenticated principal
// (catalogChanges as events: the history names objects and actors, never a
// secret).
func authorize(ctx context.Context, next graphql.Resolver) (any, error) {
	fc := graphql.GetFieldContext(ctx)
	if fc == nil || fc.Object != "Mutation" {
		return next(ctx)
	}
	p, ok := auth.PrincipalFrom(ctx)
	if !ok {
		return nil, &backends.Error{Code: backends.CodeUnauthenticated, Message: "send Authorization: Bearer <token>"}
	}
	rule, ok := mutationAccess[fc.Field.Name]
	if !ok {
		rule = adminOnly
	}
	if err := rule(p, fc.Args); err != nil {
		return nil, err
	}
	return next(ctx)
}

// withPrincipal records p in ctx, and as the actor of the events it causes.
func withPrincipal(ctx context.Context, p auth.Principal) context.Context {
	return backends.WithActor(auth.WithPrincipal(ctx, p), p.Name)
}

var errUnauthenticated = &backends.Error{Code: backends.CodeUnauthenticated,
	Message: "missing or unknown token: send Authorization: Bearer <token> with a token from the server's tokens file"}

// authenticate resolves the principal of a request: Anonymous when the
// server runs open, else the token in its Authorization header.
func (s *Server) authenticate(authorization string) (auth.Principal, error) {
	if s.Open() {
		return auth.Anonymous, nil
	}
	token, ok := auth.BearerToken(authorization)
	if !ok {
		return auth.Principal{}, errUnauthenticated
	}
	p, ok := s.cfg.Tokens.Authenticate(token)
	if !ok {
		return auth.Principal{}, errUnauthenticated
	}
	return p, nil
}

// authenticated requires an authenticated principal on every GraphQL
// request and records it, and the job key header if any, in the request
// context. A websocket upgrade without an Authorization header may instead
// authenticate with its connection_init payload (wsInit): browsers cannot
// set headers on websockets.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		header := r.Header.Get("Authorization")
		switch p, err := s.authenticate(header); {
		case err == nil:
			ctx = withPrincipal(ctx, p)
		case header == "" && isUpgrade(r):
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="chunklock"`)
			s.writeError(w, http.StatusUnauthorized, backends.CodeUnauthenticated, errUnauthenticated.Message)
			return
		}
		if key := r.Header.Get(auth.JobKeyHeader); key != "" {
			ctx = auth.WithJobKey(ctx, key)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// wsCloseUnauthorized is the graphql-transport-ws close code for a refused
// connection_init.
const wsCloseUnauthorized = 4403

// wsInit authenticates a websocket whose upgrade request carried no
// Authorization header with the payload of its connection_init message:
// {"Authorization": "Bearer <token>"}.
func (s *Server) wsInit(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	if _, ok := auth.PrincipalFrom(ctx); ok {
		return ctx, nil, nil
	}
	p, err := s.authenticate(payload.Authorization())
	if err != nil {
		s.metrics.errorAnswered(backends.CodeUnauthenticated)
		ctx = transport.WithWebsocketCloseCode(ctx, wsCloseUnauthorized)
		return ctx, nil, &backends.Error{Code: backends.CodeUnauthenticated,
			Message: `UNAUTHENTICATED: send connection_init with the payload {"Authorization": "Bearer <token>"}`}
	}
	return withPrincipal(ctx, p), nil, nil
}

func isUpgrade(r *http.Request) bool { return r.Header.Get("Upgrade") != "" }
