package main

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// TestNextScheduledJob: `next` on a job without inputs whose output has an
// hourly definition claims its due hours, lowest first, with no --dataid;
// `blockers` says when the next hour is due.
func TestNextScheduledJob(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = teststores.Memory(backends.NewFakeClock(now)), age.New()
	srv, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL)
	require.NoError(t, err)
	def := partition.Def{Kind: partition.Hourly, Start: "2026-03-01T08"}
	require.NoError(t, c.UpsertDataset(t.Context(), backends.Dataset{ID: "hh", Location: "/hh/{dataid}", Partitions: &def}))
	_, err = c.UpsertJob(t.Context(), backends.Job{ID: "gen", Output: "hh"})
	require.NoError(t, err)

	for _, want := range []string{"2026-03-01T08", "2026-03-01T09"} {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), []string{"chunklock", "next", "--url", hs.URL, "--job", "gen", "--format", "env"}, &stdout, &stderr)
		require.Equal(t, exitOK, code, stderr.String())
		require.Contains(t, stdout.String(), "export CHUNKLOCK_DATAID='"+want+"'\n")
	}
	var stdout, stderr lockedBuffer
	require.Equal(t, exitNothing, run(t.Context(), []string{"chunklock", "next", "--url", hs.URL, "--job", "gen"}, &stdout, &stderr),
		"hour 10 is not due at 10:30: %s", stdout.String())

	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	code := run(t.Context(), []string{"chunklock", "blockers", "--url", hs.URL, "--job", "gen", "--dataid", "2026-03-01T10"}, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Equal(t, "NOT_DUE          output chunk hh 2026-03-01T10 is not due until 2026-03-01T11:00:00Z: the job claims it on its schedule\n",
		stdout.String())
}

func TestDescribeTimeBlockers(t *testing.T) {
	t.Parallel()
	past := time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC)
	require.Equal(t, "BACKOFF          output chunk r 7 failed and backs off until 2026-03-01T04:00:00Z before it is retried (resubmit it to retry now)",
		describeBlocker(client.Blocker{Dataset: "r", DataID: "7", Kind: "BACKOFF", Status: "FAILED", Until: &past}))
	soon := time.Now().Add(time.Hour + 30*time.Second).Truncate(time.Second)
	got := describeBlocker(client.Blocker{Dataset: "h", DataID: "x", Kind: "NOT_DUE", Until: &soon})
	require.Contains(t, got, "NOT_DUE          output chunk h x is not due until "+soon.UTC().Format(time.RFC3339)+" (in ")
	require.Contains(t, got, "): the job claims it on its schedule")
}
