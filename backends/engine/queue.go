package engine

import "context"

// QueueLength tells how many findNext candidates job has, hidden ones
// included.
func (e *engine) QueueLength(ctx context.Context, job string) (int, error) {
	return e.b.CountCandidates(ctx, job)
}
