package pipeline

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Pipelines own what they create (SPEC §11, like kubectl's apply sets).
// `chunklock apply` names the pipeline in every upsert; the server records
// the name as the owner of each dataset, job and pool the upsert creates
// and keeps it as it is afterwards (backends/pipelineowner.go): an object
// created otherwise (the API, the playground, a file read from standard
// input without a name) has none and is never pruned, and one pipeline's
// object is refused to another. `apply --prune` deletes the objects of
// its pipeline that the file no longer declares: jobs first, then
// datasets, then pools, each refused, with the reason, while something
// still needs it.

// Delete is what `apply --prune` does to an object of the pipeline that
// the file no longer declares.
const Delete Action = "delete"

// DefaultName is the name of a pipeline whose file does not say
// `pipeline:`: the file's name without .yaml or .yml, or, for a file
// named pipeline.yaml, the name of its folder (examples/daily/pipeline.yaml
// is pipeline daily). "" for standard input ("-").
func DefaultName(path string) (string, error) {
	if path == "-" || path == "" {
		return "", nil
	}
	base := filepath.Base(path)
	stem := strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	if stem == "pipeline" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", err
		}
		stem = filepath.Base(filepath.Dir(abs))
	}
	name := strings.ToLower(stem)
	if backends.ValidateID("pipeline", name) != nil {
		return "", fmt.Errorf("%s: cannot name the pipeline after the file (%q is not 1-63 characters of a-z 0-9 _ . -): set `pipeline: NAME` in the file or pass --pipeline NAME", path, name)
	}
	return name, nil
}

// PipelineName is the name apply records as the owner of what it creates:
// flag (--pipeline) or the file's `pipeline:` (which must agree when both
// are given), else DefaultName(path). source says where it came from, for
// the plan. "" (no owner) only for standard input without a name.
func (p *Pipeline) PipelineName(flag, path string) (name, source string, err error) {
	switch {
	case flag != "" && p.Name != "" && flag != p.Name:
		return "", "", fmt.Errorf("the file names pipeline %q and --pipeline names %q: say one name", p.Name, flag)
	case flag != "":
		if err := backends.ValidateID("pipeline", flag); err != nil {
			return "", "", fmt.Errorf("--pipeline %q is invalid: want 1-63 characters of a-z 0-9 _ . -, starting with a letter or digit", flag)
		}
		return flag, "--pipeline", nil
	case p.Name != "":
		return p.Name, "pipeline: in the file", nil
	}
	name, err = DefaultName(path)
	if err != nil || name == "" {
		return "", "", err
	}
	from := "the file's name"
	if b := filepath.Base(path); b == "pipeline.yaml" || b == "pipeline.yml" {
		from = "the folder's name, the file being " + b
	}
	return name, from + "; set `pipeline: NAME` in the file to choose another", nil
}

// CheckOwners refuses a pipeline that declares an object another pipeline
// created (the server would refuse its upsert): one object belongs to one
// pipeline file. Objects created otherwise are not checked.
func (p *Pipeline) CheckOwners(name string, datasets []backends.Dataset, jobs []backends.Job, pools []backends.Pool) error {
	if name == "" {
		return nil
	}
	owner := map[string]string{}
	for _, d := range datasets {
		owner["dataset "+d.ID] = d.Pipeline
	}
	for _, j := range jobs {
		owner["job "+j.ID] = j.Pipeline
	}
	for _, pl := range pools {
		owner["pool "+pl.ID] = pl.Pipeline
	}
	var errs []string
	others := map[string][]string{} // another pipeline -> the file's objects it created
	var otherOrder []string
	check := func(kind, id string) {
		if o := owner[kind+" "+id]; o != "" && o != name {
			if len(others[o]) == 0 {
				otherOrder = append(otherOrder, o)
			}
			others[o] = append(others[o], fmt.Sprintf("%s %q", kind, id))
		}
	}
	for _, d := range p.Datasets {
		check("dataset", d.ID)
	}
	for _, j := range p.Jobs {
		check("job", j.ID)
	}
	for _, pl := range p.Pools {
		check("pool", pl.ID)
	}
	for _, o := range otherOrder {
		objs := others[o]
		list := strings.Join(objs[:min(len(objs), 5)], ", ")
		if len(objs) > 5 {
			list += fmt.Sprintf(" and %d more", len(objs)-5)
		}
		errs = append(errs, fmt.Sprintf("%d object(s) of the file belong to pipeline %q (its apply created them): %s. This file applies as pipeline %q: if it is %q's file, set `pipeline: %s` in it or pass --pipeline %s; else declare each object in one pipeline file only",
			len(objs), o, list, name, o, o, o))
	}
	// A job may use a dataset or a pool another pipeline declares, but
	// not one this pipeline created and the file no longer declares: the
	// file would apply, and its prune then be refused for that job. (With
	// or without --prune: the file is the pipeline's whole definition.)
	declared := map[string]bool{}
	for _, d := range p.Datasets {
		declared["dataset "+d.ID] = true
	}
	for _, pl := range p.Pools {
		declared["pool "+pl.ID] = true
	}
	users := map[string][]string{} // "kind id" -> the jobs using it, in file order
	var order []string
	use := func(key, job string) {
		if declared[key] || owner[key] != name {
			return
		}
		if len(users[key]) == 0 {
			order = append(order, key)
		}
		if !slices.Contains(users[key], job) {
			users[key] = append(users[key], job)
		}
	}
	for _, j := range p.Jobs {
		for _, ds := range j.Datasets() {
			use("dataset "+ds, j.ID)
		}
		if j.Pool != "" {
			use("pool "+j.Pool, j.ID)
		}
	}
	for _, key := range order {
		kind, id, _ := strings.Cut(key, " ")
		jobs := make([]string, len(users[key]))
		for i, j := range users[key] {
			jobs[i] = strconv.Quote(j)
		}
		errs = append(errs, fmt.Sprintf("%s %q was created by this pipeline and the file no longer declares it, but job(s) %s of the file use it; declare it again, or drop its use", kind, id, strings.Join(jobs, ", ")))
	}
	if len(errs) > 0 {
		return fmt.Errorf("pipeline %q: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// Chunks is what prune needs to know of a dataset's chunks: how many
// there are and how many are RUNNING (the live claims of its producer).
type Chunks struct {
	Total, Running int
}

// PruneState is the server's catalog as prune plans against it.
type PruneState struct {
	Datasets []backends.Dataset
	Jobs     []backends.Job
	Pools    []backends.Pool
	// Chunks counts the chunks of the datasets prune would delete and of
	// the outputs of the jobs it would delete; a dataset missing from it
	// is not checked here (the server still refuses).
	Chunks map[string]Chunks
	// DeleteChunks allows deleting a dataset that has chunks.
	DeleteChunks bool
}

// PlanPrune returns the deletions `apply --prune` makes for pipeline name:
// every job, dataset and pool the pipeline created that the file no
// longer declares, in the order they can be deleted (jobs, then the
// datasets they used, then pools). A deletion that would be refused has
// Refused set to why: a job with live claims; a dataset a job keeps
// reading or writing (one outside the file, or a job whose deletion is
// refused), or one with chunks without DeleteChunks; a pool a job keeps
// naming. Jobs the file declares are taken as the file declares them.
func (p *Pipeline) PlanPrune(name string, st PruneState) ([]Change, error) {
	if name == "" {
		return nil, fmt.Errorf("--prune needs a pipeline name: set `pipeline: NAME` in the file or pass --pipeline NAME")
	}
	declared := map[string]bool{}
	for _, d := range p.Datasets {
		declared["dataset "+d.ID] = true
	}
	for _, pl := range p.Pools {
		declared["pool "+pl.ID] = true
	}
	// The jobs once the file is applied: the server's, replaced by the
	// file's of the same id.
	after := map[string]backends.Job{}
	for _, j := range st.Jobs {
		after[j.ID] = j
	}
	for _, j := range p.Jobs {
		declared["job "+j.ID] = true
		bj, err := j.Backend()
		if err != nil {
			return nil, err
		}
		after[j.ID] = bj
	}
	var out []Change
	deleted := map[string]bool{}    // jobs deleted
	refusedJob := map[string]bool{} // jobs whose deletion is refused
	for _, j := range sortedJobs(st.Jobs) {
		if j.Pipeline != name || declared["job "+j.ID] {
			continue
		}
		ch := Change{Kind: "job", ID: j.ID, Action: Delete}
		if n := st.Chunks[j.Output].Running; n > 0 {
			ch.Refused = fmt.Sprintf("LOCKED: %d live claim(s) on its output %s; apply --prune again once they end", n, j.Output)
			refusedJob[j.ID] = true
		} else {
			deleted[j.ID] = true
		}
		out = append(out, ch)
	}
	var remaining []backends.Job
	for _, j := range sortedJobs(mapValues(after)) {
		if !deleted[j.ID] {
			remaining = append(remaining, j)
		}
	}
	// by names the job that keeps a dataset or pool, and why it stays.
	by := func(j backends.Job) string {
		switch {
		case refusedJob[j.ID]:
			return fmt.Sprintf("by job %q, whose deletion is refused", j.ID)
		case declared["job "+j.ID]:
			return fmt.Sprintf("by job %q, which the file declares", j.ID)
		}
		return fmt.Sprintf("by job %q, which the file does not declare", j.ID)
	}
	datasets := slices.Clone(st.Datasets)
	slices.SortFunc(datasets, func(a, b backends.Dataset) int { return strings.Compare(a.ID, b.ID) })
	for _, d := range datasets {
		if d.Pipeline != name || declared["dataset "+d.ID] {
			continue
		}
		ch := Change{Kind: "dataset", ID: d.ID, Action: Delete}
		for _, j := range remaining {
			if j.Output == d.ID {
				ch.Refused = "LOCKED: still written " + by(j)
				break
			}
			if slices.Contains(j.Inputs, d.ID) {
				ch.Refused = "LOCKED: still read " + by(j)
				break
			}
		}
		if n := st.Chunks[d.ID].Total; ch.Refused == "" && n > 0 && !st.DeleteChunks {
			ch.Refused = fmt.Sprintf("it has %d chunk(s); --delete-chunks deletes them with it", n)
		}
		if ch.Refused == "" && !st.DeleteChunks && d.Partitions != nil && d.Partitions.Kind == partition.Dynamic {
			ch.Refused = "its DYNAMIC set's values go with it; --delete-chunks deletes them with it"
		}
		out = append(out, ch)
	}
	pools := slices.Clone(st.Pools)
	slices.SortFunc(pools, func(a, b backends.Pool) int { return strings.Compare(a.ID, b.ID) })
	for _, pl := range pools {
		if pl.Pipeline != name || declared["pool "+pl.ID] {
			continue
		}
		ch := Change{Kind: "pool", ID: pl.ID, Action: Delete}
		for _, j := range remaining {
			if j.Pool == pl.ID {
				ch.Refused = "LOCKED: still named " + by(j)
				break
			}
		}
		out = append(out, ch)
	}
	return out, nil
}

func sortedJobs(jobs []backends.Job) []backends.Job {
	out := slices.Clone(jobs)
	slices.SortFunc(out, func(a, b backends.Job) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
