package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/etcd/embedded"
	"github.com/chunklock/chunklock/backends/open"
)

// runCLI runs the command and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"chunklock"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

// pgSchemaURL is a PostgreSQL store URL in a schema of its own, dropped
// when the test ends; the test is skipped without CHUNKLOCK_TEST_POSTGRES.
func pgSchemaURL(t *testing.T) string {
	dsn := os.Getenv("CHUNKLOCK_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("CHUNKLOCK_TEST_POSTGRES is not set")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "chunklock_copy_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			conn.Close(context.Background())
		}
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "schema=" + schema
}

// TestStoreCopyOffTheEmbeddedStore: an embedded store is copied to
// PostgreSQL and from there to a new embedded store; each copy reports
// its counts and checksums, and the last serves the chunks, fences and
// queue of the first. A running source, a missing one and a target that
// is not empty are refused.
func TestStoreCopyOffTheEmbeddedStore(t *testing.T) {
	pg := pgSchemaURL(t)
	ctx := context.Background()
	src, back := t.TempDir(), t.TempDir()
	s, err := open.Open(ctx, "", embeddedOpts(src))
	require.NoError(t, err)
	for _, id := range []string{"src", "out"} {
		_, err = s.UpsertDataset(ctx, backends.Dataset{ID: id})
		require.NoError(t, err)
	}
	_, err = s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out", Key: backends.JobKey{Kind: "age", Public: "age1x"}})
	require.NoError(t, err)
	for _, id := range []string{"1", "2", "3"} {
		_, err = s.Publish(ctx, "src", id)
		require.NoError(t, err)
	}
	c, err := s.FindNext(ctx, "j", "e")
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, c.Token))
	// A record written empty (as a deleted job's backfill record is): etcd
	// gives no bytes for it, PostgreSQL keeps empty bytes.
	r, _, err := s.SwapRecord(ctx, "test/emptied", []byte("x"), 0)
	require.NoError(t, err)
	_, ok, err := s.SwapRecord(ctx, "test/emptied", nil, r.Version)
	require.NoError(t, err)
	require.True(t, ok)

	code, _, stderr := runCLI(t, "store", "copy", "--from", "dir:"+src, "--to", pg)
	require.Equal(t, 1, code, "a store in use by a server is refused")
	require.Contains(t, stderr, "in use by another chunklock")
	require.NoError(t, s.Close())

	code, stdout, stderr := runCLI(t, "store", "copy", "--from", "dir:"+src, "--to", pg)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `(?m)^\s*rows\s+5\s+5\s+[0-9a-f]{32}\s*$`, stdout)
	require.Regexp(t, `(?m)^\s*datasets\s+2\s+2\s`, stdout)
	require.Contains(t, stderr, "store copy: rows: 5 copied in")
	require.Contains(t, stderr, "items copied and verified")

	code, _, stderr = runCLI(t, "store", "copy", "--from", "dir:"+src, "--to", pg)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "the target store is not empty")

	code, _, stderr = runCLI(t, "store", "copy", "--from", pg, "--to", back)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runCLI(t, "store", "copy", "--from", "dir:"+t.TempDir()+"/none", "--to", t.TempDir())
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "is not the data directory of an embedded store")

	s, err = open.Open(ctx, "", embeddedOpts(back))
	require.NoError(t, err)
	defer s.Close()
	ch, err := s.Chunk(ctx, "out", c.DataID)
	require.NoError(t, err)
	require.Equal(t, backends.StatusReady, ch.Output.Status)
	next, err := s.FindNext(ctx, "j", "e")
	require.NoError(t, err)
	require.NotNil(t, next, "the queue came along")
	require.NotEqual(t, c.DataID, next.DataID)
	forced, err := s.Force(ctx, "j", c.DataID, "e")
	require.NoError(t, err)
	require.Greater(t, forced.Fence, c.Fence, "fences never repeat")
}

func embeddedOpts(dir string) open.Options {
	return open.Options{DataDir: dir, Embedded: embedded.Config{ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true}}
}

// TestStoreBackup backs up a running embedded store: the backup is a data
// directory holding the store as it was then (not a later write), which
// serves and which store copy takes. Without a running server, it says so.
func TestStoreBackup(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	bak := filepath.Join(t.TempDir(), "backup")
	s, err := open.Open(ctx, "", open.Options{DataDir: src, Embedded: embedded.Config{PeerAddr: "127.0.0.1:0", UnsafeNoFsync: true}})
	require.NoError(t, err)
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "before"})
	require.NoError(t, err)
	code, _, stderr := runCLI(t, "store", "backup", "--data-dir", src, "--to", bak)
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "restored into "+bak)
	_, err = s.UpsertDataset(ctx, backends.Dataset{ID: "after"})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	code, _, stderr = runCLI(t, "store", "backup", "--data-dir", src, "--to", bak+"2")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no server runs on")
	code, _, stderr = runCLI(t, "store", "backup", "--data-dir", src, "--to", bak)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "exists")

	other := filepath.Join(t.TempDir(), "copy")
	code, stdout, stderr := runCLI(t, "store", "copy", "--from", "dir:"+bak, "--to", "dir:"+other)
	require.Equal(t, 0, code, stderr)
	require.Regexp(t, `(?m)^\s*datasets\s+1\s+1\s`, stdout)
	b, err := open.Open(ctx, "", embeddedOpts(bak))
	require.NoError(t, err)
	defer b.Close()
	ds, err := b.Datasets(ctx)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	require.Equal(t, "before", ds[0].ID)
}
