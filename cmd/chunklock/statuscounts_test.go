package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/client"
)

// requestLog records the GraphQL requests a server receives.
type requestLog struct {
	mu     sync.Mutex
	bodies []string
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		l.mu.Lock()
		l.bodies = append(l.bodies, string(body))
		l.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// take returns the requests received since the last take.
func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bodies
	l.bodies = nil
	return b
}

// TestStatusAsksOnlyForCounts: `status` prints each dataset's chunks by
// status from the counts the server makes, reads rows only to list the
// first FAILED and HOLD chunks of a dataset that has some, and with
// --dataset asks nothing of the other datasets (their summaries
// included).
func TestStatusAsksOnlyForCounts(t *testing.T) {
	t.Parallel()
	var log requestLog
	url, c := serveMemory(t, log.wrap)
	ctx := t.Context()
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "feed", Location: "/feed/{dataid}",
		Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-10"}}))
	var ids []string
	for i := 2; i <= 30; i++ {
		ids = append(ids, strconv.Itoa(i))
	}
	require.NoError(t, c.Publish(ctx, "in", ids))
	for i := 1; i <= 25; i++ {
		_, err := c.Hold(ctx, "in", strconv.Itoa(i), "bad rows")
		require.NoError(t, err)
	}
	require.NoError(t, c.Publish(ctx, "feed", []string{"2026-01-02"}))
	cli := func(args ...string) string {
		t.Helper()
		var stdout, stderr lockedBuffer
		code := run(ctx, append([]string{"chunklock", "status", "--url", url}, args...), &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		return stdout.String()
	}
	log.take()

	out := cli()
	require.Regexp(t, `\nin +\(source\) +30 +5 +0 +0 +0 +25 +30\n`, out)
	require.Regexp(t, `\nout +j +0 +0 +0 +0 +0 +0 +-\n`, out)
	require.Regexp(t, `\nfeed +\(source\) +1 +1 +0 +0 +0 +0 +2026-01-02\n`, out)
	require.Regexp(t, `\nfeed +9 +\d+ +2026-01-01 `, out)
	require.Equal(t, 20, strings.Count(out, "bad rows"), "the first 20 HOLD chunks")
	require.Contains(t, out, "(the first 20 FAILED and 20 HOLD chunks of each dataset")
	var pages []string
	for _, b := range log.take() {
		if strings.Contains(b, "chunks(") {
			pages = append(pages, b)
		}
	}
	require.Len(t, pages, 1, "one page of rows: in's HOLD chunks")
	require.Contains(t, pages[0], `"status":"HOLD"`)
	require.Contains(t, pages[0], `"first":20`)

	out = cli("--dataset", "out")
	require.Regexp(t, `\nout +j +0 `, out)
	require.NotContains(t, out, "feed")
	for _, b := range log.take() {
		require.False(t, strings.Contains(b, "datasets") && strings.Contains(b, "partitionSummary"), "every dataset's summaries asked: %s", b)
		require.NotContains(t, b, `"id":"feed"`)
		require.NotContains(t, b, `"id":"in"`)
		require.NotContains(t, b, "chunks(")
	}
}

// TestStatusGoesOnWithoutASummary: a partition summary the server cannot
// give (busy, out of time) is named on its dataset's line, and status
// prints everything else and succeeds.
func TestStatusGoesOnWithoutASummary(t *testing.T) {
	t.Parallel()
	busy := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte("partitionSummary")) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"errors":[{"message":"the server counts one dataset's partitions at a time and is busy; retry","path":["dataset","partitionSummary"],"extensions":{"code":"UNAVAILABLE"}}],"data":{"dataset":{"partitionSummary":null}}}`))
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	url, c := serveMemory(t, busy)
	ctx := t.Context()
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "feed", Location: "/feed/{dataid}",
		Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", End: "2026-01-10"}}))
	var stdout, stderr lockedBuffer
	code := run(ctx, []string{"chunklock", "status", "--url", url}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	out := stdout.String()
	require.Regexp(t, `\nin +\(source\) +1 +1 `, out)
	require.Regexp(t, `\nfeed +\? +\? +\(not counted: .*busy; retry\)\n`, out)
	require.Contains(t, out, "no live claims")
}

// TestFailuresSayWhatBecomesOfTheChunk: the runner says of a failed
// chunk whether it is retried or, at the job's last attempt, on HOLD;
// status says that FAILED chunks come back by themselves and how to
// resubmit a HOLD one, naming a real chunk.
func TestFailuresSayWhatBecomesOfTheChunk(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	// j: two attempts, the second an hour after the first; k: one.
	_, err := c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", MaxAttempts: 2, RetryDelaySeconds: 3600})
	require.NoError(t, err)
	require.NoError(t, c.UpsertDataset(ctx, backends.Dataset{ID: "once", Location: "/once/{dataid}"}))
	_, err = c.UpsertJob(ctx, backends.Job{ID: "k", Inputs: []string{"in"}, Output: "once", MaxAttempts: 1})
	require.NoError(t, err)
	runFalse := func(job string) string {
		var stdout, stderr lockedBuffer
		run(ctx, []string{"chunklock", "run", "--url", url, "--job", job, "--", "false"}, &stdout, &stderr)
		return stderr.String()
	}
	require.Contains(t, runFalse("j"), "(attempt 1 of 2: it is retried)")
	require.Contains(t, runFalse("k"), "(attempt 1 of 1, the last: the chunk is on HOLD until resubmitted)")
	var stdout, stderr lockedBuffer
	require.Equal(t, 0, run(ctx, []string{"chunklock", "status", "--url", url}, &stdout, &stderr), stderr.String())
	out := stdout.String()
	require.Contains(t, out, "FAILED chunks are claimed again by themselves")
	require.Contains(t, out, "`chunklock resubmit --dataset once --dataid 1`")
	require.Contains(t, out, "`chunklock events --dataset once --dataid 1`")
	require.NotContains(t, out, "--dataset D")
}

// TestFailureWordingFollowsAnApply: a job's maxAttempts lowered from 3 to
// 1 while its process runs. The failure the runner then reports is the
// last attempt (the server puts the chunk on HOLD), not "1 of 3".
func TestFailureWordingFollowsAnApply(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	_, err := c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", MaxAttempts: 3})
	require.NoError(t, err)
	gate := filepath.Join(t.TempDir(), "go")
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"chunklock", "run", "--url", url, "--job", "j", "--", "sh", "-c",
			`while [ ! -e "$0" ]; do sleep 0.02; done; exit 1`, gate}, &stdout, &stderr)
	}()
	outRow := func() string { // no require: Eventually calls it from another goroutine
		rows, err := c.Chunks(ctx, client.ChunkFilter{Dataset: "out", Role: "OUTPUT"})
		if err != nil {
			return err.Error()
		}
		if len(rows) != 1 {
			return fmt.Sprint(len(rows), " rows")
		}
		return rows[0].Status
	}
	require.Eventually(t, func() bool { return outRow() == "RUNNING" }, 30*time.Second, 20*time.Millisecond)
	_, err = c.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"in"}, Output: "out", MaxAttempts: 1})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("run did not end")
	}
	require.Contains(t, stderr.String(), "(attempt 1 of 1, the last: the chunk is on HOLD until resubmitted)")
	require.Equal(t, "HOLD", outRow())
}

// TestShellWord: the commands status suggests can be pasted: a dataid
// with dimensions ('|') is quoted, a plain one is not.
func TestShellWord(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"2026-11-05":    "2026-11-05",
		"2026-11-05|us": "'2026-11-05|us'",
		"a b":           "'a b'",
		"it's":          `'it'\''s'`,
		"":              "''",
		"s3:/x/y.csv":   "s3:/x/y.csv",
	} {
		require.Equal(t, want, shellWord(in), in)
	}
}
