package pipeline

import (
	"strings"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
	"github.com/stretchr/testify/require"
)

func TestInputMappings(t *testing.T) {
	src := `datasets:
  - id: orders
    partitions: {kind: DAILY, start: 2026-01-01}
  - id: rolling
    partitions: {kind: DAILY, start: 2026-01-01}
  - id: weekly
    partitions: {kind: WEEKLY, start: 2026-W01}
jobs:
  - id: roll
    inputs: [orders]
    output: rolling
    inputMappings:
      - {dataset: orders, kind: TIME_WINDOW, startOffset: -6}
  - id: week
    inputs: [orders]
    output: weekly
    inputMappings:
      - {dataset: orders, kind: TIME_WINDOW}
`
	p, err := Parse(strings.NewReader(src), "p.yaml")
	require.NoError(t, err)
	roll, err := p.Jobs[0].Backend()
	require.NoError(t, err)
	want := []backends.InputMapping{{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}}}
	require.Equal(t, want, roll.InputMappings)

	// The server's copy plans as unchanged; another offset as an update.
	have := []backends.Dataset{}
	for _, d := range p.Datasets {
		have = append(have, d.Backend())
	}
	var haveJobs []backends.Job
	for _, j := range p.Jobs {
		bj, err := j.Backend()
		require.NoError(t, err)
		bj.MaxAttempts, bj.LeaseSeconds, bj.RetryMaxDelaySeconds = backends.DefaultMaxAttempts, backends.DefaultLeaseSeconds, backends.DefaultRetryMaxDelaySeconds
		haveJobs = append(haveJobs, bj)
	}
	changes, err := p.Plan(have, haveJobs, nil)
	require.NoError(t, err)
	for _, c := range changes {
		require.Equal(t, Unchanged, c.Action, "%+v", c)
	}
	haveJobs[0].InputMappings = []backends.InputMapping{{Dataset: "orders", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -5}}}
	haveJobs[1].InputMappings = nil
	changes, err = p.Plan(have, haveJobs, nil)
	require.NoError(t, err)
	for _, c := range changes {
		if c.Kind == "job" {
			require.Equal(t, []string{"inputMappings"}, c.Fields, c.ID)
		}
	}

	for name, bad := range map[string]string{
		"unknown field":       "datasets:\n  - id: a\n  - id: b\njobs:\n  - {id: j, inputs: [a], output: b, inputMappings: [{dataset: a, kind: ALL, width: 3}]}\n",
		"not an input":        "datasets:\n  - id: a\n  - id: b\njobs:\n  - {id: j, inputs: [a], output: b, inputMappings: [{dataset: b, kind: ALL}]}\n",
		"no time definitions": "datasets:\n  - id: a\n  - id: b\njobs:\n  - {id: j, inputs: [a], output: b, inputMappings: [{dataset: a, kind: TIME_WINDOW}]}\n",
	} {
		_, err := Parse(strings.NewReader(bad), "bad.yaml")
		require.Error(t, err, name)
	}
}

// TestExamplePipelineMappings: the quick start's pipeline parses, with its
// 7-day lookback and its weekly roll-up.
func TestExamplePipelineMappings(t *testing.T) {
	p, err := ParseFile("../examples/daily-pipeline/pipeline.yaml")
	require.NoError(t, err)
	got := map[string][]backends.InputMapping{}
	for _, j := range p.Jobs {
		bj, err := j.Backend()
		require.NoError(t, err)
		got[j.ID] = bj.InputMappings
	}
	require.Equal(t, []backends.InputMapping{{Dataset: "orders-clean", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6}}}, got["rolling"])
	require.Equal(t, []backends.InputMapping{{Dataset: "orders-clean", Mapping: partition.Mapping{Kind: partition.TimeWindow}}}, got["weekly"])
	require.Empty(t, got["report"])
}

// TestInputMappingsByDimension: entries naming dimensions parse into one
// mapping by dimension, checked against the file's definitions.
func TestInputMappingsByDimension(t *testing.T) {
	src := `datasets:
  - id: sales
    partitions:
      dimensions:
        - {name: date, kind: DAILY, start: 2026-01-01}
        - {name: region, kind: STATIC, values: [us, eu]}
  - id: rolling
    partitions:
      dimensions:
        - {name: date, kind: DAILY, start: 2026-01-01}
        - {name: region, kind: STATIC, values: [us, eu]}
jobs:
  - id: roll
    inputs: [sales]
    output: rolling
    inputMappings:
      - {dataset: sales, dimension: date, outputDimension: date, kind: TIME_WINDOW, startOffset: -6}
`
	p, err := Parse(strings.NewReader(src), "p.yaml")
	require.NoError(t, err)
	roll, err := p.Jobs[0].Backend()
	require.NoError(t, err)
	require.Equal(t, []backends.InputMapping{{Dataset: "sales", Mapping: partition.Mapping{Kind: partition.TimeWindow, StartOffset: -6,
		Dimension: "date", OutputDimension: "date"}}}, roll.InputMappings)
	require.Equal(t, partition.ByDimension, roll.Mapping("sales").Kind)

	_, err = Parse(strings.NewReader(strings.Replace(src, "dimension: date, outputDimension", "dimension: day, outputDimension", 1)), "bad.yaml")
	require.ErrorContains(t, err, `no dimension "day"`)
}
