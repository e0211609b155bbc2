package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// TestStatusAndChunksShowMissingAndLate: `status` summarises the missing
// and late chunks of a dataset with a partition definition, and `chunks
// --missing/--late` lists them.
func TestStatusAndChunksShowMissingAndLate(t *testing.T) {
	t.Parallel()
	clock := backends.NewFakeClock(time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC))
	store := teststores.Memory(clock)
	ctx := t.Context()
	deadline := 6 * time.Hour
	_, err := store.UpsertDataset(ctx, backends.Dataset{ID: "feed", Location: "/feed/{dataid}",
		Partitions: &partition.Def{Kind: partition.Daily, Start: "2026-01-01", Deadline: &deadline}})
	require.NoError(t, err)
	_, err = store.UpsertDataset(ctx, backends.Dataset{ID: "plain", Location: "/plain/{dataid}"})
	require.NoError(t, err)
	for _, d := range []string{"2026-01-02", "2026-01-04"} {
		_, err := store.Publish(ctx, "feed", d)
		require.NoError(t, err)
	}
	_, err = store.Hold(ctx, "feed", "2026-01-03", "bad rows")
	require.NoError(t, err)
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = store, age.New()
	srv, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr lockedBuffer
		code := run(ctx, append([]string{"chunklock"}, append(args, "--url", hs.URL)...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}

	// 2026-01-01..04 are due (the 4th ended at midnight); 01 and 03 are
	// past their deadline and not READY.
	code, out, errs := cli("status")
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `EXPECTED +MISSING +LATE +OLDEST MISSING +OLDEST LATE\n`, out)
	require.Regexp(t, `feed +1 +2 +2026-01-01 +2026-01-01\n`, out)
	require.NotRegexp(t, `\nplain +\d`, strings.SplitN(out, "EXPECTED", 2)[1], "no definition, no line")

	code, out, errs = cli("chunks", "--missing")
	require.Equal(t, 0, code, errs)
	require.Equal(t, []string{"DATASET  DATAID      STATUS  DUE                   LATE", "feed     2026-01-01  NONE    2026-01-02T00:00:00Z  late"},
		strings.Split(strings.TrimSpace(out), "\n"))

	code, out, errs = cli("chunks", "--late")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "feed     2026-01-01  NONE    2026-01-02T00:00:00Z  late")
	require.Contains(t, out, "feed     2026-01-03  HOLD    2026-01-04T00:00:00Z  late")
	require.NotContains(t, out, "feed     2026-01-02", "READY is not late")
	require.NotContains(t, out, "feed     2026-01-04")

	code, out, errs = cli("chunks", "--late", "--from", "2026-01-02")
	require.Equal(t, 0, code, errs)
	require.NotContains(t, out, "feed     2026-01-01")
	require.Contains(t, out, "feed     2026-01-03")

	code, out, errs = cli("chunks", "--late", "--limit", "1")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "feed     2026-01-01")
	require.NotContains(t, out, "feed     2026-01-03")
	require.Contains(t, out, "(the first 1 late chunks per dataset; see more with --limit 0 or --from)")

	code, out, errs = cli("chunks", "--missing", "--dataset", "plain")
	require.NotEqual(t, 0, code, out)
	require.Contains(t, errs, "none of the selected datasets has a partition definition")

	code, out, errs = cli("chunks", "--help")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "--missing")
	require.Contains(t, out, "--late")
}

// TestStatusOnAnOlderServer: status still prints its tables when the
// server predates partition definitions (no Dataset.partitionSummary), and
// counts the rows itself when the server predates Dataset.chunkCounts.
func TestStatusOnAnOlderServer(t *testing.T) {
	t.Parallel()
	for _, field := range []string{"partitionSummary", "chunkCounts"} {
		older := func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if bytes.Contains(body, []byte(field)) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnprocessableEntity)
					_, _ = w.Write([]byte(`{"errors":[{"message":"Cannot query field \"` + field + `\" on type \"Dataset\".","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}],"data":null}`))
					return
				}
				h.ServeHTTP(w, r)
			})
		}
		url, _ := serveMemory(t, older)
		var stdout, stderr lockedBuffer
		code := run(t.Context(), []string{"chunklock", "status", "--url", url}, &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		require.Regexp(t, `\nin +\(source\) +1 +1 +0 +0 +0 +0 +1\n`, stdout.String(), "without %s", field)
		require.NotContains(t, stdout.String(), "EXPECTED")
	}
}

// TestStatusShowsRetention: status names the datasets that keep their
// events for their own time, and works against a server older than
// Dataset.retention and Dataset.pipeline.
func TestStatusShowsRetention(t *testing.T) {
	t.Parallel()
	url, api := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, api.UpsertDataset(ctx, backends.Dataset{ID: "in", Retention: &backends.Retention{EventsSeconds: 30 * 24 * 3600}}))
	require.NoError(t, api.UpsertDataset(ctx, backends.Dataset{ID: "audit", Retention: &backends.Retention{EventsSeconds: 0}}))
	var stdout, stderr lockedBuffer
	require.Equal(t, 0, run(ctx, []string{"chunklock", "status", "--url", url}, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "dataset in keeps its events for 30 days\n")
	require.Contains(t, stdout.String(), "dataset audit keeps its events for ever\n")

	older := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			for _, field := range []string{"retention", "pipeline"} { // both came after this server
				if bytes.Contains(body, []byte(field)) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnprocessableEntity)
					_, _ = w.Write([]byte(`{"errors":[{"message":"Cannot query field \"` + field + `\" on type \"Dataset\".","extensions":{"code":"GRAPHQL_VALIDATION_FAILED"}}],"data":null}`))
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	url, _ = serveMemory(t, older)
	stdout, stderr = lockedBuffer{}, lockedBuffer{}
	require.Equal(t, 0, run(ctx, []string{"chunklock", "status", "--url", url}, &stdout, &stderr), stderr.String())
	require.Regexp(t, `\nin +\(source\) +1 `, stdout.String())
	require.NotContains(t, stdout.String(), "keeps its events")
}
