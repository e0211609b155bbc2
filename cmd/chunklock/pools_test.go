package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestApplyPoolsAndBlockers: apply creates the file's pools before the
// jobs naming them, `pools` shows the slots in use, and `blockers` names
// the pool without a free slot.
func TestApplyPoolsAndBlockers(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr lockedBuffer
		code := run(t.Context(), append([]string{"chunklock"}, args...), &stdout, &stderr)
		return code, strings.TrimSpace(stdout.String()), stderr.String()
	}
	file := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
pools:
  - {id: warehouse, slots: 1, description: one load at a time}
datasets:
  - {id: in, location: "/in/{dataid}"}
  - {id: out, location: "/out/{dataid}"}
jobs:
  - {id: j, inputs: [in], output: out, pool: warehouse}
`), 0o600))
	code, out, errs := cli("apply", "--url", url, "-f", file, "--keys-dir", t.TempDir())
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "create    pool       warehouse")
	require.Less(t, strings.Index(out, "pool       warehouse"), strings.Index(out, "job        j"), "pools come before the jobs naming them")
	code, out, errs = cli("apply", "--url", url, "-f", file, "--dry-run")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "unchanged pool       warehouse")

	require.NoError(t, c.Publish(t.Context(), "in", []string{"2"}))
	claim, err := c.FindNext(t.Context(), "j", "e")
	require.NoError(t, err)
	require.NotNil(t, claim)
	code, out, errs = cli("pools", "--url", url)
	require.Equal(t, 0, code, errs)
	require.Regexp(t, `warehouse\s+1/1\s+j\s+one load at a time`, out)
	other := "2"
	if claim.DataID == "2" {
		other = "1"
	}
	code, out, errs = cli("blockers", "--url", url, "--job", "j", "--dataid", other)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "CONCURRENCY      pool warehouse of job j has no free slot")

	code, _, errs = cli("pools", "--url", url, "--pool", "nope")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "NOT_FOUND")
}

// TestApplyUnreadSecretSaidOnce: a secret the file names and apply cannot
// read is said once, however many jobs read or write its dataset, and
// nothing is applied.
func TestApplyUnreadSecretSaidOnce(t *testing.T) {
	t.Parallel()
	url, _ := serveMemory(t, func(h http.Handler) http.Handler { return h })
	file := filepath.Join(t.TempDir(), "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`datasets:
  - {id: wh, location: "/wh/{dataid}", secret: {env: CHUNKLOCK_TEST_UNSET_SECRET}}
  - {id: a, location: "/a/{dataid}"}
  - {id: b, location: "/b/{dataid}"}
jobs:
  - {id: ja, inputs: [wh], output: a}
  - {id: jb, inputs: [wh], output: b}
`), 0o600))
	var stdout, stderr lockedBuffer
	code := run(t.Context(), []string{"chunklock", "apply", "--url", url, "-f", file, "--dry-run"}, &stdout, &stderr)
	require.Equal(t, 1, code, stderr.String())
	require.Equal(t, 1, strings.Count(stderr.String(), "CHUNKLOCK_TEST_UNSET_SECRET is not set"), stderr.String())
	require.Contains(t, stderr.String(), "nothing was applied")
}
