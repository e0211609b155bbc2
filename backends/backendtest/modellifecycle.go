package backendtest

import "fmt"

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
	j.paused = o.paused
	want := storeJob(j)
	h.equal(fmt.Sprintf("%s: paused", o), want.Paused, got.Paused)
	h.equal(fmt.Sprintf("%s: inputs", o), fmt.Sprint(want.Inputs), fmt.Sprint(got.Inputs))
	h.equal(fmt.Sprintf("%s: maxConcurrent", o), want.MaxConcurrent, got.MaxConcurrent)
	h.equal(fmt.Sprintf("%s: env", o), envNames(want.Env), envNames(got.Env))
}
