package engine

import (
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
)

// Option configures an engine made by New.
type Option func(*options)

type options struct {
	clock    backends.Clock
	envAllow envname.Allow
}

// WithClock makes the engine tell time by c rather than by its backend's
// clock (Backend.Clock): tests move a fake clock forward. A nil c leaves
// the backend's clock.
func WithClock(c backends.Clock) Option {
	return func(o *options) {
		if c != nil {
			o.clock = c
		}
	}
}

// WithEnvAllow makes the engine admit in a job's env, beyond the names
// envname.Check admits, those of allow: the operator's exceptions
// (`chunklock serve --env-allow`). It applies to the upserts and
// validations of this engine; jobs already stored are left as they are.
func WithEnvAllow(allow envname.Allow) Option {
	return func(o *options) { o.envAllow = allow }
}
