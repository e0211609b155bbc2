package memory

import (
	"context"
	"maps"
	"strings"

	"github.com/chunklock/chunklock/backends"
)

var _ backends.StatusCounter = (*Backend)(nil)

// putRow writes row k as r (nil: deletes it), with b.mu held, and keeps
// what is derived from the rows with it: the counts and the index of
// RUNNING rows. Every write of b.rows goes through it.
func (b *Backend) putRow(k backends.RowKey, r *backends.StatusRow) {
	old, had := b.rows[k]
	if r == nil {
		delete(b.rows, k)
	} else {
		b.rows[k] = *r
	}
	if k.Role == backends.RoleOutput {
		if had {
			b.count(k, old.Status, -1)
		}
		if r != nil {
			b.count(k, r.Status, 1)
		}
	}
	b.indexRunning(k, r)
}

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

var _ backends.OutputCounter = (*Backend)(nil)

// CountOutputs counts job's OUTPUT rows on dataset between from and to by
// a scan of the rows (backends.OutputCounter): this store's rows are a map
// in memory, for tests and trials, where a scan is as cheap as a read.
func (b *Backend) CountOutputs(ctx context.Context, dataset, job, from, to string) (int64, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, backends.Unavailable(err, "request cancelled")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, false, backends.Unavailable(nil, "store is closed")
	}
	var n int64
	for k := range b.rows {
		if k.Dataset == dataset && k.Job == job && k.Role == backends.RoleOutput &&
			backends.CompareDataID(k.DataID, from) >= 0 && backends.CompareDataID(k.DataID, to) <= 0 {
			n++
		}
	}
	return n, true, nil
}

var _ backends.ValueCounter = (*Backend)(nil)

// CountValueStatuses counts job's OUTPUT rows on dataset by the value at
// place i (1 to 3) of their dataids and by status, by a scan of the rows
// (backends.ValueCounter), as CountOutputs does.
func (b *Backend) CountValueStatuses(ctx context.Context, dataset, job string, i int) (map[string]map[backends.Status]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, backends.Unavailable(err, "request cancelled")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, backends.Unavailable(nil, "store is closed")
	}
	out := map[string]map[backends.Status]int{}
	for k, r := range b.rows {
		if k.Dataset != dataset || k.Job != job || k.Role != backends.RoleOutput {
			continue
		}
		values := strings.Split(k.DataID, "|")
		if i < 1 || i >= len(values) {
			continue
		}
		v := values[i]
		if out[v] == nil {
			out[v] = map[backends.Status]int{}
		}
		out[v][r.Status]++
	}
	return out, nil
}
