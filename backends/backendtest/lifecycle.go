package backendtest

import (
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/stretchr/testify/require"
)

// The catalog lifecycle (SPEC §11).
var lifecycleTests = []testCase{
	{"PauseResume", (*suite).testPauseResume},
	{"PauseOtherReplica", (*suite).testPauseOtherReplica},
}

// testPauseResume: a paused job claims nothing, its live claim runs to its
// end, and resumed it claims again; pausing keeps the rest of the job.
func (s *suite) testPauseResume(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3")
	before := b.upsertJob(backends.Job{ID: "ja", Inputs: []string{"src"}, Output: "a", MaxAttempts: 5,
		Env: []backends.EnvVar{{Name: "MODE", Value: "full"}}})
	live := b.claim("ja", "1")

	got, err := b.s.PauseJob(b.ctx, "ja")
	require.NoError(t, err)
	require.True(t, got.Paused)
	require.Equal(t, before.Inputs, got.Inputs)
	require.Equal(t, before.Env, got.Env)
	require.Equal(t, 5, got.MaxAttempts)
	stored, err := b.s.Job(b.ctx, "ja")
	require.NoError(t, err)
	require.True(t, stored.Paused)

	_, d := b.next("ja")
	require.Empty(t, d, "a paused job claims nothing")
	_, err = b.s.Claim(b.ctx, "ja", "2", executor)
	requireLocked(t, err, "2", bk{backends.BlockerPaused, "a", "ja", none})
	_, err = b.s.Heartbeat(b.ctx, live.Token)
	require.NoError(t, err, "a live claim runs on while its job is paused")
	b.complete(live)
	require.Equal(t, ready, b.status("a", "1"))

	_, err = b.s.PauseJob(b.ctx, "ja")
	require.NoError(t, err, "pausing a paused job changes nothing")
	got, err = b.s.ResumeJob(b.ctx, "ja")
	require.NoError(t, err)
	require.False(t, got.Paused)
	require.Equal(t, []string{"2", "3"}, b.drain("ja"), "resumed, the job claims again")

	_, err = b.s.PauseJob(b.ctx, "nope")
	requireCode(t, err, backends.CodeNotFound)
	_, err = b.s.ResumeJob(b.ctx, "nope")
	requireCode(t, err, backends.CodeNotFound)
	_, err = b.s.PauseJob(b.ctx, "Not a slug")
	requireCode(t, err, backends.CodeInvalidArgument)
}

// testPauseOtherReplica: a second engine on the same store (another
// server replica), its catalog cached, stops claiming for a job paused
// through the first at once, and claims again once it is resumed, without
// a restart.
func (s *suite) testPauseOtherReplica(t *testing.T) {
	b := s.setup(t)
	b.pipeline()
	b.publish("src", "1", "2", "3", "4")
	b.job("ja", "a", "src")
	other := engine.New(b.be, engine.WithClock(b.clock))
	c, err := other.FindNext(b.ctx, "ja", executor)
	require.NoError(t, err)
	require.NotNil(t, c, "the other replica serves the job (and caches the catalog)")
	require.NoError(t, other.Complete(b.ctx, c.Token))

	_, err = b.s.PauseJob(b.ctx, "ja")
	require.NoError(t, err)
	c, err = other.FindNext(b.ctx, "ja", executor)
	require.NoError(t, err)
	require.Nil(t, c, "the other replica grants no claim once the pause has committed")
	_, err = other.Claim(b.ctx, "ja", "3", executor)
	requireLocked(t, err, "3", bk{backends.BlockerPaused, "a", "ja", none})

	_, err = b.s.ResumeJob(b.ctx, "ja")
	require.NoError(t, err)
	c, err = other.FindNext(b.ctx, "ja", executor)
	require.NoError(t, err)
	require.NotNil(t, c, "the other replica claims again once the job is resumed")
	require.Equal(t, "2", c.DataID)
}
