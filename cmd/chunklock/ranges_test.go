package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cliRun runs the chunklock command line and returns its exit code,
// stdout and stderr.
func cliRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr lockedBuffer
	code := run(t.Context(), append([]string{"chunklock"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestRangeCommands: hold and resubmit over a range of existing chunks
// print a summary that groups the skipped chunks by reason; a second run
// changes nothing more; wrong flag combinations are refused clearly.
func TestRangeCommands(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	ctx := t.Context()
	require.NoError(t, c.Publish(ctx, "in", []string{"2", "3", "4", "5", "6", "7", "8", "9"}))
	for _, d := range []string{"2", "4", "6", "7", "8", "9"} {
		_, err := c.Claim(ctx, "j", d, "e")
		require.NoError(t, err)
	}

	code, out, errs := cliRun(t, "hold", "--url", url, "--dataset", "out", "--from", "1", "--to", "9", "--reason", "audit")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "held 0 chunk(s) of out; skipped 6:")
	require.Contains(t, out, "6 × LOCKED: chunk out/{dataid} is RUNNING")
	require.Contains(t, out, "2, 4, 6, 7, 8 and 1 more")

	code, out, errs = cliRun(t, "hold", "--url", url, "--dataset", "in", "--range", "1..9", "--reason", "audit")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "held 9 chunk(s) of in; none skipped\n", out)
	code, out, errs = cliRun(t, "hold", "--url", url, "--dataset", "in", "--from", "1", "--to", "9", "--reason", "audit")
	require.Equal(t, 0, code, errs)
	require.Equal(t, "held 0 chunk(s) of in; 9 on HOLD already; none skipped\n", out)

	code, out, errs = cliRun(t, "resubmit", "--url", url, "--dataset", "in", "--from", "3", "--to", "5", "--cascade")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "resubmitted 2 chunk(s) of in; skipped 1:", "4 is read by a live claim")
	require.Contains(t, out, "1 × LOCKED: cannot invalidate what was computed from in/{dataid}")

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"hold", "--dataset", "in"}, "no chunk given"},
		{[]string{"hold", "--dataset", "in", "--from", "1"}, "give both --from and --to"},
		{[]string{"hold", "--dataset", "in", "--dataid", "1", "--from", "1", "--to", "2"}, "not both"},
		{[]string{"resubmit", "--dataset", "in", "--from", "2", "--to", "10", "--range", "1..2"}, "not both"},
		{[]string{"resubmit", "--dataset", "in", "--from", "10", "--to", "9"}, "is after --to"},
		{[]string{"resubmit", "--dataset", "in", "--range", "10"}, "want FROM..TO"},
		{[]string{"publish", "--dataset", "in", "--from", "1", "--to", "2", "3"}, "give no dataids"},
		{[]string{"publish", "--dataset", "in", "--from", "1", "--to", "2"}, "no partition definition"},
	} {
		code, _, errs := cliRun(t, append(bad.args, "--url", url)...)
		require.NotEqual(t, 0, code, strings.Join(bad.args, " "))
		require.Contains(t, errs, bad.want, strings.Join(bad.args, " "))
	}
}

func TestRangeCommandsHelp(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"publish", "resubmit", "hold"} {
		code, out, _ := cliRun(t, name, "--help")
		require.Equal(t, 0, code)
		for _, want := range []string{"--from", "--to", "--range", "Ranges:", "10,000", "skipped", "again"} {
			require.Contains(t, out, want, name)
		}
	}
}
