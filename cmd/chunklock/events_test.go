package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEventsLimit: events prints the last --last N recorded events, and
// takes --limit for it as chunks and history do.
func TestEventsLimit(t *testing.T) {
	t.Parallel()
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	require.NoError(t, c.Publish(t.Context(), "in", []string{"2", "3"}))
	for _, flag := range []string{"--last", "--limit"} {
		code, out, errs := cliRun(t, "events", "--url", url, flag, "2")
		require.Equal(t, 0, code, errs)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, "%s:\n%s", flag, out)
		require.Contains(t, lines[0], "in")
		require.Contains(t, lines[1], "3")
	}
}
