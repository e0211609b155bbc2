package backendtest

import (
	"fmt"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/envname"
)

// The model's part of SPEC §1's rule on job env names: a name that
// changes how a process loads or runs code is refused, by family, unless
// the operator allows it (engine.WithEnvAllow: the model's store restarts
// with the allowlist changed); a refused upsert changes
// nothing, and a claim carries the job's env as stored. The model knows
// the verdicts of a few names of its own, not the rule's code.

// modelEnvNames are the names the model sets a job's env to, with whether
// the rule refuses each by default.
var modelEnvNames = []struct {
	name    string
	refused bool
}{
	{"MODE", false}, {"SHOP_DIR", false}, {"CURRENCY", false}, {"BATCH_SIZE", false},
	{"TAR_OPTIONS", true}, {"HTTPS_PROXY", true}, {"RSYNC_RSH", true}, {"PIP_INDEX_URL", true},
	{"SSLKEYLOGFILE", true}, {"RUSTC_WRAPPER", true}, {"MANPAGER", true}, {"GIT_SSH_COMMAND", true},
}

// modelAllowable is the refused name the model's operator allows and
// withdraws ("envAllow").
const modelAllowable = "TAR_OPTIONS"

// envCode is the code the store answers to an upsert of a job with env:
// INVALID_ARGUMENT when the rule refuses a name and the operator does not
// allow it (any upsert: a job stored while its name was allowed is
// refused once that is withdrawn, until its env is mended).
func (m *model) envCode(env []backends.EnvVar) backends.Code {
	for _, e := range env {
		for _, n := range modelEnvNames {
			if n.name == e.Name && n.refused && !(e.Name == modelAllowable && m.envAllowed) {
				return backends.CodeInvalidArgument
			}
		}
	}
	return ""
}

// applyEnv applies "env" (upsert the job with o.env as its env) and
// "envAllow" (the operator allows modelAllowable, or withdraws it).
func (h *harness) applyEnv(o op) {
	h.t.Helper()
	if o.kind == "envAllow" {
		var names []string
		if !h.m.envAllowed {
			names = []string{modelAllowable}
		}
		allow, err := envname.ParseAllow(names)
		h.code("envname.ParseAllow", "", err)
		h.b.restart(engine.WithEnvAllow(allow))
		h.m.envAllowed = !h.m.envAllowed
		return
	}
	j := *h.m.job(o.job)
	j.env = []backends.EnvVar{{Name: o.env, Value: "v"}}
	h.upsertModelJob(fmt.Sprintf("upsertJob(%s, env %s)", o.job, o.env), j)
}

// upsertModelJob upserts j, a changed copy of a model job, and keeps the
// change in the model when the store must accept it.
func (h *harness) upsertModelJob(what string, j mJob) {
	h.t.Helper()
	_, err := h.b.s.UpsertJob(h.b.ctx, storeJob(&j))
	want := h.m.envCode(j.env)
	h.code(what, want, err)
	h.expectChange(what, "upsertJob", j.id, want == "" && jobChanged(*h.m.job(j.id), j))
	if want == "" {
		*h.m.job(j.id) = j
	}
}

// envNames are the names of env, nil when there are none.
func envNames(env []backends.EnvVar) []string {
	var names []string
	for _, e := range env {
		names = append(names, e.Name)
	}
	return names
}
