package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/client"
	"github.com/stretchr/testify/require"
)

// The pipeline files of the prune tests: etl declares pool p, datasets
// src, mid and res, jobs j1 (src → mid, in pool p) and j2 (mid → res);
// etl without j2 declares neither j2 nor res nor p (j1 leaves the pool).
const (
	etlFull = `
pipeline: etl
pools:
  - {id: p, slots: 2}
datasets:
  - {id: src, location: "/src/{dataid}"}
  - {id: mid, location: "/mid/{dataid}"}
  - {id: res, location: "/res/{dataid}"}
jobs:
  - {id: j1, inputs: [src], output: mid, pool: p}
  - {id: j2, inputs: [mid], output: res}
`
	etlShort = `
pipeline: etl
datasets:
  - {id: src, location: "/src/{dataid}"}
  - {id: mid, location: "/mid/{dataid}"}
jobs:
  - {id: j1, inputs: [src], output: mid}
`
)

// pruneCLI runs chunklock against a memory server that holds in, out and
// j, created through the API (serveMemory), and writes pipeline files.
type pruneCLI struct {
	t   *testing.T
	url string
	c   *client.Client
	dir string
}

func newPruneCLI(t *testing.T) *pruneCLI {
	url, c := serveMemory(t, func(h http.Handler) http.Handler { return h })
	return &pruneCLI{t: t, url: url, c: c, dir: t.TempDir()}
}

func (p *pruneCLI) run(args ...string) (int, string, string) {
	var stdout, stderr lockedBuffer
	code := run(p.t.Context(), append([]string{"chunklock"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// apply applies yaml as file name with extra flags.
func (p *pruneCLI) apply(name, yaml string, flags ...string) (int, string, string) {
	p.t.Helper()
	file := filepath.Join(p.dir, name)
	require.NoError(p.t, os.WriteFile(file, []byte(yaml), 0o600))
	return p.run(append([]string{"apply", "--url", p.url, "-f", file, "--keys-dir", filepath.Join(p.dir, "keys")}, flags...)...)
}

// catalog lists every dataset, job and pool with its pipeline ("-" for
// none).
func (p *pruneCLI) catalog() map[string]string {
	p.t.Helper()
	ctx := p.t.Context()
	out := map[string]string{}
	own := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	ds, err := p.c.Datasets(ctx)
	require.NoError(p.t, err)
	for _, d := range ds {
		out["dataset "+d.ID] = own(d.Pipeline)
	}
	js, err := p.c.Jobs(ctx)
	require.NoError(p.t, err)
	for _, j := range js {
		out["job "+j.ID] = own(j.Pipeline)
	}
	ps, err := p.c.Pools(ctx)
	require.NoError(p.t, err)
	for _, pl := range ps {
		out["pool "+pl.ID] = own(pl.Pipeline)
	}
	return out
}

// apiObjects are what serveMemory created through the API, and what
// prune never deletes.
var apiObjects = map[string]string{"dataset in": "-", "dataset out": "-", "job j": "-"}

func withAPI(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range apiObjects {
		out[k] = v
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestApplyPruneRoundTrip: apply records the pipeline as the owner of what
// it creates; --prune --dry-run prints the plan (deletions included) and
// deletes nothing; --prune deletes jobs, datasets and pools the file no
// longer declares, refusing, with the reason, a job with a live claim,
// the dataset it writes, and a dataset with chunks until --delete-chunks;
// what was created otherwise is never deleted; declared again, the
// objects are created again, owned by the pipeline.
func TestApplyPruneRoundTrip(t *testing.T) {
	t.Parallel()
	p := newPruneCLI(t)
	ctx := t.Context()
	code, out, errs := p.apply("etl.yaml", etlFull)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "pipeline etl (from pipeline: in the file)")
	full := withAPI(map[string]string{"pool p": "etl", "dataset src": "etl", "dataset mid": "etl", "dataset res": "etl", "job j1": "etl", "job j2": "etl"})
	require.Equal(t, full, p.catalog())

	// Without --prune apply says what --prune would delete, and deletes nothing.
	code, out, errs = p.apply("etl.yaml", etlShort)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "3 object(s) of the pipeline are no longer in the file (--prune deletes them)")
	require.Equal(t, full, p.catalog())

	// A live claim of j2 holds it, and res with it; the pool goes.
	require.NoError(t, p.c.Publish(ctx, "src", []string{"1"}))
	c1, err := p.c.FindNext(ctx, "j1", "e")
	require.NoError(t, err)
	require.NoError(t, p.c.Complete(ctx, c1.Token))
	c2, err := p.c.FindNext(ctx, "j2", "e")
	require.NoError(t, err)
	require.NotNil(t, c2)

	code, out, errs = p.apply("etl.yaml", etlShort, "--prune", "--dry-run")
	require.Equal(t, 0, code, errs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Equal(t, []string{
		"pipeline etl (from pipeline: in the file)",
		"unchanged dataset    src",
		"unchanged dataset    mid",
		"unchanged job        j1",
		"delete    job        j2 REFUSED: LOCKED: 1 live claim(s) on its output res; apply --prune again once they end",
		`delete    dataset    res REFUSED: LOCKED: still written by job "j2", whose deletion is refused`,
		"delete    pool       p",
		"dry run: 1 change(s) would be applied; 2 deletion(s) refused; nothing was changed",
	}, lines, "the plan, in the order it is applied")
	require.Equal(t, full, p.catalog(), "a dry run deletes nothing")

	code, out, errs = p.apply("etl.yaml", etlShort, "--prune")
	require.NotEqual(t, 0, code, "refused deletions fail the command")
	require.Contains(t, errs, "2 deletion(s) refused")
	require.Less(t, strings.Index(out, "delete    pool       p"), strings.Index(out, "applying 1 change(s):"), "the plan is printed first")
	require.Equal(t, withAPI(map[string]string{"dataset src": "etl", "dataset mid": "etl", "dataset res": "etl", "job j1": "etl", "job j2": "etl"}), p.catalog())

	// The claim ended, j2 goes; res has a chunk: only with --delete-chunks.
	require.NoError(t, p.c.Complete(ctx, c2.Token))
	code, out, errs = p.apply("etl.yaml", etlShort, "--prune")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "delete    dataset    res REFUSED: it has 1 chunk(s); --delete-chunks deletes them with it")
	require.Contains(t, errs, "1 deletion(s) refused")
	require.Equal(t, withAPI(map[string]string{"dataset src": "etl", "dataset mid": "etl", "dataset res": "etl", "job j1": "etl"}), p.catalog())
	code, out, errs = p.apply("etl.yaml", etlShort, "--prune", "--delete-chunks")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "applied 1 change(s)")
	short := withAPI(map[string]string{"dataset src": "etl", "dataset mid": "etl", "job j1": "etl"})
	require.Equal(t, short, p.catalog())
	code, out, errs = p.apply("etl.yaml", etlShort, "--prune")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "applied 0 change(s)\n", "pruned once, nothing is left to prune")

	// Declared again, they are created again, owned by etl.
	code, out, errs = p.apply("etl.yaml", etlFull, "--prune")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "create    job        j2")
	require.Equal(t, full, p.catalog())
}

// TestApplyPruneKeepsWhatOthersMade: prune never deletes an object created
// otherwise (through the API, or by another pipeline), even one the file
// once declared, nor a dataset a job outside the file reads; a file that
// declares another pipeline's object is refused before anything changes.
func TestApplyPruneKeepsWhatOthersMade(t *testing.T) {
	t.Parallel()
	p := newPruneCLI(t)
	ctx := t.Context()
	// The file declares in and out (made through the API) besides its own.
	withIn := strings.Replace(etlFull, "datasets:\n", "datasets:\n  - {id: in, location: \"/in/{dataid}\"}\n  - {id: out, location: \"/out/{dataid}\"}\n", 1)
	code, _, errs := p.apply("etl.yaml", withIn+"  - {id: j, inputs: [in], output: out}\n")
	require.Equal(t, 0, code, errs)
	code, _, errs = p.apply("etl.yaml", etlFull)
	require.Equal(t, 0, code, errs)
	// Another pipeline, and a job made through the API reading res.
	code, _, errs = p.apply("other.yaml", `
datasets:
  - {id: o, location: "/o/{dataid}"}
`)
	require.Equal(t, 0, code, errs)
	require.NoError(t, p.c.UpsertDataset(ctx, backends.Dataset{ID: "report", Location: "/r/{dataid}"}))
	_, err := p.c.UpsertJob(ctx, backends.Job{ID: "reader", Inputs: []string{"res"}, Output: "report"})
	require.NoError(t, err)

	code, out, errs := p.apply("etl.yaml", etlShort, "--prune")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, `delete    dataset    res REFUSED: LOCKED: still read by job "reader", which the file does not declare`)
	require.NotContains(t, out, "dataset    in")
	require.NotContains(t, out, "dataset    o\n")
	require.Equal(t, map[string]string{
		"dataset in": "-", "dataset out": "-", "job j": "-", // made through the API, once declared by etl
		"dataset o": "other", "dataset report": "-", "job reader": "-",
		"dataset src": "etl", "dataset mid": "etl", "dataset res": "etl", "job j1": "etl",
	}, p.catalog(), "j2 and p were pruned; nothing made otherwise was")

	// Pipeline other may not declare etl's dataset: nothing is applied.
	code, _, errs = p.apply("other.yaml", `
datasets:
  - {id: o, location: "/o/{dataid}", description: changed}
  - {id: src, location: "/src/{dataid}"}
`)
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "1 object(s) of the file belong to pipeline \"etl\" (its apply created them): dataset \"src\". This file applies as pipeline \"other\": if it is \"etl\"'s file, set `pipeline: etl` in it or pass --pipeline etl")
	require.Contains(t, errs, "nothing was applied")
	d, err := p.c.Datasets(ctx)
	require.NoError(t, err)
	for _, x := range d {
		if x.ID == "o" {
			require.Empty(t, x.Description, "nothing was applied")
		}
	}
}

// TestApplyPipelineName: the pipeline is named in the file, by --pipeline
// (which must agree), or after the file (its folder for pipeline.yaml);
// --delete-chunks without --prune is refused.
func TestApplyPipelineName(t *testing.T) {
	t.Parallel()
	p := newPruneCLI(t)
	code, out, errs := p.apply("sales.yaml", `datasets: [{id: a}]`)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "pipeline sales (from the file's name")
	require.NoError(t, os.MkdirAll(filepath.Join(p.dir, "daily"), 0o700))
	code, out, errs = p.apply("daily/pipeline.yaml", `datasets: [{id: b}]`)
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "pipeline daily (from the folder's name, the file being pipeline.yaml")
	code, out, errs = p.apply("x.yaml", `datasets: [{id: c}]`, "--pipeline", "named")
	require.Equal(t, 0, code, errs)
	require.Contains(t, out, "pipeline named (from --pipeline)")
	require.Equal(t, withAPI(map[string]string{"dataset a": "sales", "dataset b": "daily", "dataset c": "named"}), p.catalog())

	code, _, errs = p.apply("x.yaml", "pipeline: one\ndatasets: [{id: c}]", "--pipeline", "two")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, `the file names pipeline "one" and --pipeline names "two"`)
	code, _, errs = p.apply("x.yaml", "pipeline: Not A Slug\ndatasets: [{id: c}]")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, `pipeline name "Not A Slug" is invalid`)
	code, _, errs = p.apply("x.yaml", `datasets: [{id: c}]`, "--delete-chunks")
	require.NotEqual(t, 0, code)
	require.Contains(t, errs, "--delete-chunks goes with --prune")
}

// TestApplyJobOnDatasetsElsewhere: a job may use a dataset another
// pipeline's file declares, but a file that stops declaring its own
// pipeline's dataset while a job of it still uses it is refused before
// anything changes (it would apply, and its prune then be refused).
func TestApplyJobOnDatasetsElsewhere(t *testing.T) {
	t.Parallel()
	p := newPruneCLI(t)
	code, _, errs := p.apply("etl.yaml", etlFull)
	require.Equal(t, 0, code, errs)
	// Another pipeline's job reads etl's res without declaring it.
	code, _, errs = p.apply("report.yaml", `
datasets:
  - {id: summary, location: "/s/{dataid}"}
jobs:
  - {id: sum, inputs: [res], output: summary}
`)
	require.Equal(t, 0, code, errs)

	// etl's file drops res but keeps j2, which writes it, and a new job
	// reading it; and drops pool p, which j1 still names. Refused with or
	// without --prune, nothing applied.
	dropped := strings.Replace(etlFull, "  - {id: res, location: \"/res/{dataid}\"}\n", "", 1)
	dropped = strings.Replace(dropped, "pools:\n  - {id: p, slots: 2}\n", "", 1)
	dropped += "  - {id: j3, inputs: [res], output: extra}\n"
	dropped = strings.Replace(dropped, "datasets:\n", "datasets:\n  - {id: extra, location: \"/x/{dataid}\"}\n", 1)
	for _, args := range [][]string{{"--prune"}, nil} {
		code, _, errs = p.apply("etl.yaml", dropped, args...)
		require.NotEqual(t, 0, code, args)
		require.Contains(t, errs, `dataset "res" was created by this pipeline and the file no longer declares it, but job(s) "j2", "j3" of the file use it`)
		require.Contains(t, errs, `pool "p" was created by this pipeline and the file no longer declares it, but job(s) "j1" of the file use it`)
		require.Contains(t, errs, "nothing was applied")
		require.Equal(t, "etl", p.catalog()["dataset res"])
		require.NotContains(t, p.catalog(), "dataset extra", "nothing was applied")
	}

	// A refusal by the server's checks names the job once: a check that
	// names it, and one that does not.
	for input, want := range map[string]string{
		"[res, res]": `job "sum" lists input "res" twice (against the server's pipeline)`,
		"[nope]":     `job "sum", against the server's pipeline: dataset "nope" not found`,
	} {
		code, _, errs = p.apply("report.yaml", `
datasets:
  - {id: summary, location: "/s/{dataid}"}
jobs:
  - {id: sum, inputs: `+input+`, output: summary}
`)
		require.NotEqual(t, 0, code)
		require.Contains(t, errs, want)
		require.Equal(t, 1, strings.Count(errs, `job "sum"`), errs)
	}

	// A dataset with a secret: the job of another file that reads it is
	// told that this apply gives it none.
	secret := filepath.Join(p.dir, "wh.secret")
	require.NoError(t, os.WriteFile(secret, []byte("pw"), 0o600))
	code, _, errs = p.apply("wh.yaml", `
datasets:
  - {id: wh, location: "/wh/{dataid}", secret: {file: `+secret+`}}
  - {id: loaded, location: "/l/{dataid}"}
jobs:
  - {id: load, inputs: [wh], output: loaded}
`)
	require.Equal(t, 0, code, errs)
	require.NotContains(t, errs, "warning")
	code, _, errs = p.apply("report.yaml", `
datasets:
  - {id: summary, location: "/s/{dataid}"}
jobs:
  - {id: sum, inputs: [res, wh], output: summary}
`)
	require.Equal(t, 0, code, errs)
	require.Contains(t, errs, `warning: job "sum" uses dataset "wh", which this file does not declare: other jobs hold a secret of it, and this apply sends it none`)
	require.NotContains(t, errs, `dataset "res"`, "res has no secret")
}
