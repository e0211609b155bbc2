package pipeline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestApplyLeavesPausedAlone: a job paused on the server stays paused
// under a file that does not set paused (no change planned, the upsert
// keeps it), and a file that sets paused decides (SPEC §11).
func TestApplyLeavesPausedAlone(t *testing.T) {
	t.Parallel()
	const file = `
datasets:
  - {id: raw, location: "/raw/{dataid}"}
  - {id: clean, location: "/clean/{dataid}"}
jobs:
  - {id: transform, inputs: [raw], output: clean%s}
`
	ds := []backends.Dataset{{ID: "raw", Location: "/raw/{dataid}"}, {ID: "clean", Location: "/clean/{dataid}"}}
	stored := backends.Job{ID: "transform", Inputs: []string{"raw"}, Output: "clean", Paused: true,
		MaxAttempts: backends.DefaultMaxAttempts, LeaseSeconds: backends.DefaultLeaseSeconds,
		RetryMaxDelaySeconds: backends.DefaultRetryMaxDelaySeconds}
	for _, tc := range []struct {
		set        string
		wantAction Action
		wantPaused bool
	}{
		{"", Unchanged, true},
		{", paused: true", Unchanged, true},
		{", paused: false", Update, false},
	} {
		p, err := Parse(strings.NewReader(strings.Replace(file, "%s", tc.set, 1)), "p.yaml")
		require.NoError(t, err)
		plan, err := p.Plan(ds, []backends.Job{stored}, nil)
		require.NoError(t, err)
		require.Equal(t, tc.wantAction, plan[len(plan)-1].Action, "file%q", tc.set)
		require.Equal(t, tc.wantPaused, p.Jobs[0].PausedOver(stored.Paused), "file%q", tc.set)
		require.False(t, p.Jobs[0].PausedOver(false) && tc.set == "", "a new job is not paused unless the file says so")
	}
}
