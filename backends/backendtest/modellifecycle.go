package backendtest

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

// The model's catalog lifecycle (SPEC §11): pausing and resuming a job by
// pauseJob/resumeJob rather than by an upsert of the whole job; deleting a
// job and declaring it again (redeclare); the pipeline owning a job or the
// pool (own, backends/pipelineowner.go).

// modelPipelines are the pipelines the model's upserts name ("": none).
var modelPipelines = []string{"", "etl", "sales"}

// applyPause pauses or resumes o.job as o.paused says: the store answers
// the job as the model has it, with only Paused changed.
func (h *harness) applyPause(o op) {
	h.t.Helper()
	b, m := h.b, h.m
	pause := b.s.ResumeJob
	if o.paused {
		pause = b.s.PauseJob
	}
	got, err := pause(b.ctx, o.job)
	h.code(o.String(), "", err)
	j := m.job(o.job)
	op := "resumeJob"
	if o.paused {
		op = "pauseJob"
	}
	h.expectChange(o.String(), op, o.job, j.paused != o.paused)
	j.paused = o.paused
	want := storeJob(j)
	h.equal(fmt.Sprintf("%s: paused", o), want.Paused, got.Paused)
	h.equal(fmt.Sprintf("%s: inputs", o), fmt.Sprint(want.Inputs), fmt.Sprint(got.Inputs))
	h.equal(fmt.Sprintf("%s: maxConcurrent", o), want.MaxConcurrent, got.MaxConcurrent)
	h.equal(fmt.Sprintf("%s: env", o), envNames(want.Env), envNames(got.Env))
}

// applyDeleteDataset tries to delete o.dataset: every dataset of the model
// is read or written by a job, so the store refuses (LOCKED) and keeps
// every row, which compareAll checks after the step.
func (h *harness) applyDeleteDataset(o op) {
	h.t.Helper()
	if !h.m.used(o.dataset) {
		h.fatalf("%s: the model deletes only datasets that jobs use", o)
	}
	h.code(o.String(), backends.CodeLocked, h.b.s.DeleteDataset(h.b.ctx, o.dataset, o.cascade))
	h.expectChange(o.String(), "deleteDataset", o.dataset, false)
}

// used tells whether a job of the model reads or writes dataset.
func (m *model) used(dataset string) bool {
	for _, j := range m.jobs {
		if j.output == dataset || slices.Contains(j.inputs, dataset) {
			return true
		}
	}
	return false
}

// applyRedeclare deletes o.job and declares it again as the model has it,
// naming o.pipeline, under o.newID when set. The deletion is refused
// (LOCKED, changing nothing) while the job has a RUNNING claim, live or
// past its lease; then the upsert is applyOwn's. Otherwise the job goes
// with its reads (its INPUT rows), no replica serves it, and declared
// again, under its id or another, it takes its OUTPUT rows over as they
// are, still keyed under the id of the first job deleted (nothing READY
// is computed again), and belongs to o.pipeline. Under another id the
// model's job is that id from then on (the operations draw it), and
// tokens of the old id are stale.
func (h *harness) applyRedeclare(o op) {
	h.t.Helper()
	b, m := h.b, h.m
	what := o.String()
	err := b.s.DeleteJob(b.ctx, o.job)
	if m.running(o.job) {
		h.code(what+": deleteJob", backends.CodeLocked, err)
		h.expectChange(what, "deleteJob", o.job, false)
		h.applyOwn(o)
		return
	}
	h.code(what+": deleteJob", "", err)
	h.expectChange(what, "deleteJob", o.job, true)
	m.deleteReads(o.job)
	_, err = b.s.FindNext(b.ctx, o.job, modelExecutor)
	h.code(what+": findNext of the deleted job", backends.CodeNotFound, err)
	mj := m.job(o.job)
	if mj.rowID == "" {
		mj.rowID = mj.id // the output records the key of its rows
	}
	if o.newID != "" {
		delete(m.owners, "job "+mj.id)
		mj.former = append(mj.former, mj.id)
		mj.id = o.newID
		slices.SortFunc(m.jobs, func(a, b *mJob) int { return cmp.Compare(a.id, b.id) })
		o.job = o.newID
	}
	j := storeJob(mj)
	j.Pipeline = o.pipeline
	_, err = b.s.UpsertJob(b.ctx, j)
	h.code(what+": upsertJob", "", err)
	h.expectChange(what, "upsertJob", o.job, true)
	m.setOwner("job "+o.job, o.pipeline)
	h.checkOwner(o)
}

// applyOwn upserts o.job (or, with o.direct, the pool) unchanged but for
// naming o.pipeline: the store keeps the owner it has, and refuses
// (INVALID_ARGUMENT) a pipeline other than an owner it has. Nothing
// changes either way, and no catalog change is recorded.
func (h *harness) applyOwn(o op) {
	h.t.Helper()
	b, m := h.b, h.m
	key, want := "job "+o.job, backends.Code("")
	var err error
	if o.direct {
		key = "pool " + modelPool
		_, err = b.s.UpsertPool(b.ctx, backends.Pool{ID: modelPool, Slots: m.pools[modelPool], Pipeline: o.pipeline})
	} else {
		j := storeJob(m.job(o.job))
		j.Pipeline = o.pipeline
		_, err = b.s.UpsertJob(b.ctx, j)
		want = m.envCode(m.job(o.job).env)
	}
	if owner := m.owners[key]; want == "" && owner != "" && o.pipeline != "" && owner != o.pipeline {
		want = backends.CodeInvalidArgument
	}
	h.code(o.String(), want, err)
	h.expectChange(o.String(), "", "", false)
	h.checkOwner(o)
}

// checkOwner compares the owner of o's job or pool with the model's.
func (h *harness) checkOwner(o op) {
	h.t.Helper()
	b := h.b
	if o.direct {
		p, err := b.s.Pool(b.ctx, modelPool)
		h.code("pool", "", err)
		h.equal(o.String()+": the pool's pipeline", h.m.owners["pool "+modelPool], p.Pipeline)
		return
	}
	j, err := b.s.Job(b.ctx, o.job)
	h.code("job", "", err)
	h.equal(o.String()+": the job's pipeline", h.m.owners["job "+o.job], j.Pipeline)
}

// running tells whether job has a RUNNING OUTPUT row, live or not.
func (m *model) running(job string) bool {
	j := m.job(job)
	for k, r := range m.rows {
		if k.role == backends.RoleOutput && k.dataset == j.output && k.job == j.rowJob() && r.status == running {
			return true
		}
	}
	return false
}

// deleteReads removes the INPUT rows of job: what deleting it removes.
func (m *model) deleteReads(job string) {
	for k := range m.rows {
		if k.role == backends.RoleInput && k.job == job {
			delete(m.rows, k)
		}
	}
}

// setOwner records the pipeline owning an object ("" for none).
func (m *model) setOwner(key, pipeline string) {
	if m.owners == nil {
		m.owners = map[string]string{}
	}
	m.owners[key] = pipeline
}

// ownedJobs lists the jobs a pipeline owns, by id.
func (m *model) ownedJobs() []string {
	var out []string
	for _, j := range m.jobs {
		if m.owners["job "+j.id] != "" {
			out = append(out, j.id)
		}
	}
	return out
}
