package pipeline

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
	"github.com/chunklock/chunklock/backends/partition"
)

const good = `
datasets:
  - {id: raw, location: "/raw/{dataid}", secret: {env: RAW_PW}}
  - {id: clean, location: "/clean/{dataid}"}
  - {id: report, location: "/report/{dataid}"}
jobs:
  - id: report
    inputs: [clean]
    output: report
  - id: transform
    inputs: [raw]
    output: clean
    env: {B: "2", A: "1"}
    maxAttempts: 5
`

func TestParseGood(t *testing.T) {
	t.Parallel()
	p, err := Parse(strings.NewReader(good), "p.yaml")
	require.NoError(t, err)
	ordered := p.OrderedJobs()
	require.Equal(t, "transform", ordered[0].ID, "producers come first")
	env, err := ordered[0].EnvVars()
	require.NoError(t, err)
	require.Equal(t, []backends.EnvVar{{Name: "B", Value: "2"}, {Name: "A", Value: "1"}}, env, "env keeps file order")
	require.Equal(t, []CredentialRef{{Job: "transform", Dataset: "raw", Ref: SecretRef{Env: "RAW_PW"}}}, p.Credentials())

	plan, err := p.Plan(nil, nil, nil)
	require.NoError(t, err)
	require.Len(t, plan, 6)
	require.Equal(t, Create, plan[0].Action)

	// Applied once, the same file plans no dataset or job changes.
	var ds []backends.Dataset
	for _, d := range p.Datasets {
		ds = append(ds, d.Backend())
	}
	var js []backends.Job
	for _, j := range p.Jobs {
		bj, err := j.Backend()
		require.NoError(t, err)
		bj, err = backends.NewCatalog(ds, js).ValidateJob(bj)
		require.NoError(t, err)
		js = append(js, bj)
	}
	plan, err = p.Plan(ds, js, nil)
	require.NoError(t, err)
	for _, c := range plan {
		if c.Kind != "credential" {
			require.Equal(t, Unchanged, c.Action, c.String())
		}
	}
	js[0].LeaseSeconds = 10
	plan, err = p.Plan(ds, js, nil)
	require.NoError(t, err)
	require.Contains(t, plan, Change{Kind: "job", ID: js[0].ID, Action: Update, Fields: []string{"leaseSeconds"}})
}

func TestParseBad(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ yaml, want string }{
		"malformed":     {"datasets: [", "p.yaml"},
		"empty":         {"", "empty"},
		"unknown field": {"datasets:\n  - {id: a, pasword: x}", "pasword"},
		"inline secret": {"datasets:\n  - {id: a, secret: {env: X, file: /y}}", "exactly one"},
		"bad id":        {"datasets:\n  - {id: A}", "invalid"},
		"two producers": {`
datasets: [{id: a}, {id: b}]
jobs:
  - {id: j1, inputs: [a], output: b}
  - {id: j2, inputs: [a], output: b}`, "already produced"},
		"cycle": {`
datasets: [{id: a}, {id: b}]
jobs:
  - {id: j1, inputs: [a], output: b}
  - {id: j2, inputs: [b], output: a}`, "cycle"},
		"location without dataid": {"datasets:\n  - {id: a, location: /fixed}", "{dataid}"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(strings.NewReader(c.yaml), "p.yaml")
			require.Error(t, err)
			require.Contains(t, err.Error(), c.want)
		})
	}
}

func TestSecretsAreReferences(t *testing.T) {
	for yaml, want := range map[string]string{
		"datasets:\n  - {id: a, secret: hunter2}":              "never the secret itself",
		"datasets:\n  - {id: a, secret: {value: hunter2}}":     `no field "value"`,
		"datasets:\n  - {id: a, secret: {env: [A]}}":           "plain value",
		"datasets:\n  - id: a\n    secret:\n      - hunter2\n": "never the secret itself",
	} {
		_, err := Parse(strings.NewReader(yaml), "p.yaml")
		require.ErrorContains(t, err, want, yaml)
	}
	t.Setenv("PIPELINE_TEST_SECRET", "s3")
	p, err := Parse(strings.NewReader("datasets:\n  - {id: a, secret: {env: PIPELINE_TEST_SECRET}}\n  - {id: b, secret: {file: /nonexistent/pw}}\n"), "p.yaml")
	require.NoError(t, err)
	v, err := p.Datasets[0].Secret.ReadSecret()
	require.NoError(t, err)
	require.Equal(t, "s3", v)
	_, err = p.Datasets[1].Secret.ReadSecret()
	require.ErrorContains(t, err, "/nonexistent/pw")
}

func TestPlanCredentials(t *testing.T) {
	t.Parallel()
	p, err := Parse(strings.NewReader(good), "p.yaml")
	require.NoError(t, err)
	plan, err := p.Plan(nil, nil, func(job, dataset string) bool { return job == "transform" && dataset == "raw" })
	require.NoError(t, err)
	require.Equal(t, Change{Kind: "credential", ID: "transform/raw", Action: Resend, Fields: []string{"secret from $RAW_PW"}}, plan[len(plan)-1])
	plan, err = p.Plan(nil, nil, nil)
	require.NoError(t, err)
	require.Equal(t, Create, plan[len(plan)-1].Action)
}

func TestValidateAgainstTheServer(t *testing.T) {
	t.Parallel()
	server := func() ([]backends.Dataset, []backends.Job) {
		return []backends.Dataset{{ID: "raw"}, {ID: "clean"}, {ID: "other"}},
			[]backends.Job{{ID: "cleaner", Inputs: []string{"raw"}, Output: "clean"}}
	}
	for name, c := range map[string]struct{ yaml, want string }{
		"second producer": {`
datasets: [{id: raw}, {id: clean}]
jobs:
  - {id: mine, inputs: [raw], output: clean}`, `already produced by job "cleaner"`},
		"cycle through the server's job": {`
datasets: [{id: raw}, {id: clean}]
jobs:
  - {id: back, inputs: [clean], output: raw}`, "cycle"},
		"a dataset nobody declared": {`
datasets: [{id: a}]
jobs:
  - {id: j1, inputs: [nope], output: a}`, `job "j1", against the server's pipeline: dataset "nope" not found`},
	} {
		p, err := Parse(strings.NewReader(c.yaml), "p.yaml")
		require.NoError(t, err, name)
		ds, js := server()
		require.ErrorContains(t, p.ValidateAgainst(ds, js), c.want, name)
	}
	// A job reading a dataset the server has and the file does not
	// declare (another pipeline file's) parses, and passes against the
	// server.
	p, err := Parse(strings.NewReader(`
datasets: [{id: report}]
jobs:
  - {id: reporter, inputs: [other], output: report}`), "p.yaml")
	require.NoError(t, err)
	ds, js := server()
	require.NoError(t, p.ValidateAgainst(ds, js))

	// Redefining the server's own job, or adding a new one, is fine.
	p, err = Parse(strings.NewReader(`
datasets: [{id: raw}, {id: clean}, {id: report}]
jobs:
  - {id: cleaner, inputs: [raw], output: clean, leaseSeconds: 5}
  - {id: reporter, inputs: [clean], output: report}`), "p.yaml")
	require.NoError(t, err)
	ds, js = server()
	require.NoError(t, p.ValidateAgainst(ds, js))
}

// TestParseErrorsPointAtTheLine: a broken file's error starts with
// file:line: or file:line:column: at the fault, not where the block around
// it starts (yaml.v3 says line 1 for indent-top.yaml, 7 for indent.yaml),
// and a syntax error shows the line, marked.
func TestParseErrorsPointAtTheLine(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{
		"indent-top.yaml":     "7:3: value is not allowed in this context (check this line's indentation against the lines above)",
		"indent.yaml":         "10:3: value is not allowed in this context (check this line's indentation against the lines above)",
		"indent-deeper.yaml":  "5: mapping values are not allowed in this context (check this line's indentation against the lines above)",
		"tab.yaml":            "7:1: a tab where YAML expects indentation: indent with spaces only",
		"unclosed-quote.yaml": "3:15: could not find end character of double-quoted text",
		"unknown-field.yaml":  `9: unknown field "outptu" in a job (the fields are id, description, inputs, output, env, maxAttempts, leaseSeconds, paused, retryDelaySeconds, retryMaxDelaySeconds, maxConcurrent, pool, inputMappings)`,
		"duplicate-key.yaml":  `6: mapping key "id" already defined at line 4`,
		"wrong-type.yaml":     "8: cannot unmarshal !!str `many` into int",
		"secret-field.yaml":   `4:27: secret has no field "value"; use {env: VARIABLE} or {file: PATH}`,
		"env-name.yaml":       `12:7: job "clean": env name "LD_PRELOAD" is not allowed: it changes how processes load code (names starting with LD_)`,
	} {
		path := filepath.Join("testdata", "broken", file)
		_, err := ParseFile(path)
		require.Error(t, err, file)
		first, rest, _ := strings.Cut(err.Error(), "\n")
		require.Equal(t, path+":"+want, first, file)
		if line, _, _ := strings.Cut(want, ":"); rest != "" {
			require.Contains(t, rest, "> "+line+" | ", "%s: the excerpt marks the line:\n%s", file, err)
		}
	}
	_, err := ParseFile(filepath.Join("testdata", "broken", "indent.yaml"))
	require.ErrorContains(t, err, "\n"+
		"   8 |   - id: clean\n"+
		"   9 |     inputs: [raw]\n"+
		"> 10 |   output: clean\n"+
		"     |   ^", "the mark is under the column")

	// Each error of a pipeline that parses but does not validate names the
	// file, and the place when it has one.
	_, err = Parse(strings.NewReader("datasets:\n  - {id: A}\njobs:\n  - id: j\n    output: b\n    env: {PATH: /tmp}\n"), "p.yaml")
	require.Error(t, err)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, 2, err.Error())
	require.True(t, strings.HasPrefix(lines[0], `p.yaml: dataset id "A" is invalid`), lines[0])
	require.Equal(t, `p.yaml:6:11: job "j": env name "PATH" is not allowed: shells run code or find programs through it`, lines[1])
}

// TestEnvNamesByFamily: a job env name the rule refuses by family is
// refused at its line, as the server refuses it; the names the operator
// allows (WithEnvAllow, as `chunklock apply --env-allow`) pass, here and
// against the server's pipeline.
func TestEnvNamesByFamily(t *testing.T) {
	t.Parallel()
	const src = "datasets:\n  - {id: a}\njobs:\n  - id: j\n    output: a\n    env: {MODE: full, TAR_OPTIONS: --verbose}\n"
	_, err := Parse(strings.NewReader(src), "p.yaml")
	require.ErrorContains(t, err, `p.yaml:6:23: job "j": env name "TAR_OPTIONS" is not allowed: tools read command-line options from it`)
	require.ErrorContains(t, err, "--env-allow TAR_OPTIONS")

	allow, err := envname.ParseAllow([]string{"TAR_OPTIONS"})
	require.NoError(t, err)
	p, err := Parse(strings.NewReader(src), "p.yaml", WithEnvAllow(allow))
	require.NoError(t, err)
	require.NoError(t, p.ValidateAgainst(nil, nil))
	j, err := p.Jobs[0].Backend()
	require.NoError(t, err)
	require.Equal(t, []backends.EnvVar{{Name: "MODE", Value: "full"}, {Name: "TAR_OPTIONS", Value: "--verbose"}}, j.Env)
}

// TestPartitionsAndJobLimits: partitions on datasets and a job's backoff
// and concurrency settings are read from YAML, checked as the server checks
// them, and planned as changes.
func TestPartitionsAndJobLimits(t *testing.T) {
	src := `datasets:
  - id: orders
    partitions: {kind: DAILY, start: 2026-01-01, timezone: Europe/Berlin, lagSeconds: 3600, deadlineSeconds: 21600}
  - id: report
jobs:
  - id: build
    inputs: [orders]
    output: report
    retryDelaySeconds: 30
    retryMaxDelaySeconds: 900
    maxConcurrent: 4
    pool: warehouse
`
	p, err := Parse(strings.NewReader(src), "p.yaml")
	require.NoError(t, err)
	deadline := 6 * time.Hour
	want := &partition.Def{Kind: partition.Daily, Start: "2026-01-01", Timezone: "Europe/Berlin", Lag: time.Hour, Deadline: &deadline}
	require.Equal(t, want, p.Datasets[0].Backend().Partitions)
	require.Nil(t, p.Datasets[1].Backend().Partitions)
	j, err := p.Jobs[0].Backend()
	require.NoError(t, err)
	require.Equal(t, []any{30, 900, 4, "warehouse"}, []any{j.RetryDelaySeconds, j.RetryMaxDelaySeconds, j.MaxConcurrent, j.Pool})

	// The server's copy (time zone defaulted, retry cap filled in) plans as
	// unchanged; a different definition or limit as an update of that field.
	have := []backends.Dataset{{ID: "orders", Partitions: want}, {ID: "report"}}
	haveJob := j
	haveJob.MaxAttempts, haveJob.LeaseSeconds = backends.DefaultMaxAttempts, backends.DefaultLeaseSeconds
	changes, err := p.Plan(have, []backends.Job{haveJob}, nil)
	require.NoError(t, err)
	for _, c := range changes {
		require.Equal(t, Unchanged, c.Action, "%+v", c)
	}
	have[0].Partitions = &partition.Def{Kind: partition.Daily, Start: "2025-01-01", Timezone: "Europe/Berlin"}
	haveJob.MaxConcurrent = 2
	changes, err = p.Plan(have, []backends.Job{haveJob}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"partitions"}, changes[0].Fields)
	require.Equal(t, []string{"maxConcurrent"}, changes[2].Fields)

	for name, bad := range map[string]string{
		"unknown kind":     "datasets:\n  - id: a\n    partitions: {kind: YEARLY, start: '2026'}\n",
		"bad start":        "datasets:\n  - id: a\n    partitions: {kind: DAILY, start: 2026-13-01}\n",
		"unknown zone":     "datasets:\n  - id: a\n    partitions: {kind: DAILY, start: 2026-01-01, timezone: Mars/Base}\n",
		"host-only zone":   "datasets:\n  - id: a\n    partitions: {kind: DAILY, start: 2026-01-01, timezone: posix/Europe/Berlin}\n",
		"negative backoff": "datasets:\n  - id: a\n  - id: b\njobs:\n  - {id: j, inputs: [a], output: b, retryDelaySeconds: -1}\n",
		// 18446744074 s is 2^64 ns and 0.29 s: seconds saturate rather than wrap.
		"lag beyond int64 ns":      "datasets:\n  - id: a\n    partitions: {kind: DAILY, start: 2026-01-01, lagSeconds: 18446744074}\n",
		"deadline beyond int64 ns": "datasets:\n  - id: a\n    partitions: {kind: DAILY, start: 2026-01-01, deadlineSeconds: 18446744074}\n",
	} {
		_, err := Parse(strings.NewReader(bad), "bad.yaml")
		require.Error(t, err, name)
	}
}

// TestDatasetRetention: a dataset's retention is read from the file,
// planned as an update when the server's differs (or the file drops it),
// and unchanged when it is the same.
func TestDatasetRetention(t *testing.T) {
	src := `datasets:
  - id: orders
    retention: {eventsSeconds: 2592000}
  - id: audit
    retention: {eventsSeconds: 0}
  - id: report
`
	p, err := Parse(strings.NewReader(src), "p.yaml")
	require.NoError(t, err)
	require.Equal(t, &backends.Retention{EventsSeconds: 2592000}, p.Datasets[0].Backend().Retention)
	require.Equal(t, &backends.Retention{EventsSeconds: 0}, p.Datasets[1].Backend().Retention)
	require.Nil(t, p.Datasets[2].Backend().Retention)

	have := []backends.Dataset{
		{ID: "orders", Retention: &backends.Retention{EventsSeconds: 2592000}},
		{ID: "audit", Retention: &backends.Retention{EventsSeconds: 0}},
		{ID: "report"},
	}
	changes, err := p.Plan(have, nil, nil)
	require.NoError(t, err)
	for _, c := range changes {
		require.Equal(t, Unchanged, c.Action, "%+v", c)
	}
	have[0].Retention = &backends.Retention{EventsSeconds: 3600}
	have[1].Retention = nil
	have[2].Retention = &backends.Retention{EventsSeconds: 60}
	changes, err = p.Plan(have, nil, nil)
	require.NoError(t, err)
	for _, c := range changes {
		require.Equal(t, []string{"retention"}, c.Fields, "%+v", c)
	}
	_, err = Parse(strings.NewReader("datasets:\n  - id: a\n    retention: {events: 30d}\n"), "p.yaml")
	require.Error(t, err, "an unknown field")
}

// TestParseDynamic: a DYNAMIC definition in a pipeline file, with its lag
// and deadline; start, end and values are refused for it.
func TestParseDynamic(t *testing.T) {
	t.Parallel()
	p, err := Parse(strings.NewReader(`datasets:
  - {id: landing, location: "/landing/{dataid}", partitions: {kind: DYNAMIC, lagSeconds: 60, deadlineSeconds: 3600}}
jobs:
  - {id: ingest, output: landing}
`), "p.yaml")
	require.NoError(t, err)
	def := p.Datasets[0].Backend().Partitions
	require.NotNil(t, def)
	require.Equal(t, partition.Dynamic, def.Kind)
	require.Equal(t, time.Minute, def.Lag)
	require.Equal(t, time.Hour, *def.Deadline)
	_, err = Parse(strings.NewReader(`datasets:
  - {id: landing, partitions: {kind: DYNAMIC, values: [a]}}
`), "p.yaml")
	require.ErrorContains(t, err, "DYNAMIC partitions take no start, end or values")
}

// TestParseDimensions: a dataset's dimensions in a pipeline file become a
// DIMENSIONS definition, and the same file applied again plans no change.
func TestParseDimensions(t *testing.T) {
	t.Parallel()
	src := `
datasets:
  - id: feeds
    location: "s3://lake/feeds/{region}/dt={date}/"
    partitions:
      lagSeconds: 3600
      dimensions:
        - {name: date, kind: DAILY, start: "2026-11-01"}
        - {name: region, kind: STATIC, values: [us, eu]}
  - {id: mart, location: "s3://lake/mart/{dataid}/", partitions: {dimensions: [{name: date, kind: DAILY, start: "2026-11-01"}, {name: region, kind: STATIC, values: [us, eu]}]}}
jobs:
  - {id: build, inputs: [feeds], output: mart}
`
	p, err := Parse(strings.NewReader(src), "p.yaml")
	require.NoError(t, err)
	d := p.Datasets[0].Backend()
	require.Equal(t, partition.Dimensional, d.Partitions.Kind)
	require.Equal(t, []string{"date", "region"}, d.Partitions.DimensionNames())
	require.Equal(t, time.Hour, d.Partitions.Lag)
	require.NoError(t, d.Partitions.ValidateNew())
	ds := []backends.Dataset{d, p.Datasets[1].Backend()}
	var stored []backends.Dataset
	for _, d := range ds {
		d.Partitions = ptrDef(d.Partitions.Normalized())
		stored = append(stored, d)
	}
	bj, err := p.Jobs[0].Backend()
	require.NoError(t, err)
	bj, err = backends.NewCatalog(stored, nil).ValidateJob(bj)
	require.NoError(t, err)
	plan, err := p.Plan(stored, []backends.Job{bj}, nil)
	require.NoError(t, err)
	for _, c := range plan {
		require.Equal(t, Unchanged, c.Action, c.String())
	}
}

func ptrDef(d partition.Def) *partition.Def { return &d }

// TestParseDynamicDimension: a DYNAMIC dimension is declared without
// values; the server's values (added at run time) make no change in the
// plan, and values declared for it are refused.
func TestParseDynamicDimension(t *testing.T) {
	t.Parallel()
	src := `
datasets:
  - id: orders
    location: "s3://lake/{customer}/dt={date}/"
    partitions:
      dimensions:
        - {name: date, kind: DAILY, start: "2026-11-01"}
        - {name: customer, kind: DYNAMIC}
`
	p, err := Parse(strings.NewReader(src), "p.yaml")
	require.NoError(t, err)
	d := p.Datasets[0].Backend()
	require.NoError(t, d.Partitions.ValidateNew())
	stored := d
	def := d.Partitions.Normalized()
	def.Dimensions[1].Members = []partition.Member{{Value: "acme", Since: 1, Added: 1}}
	def.Dimensions[1].Removed = []string{"old"}
	stored.Partitions = &def
	plan, err := p.Plan([]backends.Dataset{stored}, nil, nil)
	require.NoError(t, err)
	require.Len(t, plan, 1)
	require.Equal(t, Unchanged, plan[0].Action, plan[0].String())

	// Values declared for it: the file parses, the definition is refused
	// (as the server refuses it), saying how values come.
	bad, err := Parse(strings.NewReader(strings.Replace(src, "kind: DYNAMIC}", "kind: DYNAMIC, values: [acme]}", 1)), "p.yaml")
	if err == nil {
		err = bad.Datasets[0].Backend().Partitions.ValidateNew()
	}
	require.ErrorContains(t, err, "values are added at run time")
}
