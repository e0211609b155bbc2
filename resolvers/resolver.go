// Package resolvers implements chunklock's GraphQL schema on backends.Store.
//
// The resolvers are thin: one file per area of the schema
// (<area>.resolvers.go, generated stubs filled in by hand and kept by
// `go generate`), each calling the Store and converting its types.
// Authorization of mutations happens before they run (server), except for
// what depends on the result: claim tokens and decrypted secrets are shown
// only to principals that may operate the claim's job.
//
// resolver.go is the dependency-injection root; loaders.go holds the
// per-request dataloaders that keep nested fields from reading the store
// once per row.
package resolvers

import (
	"log/slog"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys"
)

// Metrics receives what the resolvers count. The server implements it with
// Prometheus; a nil Metrics in Config counts nothing.
type Metrics interface {
	// Claimed counts a claim made by findNext, claim or force (via).
	Claimed(job, via string)
	// Completed counts a completed claim.
	Completed(job string)
	// Failed counts a failed claim.
	Failed(job string)
	// FindNext observes how long findNext took and its outcome
	// ("claimed", "empty" or "error").
	FindNext(d time.Duration, outcome string)
}

// Config is what the resolvers depend on.
type Config struct {
	Store backends.Store
	// Keyring makes the keys of new jobs.
	Keyring keys.Keyring
	// Keyrings are further keyrings, each of another kind than Keyring and
	// than each other. A job's secrets are always encrypted and decrypted by
	// the keyring of the kind recorded with its key (Job.Key.Kind), which
	// must be Keyring or one of these: a job whose kind is missing gets
	// UNAVAILABLE, never a decryption with the wrong keyring.
	Keyrings []keys.Keyring
	Logger   *slog.Logger
	Metrics  Metrics
	// Summaries counts partition summaries, shared with the server's
	// gauges; nil: counts of their own, shared for DefaultSummaryMaxAge.
	Summaries *Summaries
}

// Resolver is the root resolver.
type Resolver struct {
	store   backends.Store
	keyring keys.Keyring
	// keyrings holds every keyring by kind, Keyring included.
	keyrings  map[string]keys.Keyring
	log       *slog.Logger
	metrics   Metrics
	summaries *Summaries
}

// New returns the root resolver. A later keyring of a kind already given
// is ignored.
func New(cfg Config) *Resolver {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.Summaries == nil {
		cfg.Summaries = NewSummaries(cfg.Store, DefaultSummaryMaxAge, cfg.Logger)
	}
	r := &Resolver{store: cfg.Store, keyring: cfg.Keyring, keyrings: map[string]keys.Keyring{}, log: cfg.Logger, metrics: cfg.Metrics,
		summaries: cfg.Summaries}
	for _, k := range append([]keys.Keyring{cfg.Keyring}, cfg.Keyrings...) {
		if k == nil {
			continue
		}
		if _, dup := r.keyrings[k.Kind()]; !dup {
			r.keyrings[k.Kind()] = k
		}
	}
	return r
}

type nopMetrics struct{}

func (nopMetrics) Claimed(string, string)         {}
func (nopMetrics) Completed(string)               {}
func (nopMetrics) Failed(string)                  {}
func (nopMetrics) FindNext(time.Duration, string) {}
