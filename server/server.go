// Package server is chunklock's HTTP surface: the GraphQL handler (with its
// transports, limits, authentication, authorization and error presenter),
// the GraphiQL playground, health and readiness probes, Prometheus metrics,
// and the lease reaper and webhook alerts (package webhook) that run beside
// them.
//
//	/          GraphiQL playground (package ui: embedded, no CDN)
//	/ui        dashboard (package ui)
//	/assets/   the pages' scripts and stylesheets
//	/graphql   GraphQL: POST (queries and mutations), GET (queries), websocket
//	           graphql-transport-ws (any operation; subscriptions need it)
//	/healthz   the process is up
//	/readyz    the store answers (with a warning when it nears its quota)
//	/metrics   Prometheus metrics
//
// # Keyrings
//
// A server holds one keyring per kind. Config.Keyring (the --keys setting)
// makes the keys of new jobs; Config.Keyrings adds others; the age keyring
// is always added, since it needs no service and no secret. Every job
// records the kind of its key (Job.Key.Kind, Credential.KeyKind), and its
// secrets are encrypted and decrypted only by the keyring of that kind.
// Switching the default from age to Vault therefore keeps every age job
// working; a job whose keyring the server does not hold (a Vault job on a
// server started without --keys vault://...) answers UNAVAILABLE with the
// setting to fix, never a wrong decryption.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/chunklock/chunklock/auth"
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/graph"
	"github.com/chunklock/chunklock/keys"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/resolvers"
	"github.com/chunklock/chunklock/ui"
	"github.com/chunklock/chunklock/webhook"
)

// Config configures a Server.
type Config struct {
	Store backends.Store
	// Keyring makes the keys of new jobs.
	Keyring keys.Keyring
	// Keyrings are further keyrings, for jobs whose keys another kind of
	// keyring made; each kind at most once, Keyring's included. The age
	// keyring is added when no keyring is of kind age.
	Keyrings []keys.Keyring
	// Tokens are the accepted bearer tokens. With none the server runs
	// open (every request is an admin named "anonymous"), which Serve
	// allows on a loopback address only.
	Tokens *auth.Tokens
	Logger *slog.Logger
	// Introspection serves the schema to clients (the playground needs it).
	// Without it, error messages do not suggest field names either.
	Introspection bool
	// MaxBodyBytes bounds a request body; larger requests get 413.
	MaxBodyBytes int64
	// RequestTimeout bounds each query and mutation.
	RequestTimeout time.Duration
	// MaxComplexity bounds an operation's cost (see costs.go).
	MaxComplexity int
	// SummaryMaxAge is how long a dataset's partition summary is shared by
	// every request (and the gauges) at most: a mutation through this
	// server ends the sharing at once, SummaryMaxAge bounds it for the
	// changes made through other servers (see resolvers.Summaries).
	SummaryMaxAge time.Duration
	// MaxDepth bounds how deeply an operation's selections nest.
	MaxDepth int
	// MaxTokens, MaxSelections and MaxAliases bound a query before it is
	// validated or its cost computed, steps whose work grows faster than
	// the query (see queryBounds): its length in tokens, and its
	// selections (fields, fragment spreads, inline fragments) and aliases
	// with fragments expanded where they are spread.
	MaxTokens     int
	MaxSelections int
	MaxAliases    int
	// ReaperInterval is how often expired leases are failed.
	ReaperInterval time.Duration
	// RetainEvents is how long events are kept: older ones are pruned in
	// the background (retention.go), except those of a dataset with its
	// own retention and those a webhook (Alerts) has not delivered; 0
	// keeps them (a dataset's own retention still applies). Catalog
	// changes are never pruned.
	RetainEvents time.Duration
	// PruneInterval is how often the event log is swept for events past
	// their retention.
	PruneInterval time.Duration
	// ShutdownTimeout bounds how long Serve waits for requests in flight.
	ShutdownTimeout time.Duration
	// Alerts, when set, delivers webhook alerts while Serve runs; its
	// delivery metrics join /metrics.
	Alerts *webhook.Dispatcher
	// Space, when set, tells the store's size against its quota (the
	// embedded store): gauges at /metrics, and a warning line in /readyz
	// when SpaceWarning has one.
	Space func() StoreSpace
	// SpaceWarning describes a space worth a warning (near the quota, or
	// past it) with what to do; "" when it is not (embedded.Space.Warning).
	SpaceWarning func(StoreSpace) string
}

// DefaultConfig returns the defaults of every limit; Store and Keyring
// still need to be set.
func DefaultConfig() Config {
	return Config{
		Introspection:   true,
		MaxBodyBytes:    1 << 20,
		RequestTimeout:  30 * time.Second,
		MaxComplexity:   1000,
		SummaryMaxAge:   resolvers.DefaultSummaryMaxAge,
		MaxDepth:        12,
		MaxTokens:       5000,
		MaxSelections:   500,
		MaxAliases:      100,
		ReaperInterval:  5 * time.Second,
		PruneInterval:   time.Minute,
		ShutdownTimeout: 15 * time.Second,
	}
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	switch {
	case c.Store == nil:
		return errors.New("server: no store configured")
	case c.Keyring == nil:
		return errors.New("server: no keyring configured")
	case keyringsClash(c.Keyring, c.Keyrings) != "":
		return errors.New("server: " + keyringsClash(c.Keyring, c.Keyrings))
	case c.MaxBodyBytes < 1024:
		return fmt.Errorf("server: max body bytes %d is below 1024; GraphQL requests would not fit", c.MaxBodyBytes)
	case c.RequestTimeout < 0:
		return errors.New("server: request timeout must not be negative (0 means none)")
	case c.MaxComplexity < claimCost:
		return fmt.Errorf("server: max complexity %d is below %d, the cost of one findNext", c.MaxComplexity, claimCost)
	case c.SummaryMaxAge <= 0:
		return errors.New("server: --summary-max-age must be positive (a partition summary is shared for at most that long), such as 5s")
	case c.MaxDepth < 4:
		return fmt.Errorf("server: max depth %d is below 4; ordinary queries nest that deep", c.MaxDepth)
	case c.MaxTokens < minTokens:
		return fmt.Errorf("server: max tokens %d is below %d; ordinary queries need about that many (the client's publish requests have 535)", c.MaxTokens, minTokens)
	case c.MaxSelections < minSelections:
		return fmt.Errorf("server: max selections %d is below %d; ordinary queries need about that many (the playground's schema query has 193)", c.MaxSelections, minSelections)
	case c.MaxAliases < minAliases:
		return fmt.Errorf("server: max aliases %d is below %d; chunklock's client publishes that many chunks per request, each under an alias", c.MaxAliases, minAliases)
	case c.ReaperInterval <= 0:
		return errors.New("server: reaper interval must be positive")
	case c.RetainEvents < 0:
		return errors.New("server: --retain-events must not be negative (0 keeps events for ever)")
	case c.PruneInterval <= 0:
		return errors.New("server: the prune interval must be positive")
	case c.ShutdownTimeout <= 0:
		return errors.New("server: shutdown timeout must be positive")
	case (c.Space == nil) != (c.SpaceWarning == nil):
		return errors.New("server: Space and SpaceWarning go together")
	}
	return nil
}

// keyringsClash describes a missing keyring or two keyrings of one kind,
// or returns "".
func keyringsClash(def keys.Keyring, more []keys.Keyring) string {
	seen := map[string]bool{def.Kind(): true}
	for i, k := range more {
		if k == nil {
			return fmt.Sprintf("keyring %d of Keyrings is nil", i+1)
		}
		if seen[k.Kind()] {
			return fmt.Sprintf("two keyrings of kind %q; give each kind once", k.Kind())
		}
		seen[k.Kind()] = true
	}
	return ""
}

// withAge returns more, with the age keyring added when neither def nor
// more is of kind age.
func withAge(def keys.Keyring, more []keys.Keyring) []keys.Keyring {
	if def.Kind() == age.Kind {
		return more
	}
	for _, k := range more {
		if k.Kind() == age.Kind {
			return more
		}
	}
	return append(slices.Clip(more), age.New())
}

// Server serves chunklock over HTTP.
type Server struct {
	cfg      Config
	log      *slog.Logger
	registry *prometheus.Registry
	metrics  *metrics
	handler  http.Handler
	// streams counts websocket connections, which http.Server.Shutdown
	// neither closes nor waits for.
	streams sync.WaitGroup
}

// New builds a server.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, registry: prometheus.NewRegistry()}
	s.metrics = newMetrics(s.registry)
	summaries := resolvers.NewSummaries(cfg.Store, cfg.SummaryMaxAge, cfg.Logger)
	s.registry.MustRegister(newPartitionGauges(cfg.Store, summaries, cfg.Logger))
	if cfg.Alerts != nil {
		s.registry.MustRegister(cfg.Alerts)
	}
	if cfg.Space != nil {
		s.registry.MustRegister(newSpaceCollector(cfg.Space))
	}
	res := resolvers.New(resolvers.Config{Store: cfg.Store, Keyring: cfg.Keyring, Keyrings: withAge(cfg.Keyring, cfg.Keyrings),
		Logger: cfg.Logger, Metrics: s.metrics, Summaries: summaries})

	mux := http.NewServeMux()
	mux.Handle("/graphql", s.graphqlEndpoint(s.graphql(res, summaries)))
	ui.Register(mux) // GET / (playground), /ui (dashboard), /assets/
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	s.handler = mux
	if s.Open() {
		s.handler = loopbackHostOnly(mux)
	}
	return s, nil
}

// loopbackHostOnly guards a server running open (no tokens, loopback
// only): a request must name a loopback host. Otherwise a web page whose
// domain re-resolves to 127.0.0.1 (DNS rebinding) could use the browser
// that loaded it as an anonymous admin.
func loopbackHostOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if ip := net.ParseIP(host); !(strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback())) {
			http.Error(w, "chunklock runs open (no tokens): it answers only requests addressed to a loopback host such as 127.0.0.1 or localhost", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Open tells whether the server runs without authentication.
func (s *Server) Open() bool { return s.cfg.Tokens.Len() == 0 }

// graphql builds the gqlgen handler: explicit transports, the query cache,
// limits (the early query bounds first), introspection, dataloaders,
// authorization, the error presenter and the panic handler.
func (s *Server) graphql(res *resolvers.Resolver, summaries *resolvers.Summaries) http.Handler {
	srv := handler.New(graph.NewExecutableSchema(graph.Config{Resolvers: res, Complexity: complexity(s.cfg.MaxComplexity)}))
	wsReadLimit := s.cfg.MaxBodyBytes
	srv.AddTransport(transport.Websocket{
		InitFunc:              s.wsInit,
		InitTimeout:           10 * time.Second,
		KeepAlivePingInterval: 15 * time.Second,
		PingPongInterval:      15 * time.Second,
		PayloadReadLimit:      &wsReadLimit,
		ErrorFunc: func(_ context.Context, err error) {
			s.log.Debug("websocket error", "err", err)
		},
	})
	srv.AddTransport(httpTransport{})
	cache := lru.New[*ast.QueryDocument](1000)
	srv.SetQueryCache(cache)
	srv.Use(queryBounds{maxTokens: s.cfg.MaxTokens, maxSelections: s.cfg.MaxSelections, maxAliases: s.cfg.MaxAliases, cache: cache})
	srv.SetParserTokenLimit(s.cfg.MaxTokens)
	if s.cfg.Introspection {
		srv.Use(extension.Introspection{})
	} else {
		srv.SetDisableSuggestion(true)
	}
	srv.Use(&costLimit{max: s.cfg.MaxComplexity})
	srv.Use(depthLimit{max: s.cfg.MaxDepth})
	srv.Use(res.Loaders())
	srv.AroundOperations(s.withTimeout)
	srv.AroundFields(authorize)
	srv.AroundRootFields(afterMutations(summaries.Changed))
	srv.SetErrorPresenter(s.presentError)
	srv.SetRecoverFunc(s.recoverPanic)
	return srv
}

// graphqlEndpoint admits requests to /graphql: GET, JSON POST bodies up to
// MaxBodyBytes, and websocket upgrades, each authenticated. Anything else is
// refused with a GraphQL error carrying extensions.code.
func (s *Server) graphqlEndpoint(gql http.Handler) http.Handler {
	authed := s.authenticated(s.limitBody(gql))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case isUpgrade(r):
			s.streams.Add(1)
			defer s.streams.Done()
		case r.Method == http.MethodGet:
		case r.Method == http.MethodPost:
			if !isJSON(r.Header.Get("Content-Type")) {
				s.writeError(w, http.StatusUnsupportedMediaType, backends.CodeInvalidArgument,
					"send the request as Content-Type: application/json")
				return
			}
		default:
			w.Header().Set("Allow", "GET, POST")
			s.writeError(w, http.StatusMethodNotAllowed, backends.CodeInvalidArgument,
				"use POST (queries and mutations), GET (queries) or a websocket (subscriptions)")
			return
		}
		authed.ServeHTTP(w, r)
	})
}

// limitBody reads a POST body of at most MaxBodyBytes, answering 413 to a
// larger one before GraphQL sees it.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			s.writeError(w, http.StatusRequestEntityTooLarge, backends.CodeInvalidArgument,
				fmt.Sprintf("the request body is larger than %d bytes (the server's --max-body-bytes)", s.cfg.MaxBodyBytes))
			return
		case err != nil:
			s.writeError(w, http.StatusBadRequest, backends.CodeInvalidArgument, "the request body could not be read")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// Serve serves on ln and runs the lease reaper (and the webhook alerts,
// when configured) until ctx ends, then shuts down gracefully: it stops
// accepting, lets requests in flight finish (up to ShutdownTimeout), ends
// subscriptions and stops the reaper and the alerts. The store is the
// caller's to close. An open server (no tokens) refuses a listener that is
// not on a loopback address.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := CheckListener(s.cfg.Tokens, ln.Addr()); err != nil {
		return err
	}
	base, endStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer endStreams()
	hs := &http.Server{
		Handler:           s.handler,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	reaperCtx, stopReaper := context.WithCancel(base)
	reaperDone := make(chan struct{})
	go func() {
		defer close(reaperDone)
		s.runReaper(reaperCtx)
	}()
	alertsDone := make(chan struct{})
	go func() {
		defer close(alertsDone)
		if s.cfg.Alerts != nil {
			s.cfg.Alerts.Run(reaperCtx)
		}
	}()
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		s.log.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		if serr := hs.Shutdown(sctx); serr != nil {
			s.log.Warn("requests still in flight at shutdown were cut", "err", serr)
		}
		cancel()
		err = <-served
	}
	endStreams()
	stopReaper()
	<-reaperDone
	<-alertsDone
	s.streams.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// CheckListener refuses to run open (without tokens) on an address that is
// not a loopback address.
func CheckListener(tokens *auth.Tokens, addr net.Addr) error {
	if tokens.Len() > 0 {
		return nil
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to run without authentication on %s, which is not a loopback address: give a tokens file (--tokens-file; make tokens with `chunklock token new`), or listen on 127.0.0.1", addr)
}

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}
