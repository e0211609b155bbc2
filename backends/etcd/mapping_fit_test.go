package etcd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/partition"
)

// openTxnBackend starts a member with --max-txn-ops ops and returns a
// backend on it and the store over that backend.
func openTxnBackend(t *testing.T, ctx context.Context, ops uint) (*Backend, backends.Store) {
	srv, err := embedded.Start(ctx, embedded.Config{
		Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true, MaxTxnOps: ops,
	})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	cli, err := srv.Client()
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	be, err := OpenClient(ctx, cli, Config{MaxTxnOps: srv.MaxTxnOps()})
	require.NoError(t, err)
	s := engine.New(be)
	t.Cleanup(func() { s.Close() })
	return be, s
}

// TestMappedFitCoversWholeDefinition: the check that a mapped job's claims
// and publishes fit one transaction covers every output of the
// definition, not the first ones (whose windows the input's start cuts
// short): under --max-txn-ops 4096, a lookback of 4,000 hours between
// datasets starting at the same hour is refused, and so is a daily input
// read by the hours of 201 days (a publish queueing 4,824 outputs). A
// lookback of 1,000 hours is stored, and a claim of it, reading 1,001
// hours, commits.
func TestMappedFitCoversWholeDefinition(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	be, s := openTxnBackend(t, ctx, 4096)
	hourly := partition.Def{Kind: partition.Hourly, Start: "2025-01-01T00"}
	definedDataset(t, ctx, s, "hours", hourly)
	definedDataset(t, ctx, s, "out", hourly)
	definedDataset(t, ctx, s, "days", partition.Def{Kind: partition.Daily, Start: "2025-01-01"})
	window := func(in string, start int) []backends.InputMapping {
		return []backends.InputMapping{{Dataset: in, Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: start}}}
	}
	for _, j := range []backends.Job{
		{ID: "year", Output: "out", Inputs: []string{"hours"}, InputMappings: window("hours", -4000)},
		{ID: "fan", Output: "out", Inputs: []string{"days"}, InputMappings: window("days", -200)},
	} {
		for _, call := range []func(context.Context, backends.Job) (backends.Job, error){s.ValidateJob, s.UpsertJob} {
			_, err := call(ctx, j)
			require.Error(t, err, "job %s accepted", j.ID)
			require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
			require.Contains(t, err.Error(), "--max-txn-ops")
		}
		_, err := s.Job(ctx, j.ID)
		require.Equal(t, backends.CodeNotFound, backends.CodeOf(err))
	}

	_, err := s.UpsertJob(ctx, backends.Job{ID: "look", Output: "out", Inputs: []string{"hours"}, InputMappings: window("hours", -1000)})
	require.NoError(t, err)
	last := seedReady(t, ctx, be, "hours", hourly, 1001)
	c, err := s.Claim(ctx, "look", last, "e")
	require.NoError(t, err)
	require.Len(t, c.Reads, 1001)
	require.NoError(t, s.Complete(ctx, c.Token))
}

// TestMappedClaimBytesFit: under --max-txn-ops 4096, a lookback of 2,030
// hours fits a transaction's operations, but with names as long as these
// (a dataset of 40 characters, a job of 60) its claims send more than
// etcd's default --max-request-bytes (1.5 MiB): refused when it is
// upserted, naming that flag, instead of every claim failing. One of
// 1,000 hours is stored, and a claim of it by an executor with a 64-byte
// name commits.
func TestMappedClaimBytesFit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	be, s := openTxnBackend(t, ctx, 4096)
	hourly := partition.Def{Kind: partition.Hourly, Start: "2025-01-01T00"}
	in := "hours-of-the-point-of-sale-terminals-eu1"
	definedDataset(t, ctx, s, in, hourly)
	definedDataset(t, ctx, s, "out", hourly)
	job := func(k int) backends.Job {
		return backends.Job{ID: "rolling-basket-statistics-over-the-point-of-sale-terminals-x", Output: "out", Inputs: []string{in},
			InputMappings: []backends.InputMapping{{Dataset: in, Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -k}}}}
	}
	_, err := s.UpsertJob(ctx, job(2030))
	require.Error(t, err, "a job whose claims send more than --max-request-bytes was accepted")
	require.Equal(t, backends.CodeInvalidArgument, backends.CodeOf(err), "%v", err)
	require.Contains(t, err.Error(), "--max-request-bytes")

	_, err = s.UpsertJob(ctx, job(1000))
	require.NoError(t, err)
	last := seedReady(t, ctx, be, in, hourly, 1001)
	c, err := s.Claim(ctx, job(1000).ID, last, strings.Repeat("e", 64))
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, c.Token))
}

// seedReady writes the first n expected dataids of source dataset (defined
// by def) READY, in bulk, and returns the last.
func seedReady(t *testing.T, ctx context.Context, be *Backend, dataset string, def partition.Def, n int) string {
	seq, err := def.Range("", "")
	require.NoError(t, err)
	var rows []backends.StatusRow
	last := ""
	for id := range seq {
		if len(rows) == n {
			break
		}
		last = id
		rows = append(rows, backends.StatusRow{RowKey: backends.RowKey{Dataset: dataset, DataID: id, Role: backends.RoleOutput}, Status: backends.StatusReady})
	}
	require.NoError(t, be.bulkRows(ctx, rows))
	return last
}
