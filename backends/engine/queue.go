package engine

import (
	"context"

	"github.com/chunklock/chunklock/backends"
)

// QueueLength tells how many findNext candidates job has: the length of
// the queue that a schedule must keep flat (one frontier, however long its
// definition), for operators and tests.
func QueueLength(ctx context.Context, s backends.Store, job string) (int, error) {
	q, ok := s.(interface {
		queueLength(ctx context.Context, job string) (int, error)
	})
	if !ok {
		return 0, backends.ErrNoQueueLength
	}
	return q.queueLength(ctx, job)
}

func (e *engine) queueLength(ctx context.Context, job string) (int, error) {
	cc, ok := e.b.(backends.CandidateCounter)
	if !ok {
		return 0, backends.ErrNoQueueLength
	}
	return cc.CountCandidates(ctx, job)
}
