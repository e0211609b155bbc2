package memory

import (
	"context"
	"maps"

	"github.com/chunklock/chunklock/backends"
)

var _ backends.StatusCounter = (*Backend)(nil)

// count adds n to the OUTPUT rows of k's dataset and job in status s, as
// a transaction commits (with b.mu held).
func (b *Backend) count(k backends.RowKey, s backends.Status, n int) {
	key := [2]string{k.Dataset, k.Job}
	m := b.counts[key]
	if m == nil {
		m = map[backends.Status]int{}
		b.counts[key] = m
	}
	if m[s] += n; m[s] == 0 {
		delete(m, s)
	}
}

// CountStatuses answers from the counts kept as transactions commit
// (backends.StatusCounter).
func (b *Backend) CountStatuses(ctx context.Context, dataset, job string) (map[backends.Status]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, backends.Unavailable(err, "request cancelled")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, backends.Unavailable(nil, "store is closed")
	}
	return maps.Clone(b.counts[[2]string{dataset, job}]), nil
}
