package backendtest

import (
	"maps"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// applyWiden upserts job o.job (jr or jk) with its window over d starting
// o.offset days back. The model refuses a window that starts after it ends
// or reaches more than partition.MaxOffset windows away: INVALID_ARGUMENT,
// and nothing changes (a refused upsert stores nothing); so does the store
// when the job's env has a name the operator no longer allows. It stores
// any other: claims made from then on read the new window (cut to the days d
// expects: d is bounded, so even 10,000 days back reads at most its seven),
// a live claim keeps the reads it made.
func (h *harness) applyWiden(o op) {
	h.t.Helper()
	j := *h.m.job(o.job)
	mp := j.mapped["d"]
	mp.StartOffset = o.offset
	j.mapped = maps.Clone(j.mapped)
	j.mapped["d"] = mp
	_, err := h.b.s.UpsertJob(h.b.ctx, storeJob(&j))
	code := windowCode(mp)
	if code == "" {
		code = h.m.envCode(j.env) // any upsert of the job checks its env
	}
	h.code("upsertJob", code, err)
	h.expectChange(o.String(), "upsertJob", o.job, code == "" && jobChanged(*h.m.job(o.job), j))
	if code == "" {
		*h.m.job(o.job) = j
	}
}

// windowCode is what the model answers to a TIME_WINDOW mapping of the
// daily pipeline.
func windowCode(mp partition.Mapping) backends.Code {
	if mp.StartOffset > mp.EndOffset || max(mp.StartOffset, -mp.StartOffset) > partition.MaxOffset {
		return backends.CodeInvalidArgument
	}
	return ""
}
