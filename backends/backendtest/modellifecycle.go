package backendtest

import (
	"fmt"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

// The model's catalog lifecycle (SPEC §11): pausing and resuming a job by
// pauseJob/resumeJob rather than by an upsert of the whole job.

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
