package engine

import (
	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/envname"
)

// New builds the Store on a backend: its clock is the backend's
// (Backend.Clock) unless an option gives another.
func New(b backends.Backend, opts ...Option) backends.Store {
	o := options{clock: b.Clock()}
	for _, opt := range opts {
		opt(&o)
	}
	l := b.Limits()
	e := &engine{b: b, clock: o.clock, envAllow: o.envAllow, maxBatch: max(1, l.MaxBatch),
		maxKeys: l.MaxBatchKeys, maxBytes: l.MaxTxnBytes, commit: l.CommitBytes}
	e.maxRange = e.maxBatch
	if l.MaxRangeBatch > 0 && e.maxBatch > 1 {
		e.maxRange = l.MaxRangeBatch
	}
	e.live = batcher[*liveOp]{size: e.maxBatch, take: e.takeLive, run: e.runLive,
		inFlight: "it may have taken effect"}
	e.next = batcher[*nextOp]{size: e.maxBatch, take: e.takeNext, run: e.runNext,
		inFlight: "a chunk may have been claimed for it; that claim fails when its lease passes, with an attempt counted"}
	return e
}

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
