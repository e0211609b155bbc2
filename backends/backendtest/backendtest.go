// Package backendtest is the conformance suite every chunklock storage
// backend passes. A backend's _test.go file calls
//
//	backendtest.Run(t, func(t *testing.T) backends.Backend { ... })
//	backendtest.RunConcurrency(t, factory)
//
// Run is a table of named subtests, each on a fresh store: the engine
// (backends/engine) on a fresh backend made by the factory, with a fresh
// *backends.FakeClock that the tests move forward (no test sleeps for a
// lease). It covers SPEC §2 (both status → lock
// tables, through Chunk().Locks, Locks, Blockers and claim behaviour), every
// operation of SPEC §3 with its error cases, guarantees 1-5 of SPEC §4, the
// seed scenarios, the read models (chunks, claims, locks, lock graph,
// events, event watching), resource locks, and a model-based test that
// replays random operation sequences against the store and against a small
// independent reference model (model.go) step by step. Guarantee 6 (a copy
// of the store alone reveals no secret) belongs to the keys layer and is
// checked there, not here.
//
// RunConcurrency holds the contention tests (many goroutines racing
// FindNext, Claim, Force and ExpireLeases on one store). They are separate
// so that a backend can run them under -race, or with smaller sizes, on
// their own; Run does not include them.
//
// The suite closes every backend it is given (the factory must not); the
// factory may register its own t.Cleanup to drop what it created (a
// schema, a data directory), which runs after the suite's Close. Subtests
// run one after the other. Sizes can be changed with options (WithWorkers,
// WithChunks, WithClaimRaces, WithModelSequences, WithModelSteps); the
// environment variables CHUNKLOCK_MODEL_SEED (replay one sequence),
// CHUNKLOCK_MODEL_SEQUENCES (run seeds 1..n) and CHUNKLOCK_MODEL_STEPS
// (operations per sequence) override the model test. The defaults (10
// sequences of 150 operations) take about 10 s on PostgreSQL; to hunt for
// bugs, run many more on the memory backend:
//
//	CHUNKLOCK_MODEL_SEQUENCES=2000 CHUNKLOCK_MODEL_STEPS=300 \
//		go test ./backends/memory/ -run TestConformance/Model
package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/stretchr/testify/require"
)

// Factory returns a fresh, empty backend. The suite makes the engine on it
// and closes it when the test ends.
type Factory func(t *testing.T) backends.Backend

// Option changes a size of the suite.
type Option func(*config)

type config struct {
	workers        int
	chunks         int
	claimRaces     int
	modelSequences int
	modelSteps     int
}

func newConfig(opts []Option) config {
	c := config{workers: 32, chunks: 2000, claimRaces: 50, modelSequences: 10, modelSteps: 150}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithWorkers sets how many goroutines race FindNext in RunConcurrency (default 32).
func WithWorkers(n int) Option { return func(c *config) { c.workers = n } }

// WithChunks sets how many chunks the FindNext race works through (default 2000).
func WithChunks(n int) Option { return func(c *config) { c.chunks = n } }

// WithClaimRaces sets how many dataids two goroutines race Claim on (default 50).
func WithClaimRaces(n int) Option { return func(c *config) { c.claimRaces = n } }

// WithModelSequences sets how many random sequences the model test runs (default 10).
func WithModelSequences(n int) Option { return func(c *config) { c.modelSequences = n } }

// WithModelSteps sets how many operations each model sequence has (default 150).
func WithModelSteps(n int) Option { return func(c *config) { c.modelSteps = n } }

type suite struct {
	newStore Factory
	cfg      config
}

type testCase struct {
	name string
	run  func(s *suite, t *testing.T)
}

// Run runs the conformance suite (everything but the contention tests).
func Run(t *testing.T, newStore Factory, opts ...Option) {
	s := &suite{newStore: newStore, cfg: newConfig(opts)}
	for _, group := range [][]testCase{
		definitionTests, lockTableTests, operationTests, guaranteeTests,
		seedTests, readModelTests, resourceLockTests, hardeningTests, partitionTests, rangeTests,
		backoffTests, scheduleTests, poolTests, recordTests, mappingTests, mappingLossTests, mappingSweepTests, mappingLatestFindTests,
		mappingWideTests, runTests, chunkCountTests, lifecycleTests, catalogChangeTests, runnerPoolTests, latestReadTests, dynamicTests, dimensionTests, dynamicDimensionTests, valueCountTests, byDimensionTests, dynamicByDimensionTests, dimensionsLatestTests, mappingBeforeStartTests, notDueTests,
		retentionTests,
	} {
		for _, tc := range group {
			t.Run(tc.name, func(t *testing.T) { tc.run(s, t) })
		}
	}
	t.Run("Model", s.testModel)
}

// RunConcurrency runs the contention tests.
func RunConcurrency(t *testing.T, newStore Factory, opts ...Option) {
	s := &suite{newStore: newStore, cfg: newConfig(opts)}
	for _, tc := range concurrencyTests {
		t.Run(tc.name, func(t *testing.T) { tc.run(s, t) })
	}
}

// epoch is where every test's clock starts.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// bundle is one test's store, clock and context.
type bundle struct {
	t     *testing.T
	ctx   context.Context
	s     backends.Store
	clock *backends.FakeClock
	be    backends.Backend // what s runs on
}

func (s *suite) setup(t *testing.T) *bundle {
	t.Helper()
	clock := backends.NewFakeClock(epoch)
	be := s.newStore(t)
	require.NotNil(t, be, "the factory returned a nil backend")
	b := &bundle{t: t, ctx: context.Background(), clock: clock, be: be}
	b.restart()
	t.Cleanup(func() {
		if err := b.s.Close(); err != nil {
			t.Errorf("closing the store: %v", err)
		}
	})
	return b
}

// restart makes b's store a new engine with opts on the same backend, as
// a server restarted with other settings (an env allowlist) would be.
func (b *bundle) restart(opts ...engine.Option) {
	b.s = engine.New(b.be, append([]engine.Option{engine.WithClock(b.clock)}, opts...)...)
}
