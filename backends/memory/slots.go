package memory

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/chunklock/chunklock/backends"
)

// Slot records: the backend's one mutex makes every transaction serial.

func cloneSlots(s backends.Slots) *backends.Slots {
	s.Holders = slices.Clone(s.Holders)
	s.Seeded = maps.Clone(s.Seeded)
	return &s
}

func (t *tx) GetSlots(_ context.Context, keys []string, _ bool) ([]*backends.Slots, error) {
	out := make([]*backends.Slots, len(keys))
	for i, k := range keys {
		if s, ok := t.slots[k]; ok {
			out[i] = cloneSlots(s)
		} else if s, ok := t.b.slots[k]; ok {
			out[i] = cloneSlots(s)
		}
	}
	return out, nil
}

func (t *tx) PutSlots(_ context.Context, s backends.Slots) error {
	if t.slots == nil {
		t.slots = map[string]backends.Slots{}
	}
	t.slots[s.Key] = *cloneSlots(s)
	return nil
}

func (t *tx) CheckHolders(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, []bool, error) {
	rows, err := t.GetRows(ctx, keys)
	known := make([]bool, len(keys))
	for i := range known {
		known[i] = true
	}
	return rows, known, err
}

// ListPools returns the defined pools by id.
func (b *Backend) ListPools(context.Context) ([]backends.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []backends.Pool
	for k, s := range b.slots {
		if strings.HasPrefix(k, "pool/") && s.Pool.Slots > 0 {
			out = append(out, s.Pool)
		}
	}
	slices.SortFunc(out, func(a, b backends.Pool) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (t *tx) RunningOutputs(_ context.Context, job, output string) ([]backends.StatusRow, error) {
	var out []backends.StatusRow
	for k, r := range t.b.rows {
		if k.Job == job && k.Dataset == output && k.Role == backends.RoleOutput && r.Status == backends.StatusRunning {
			if _, written := t.rows[k]; !written {
				out = append(out, r)
			}
		}
	}
	for k, r := range t.rows {
		if r != nil && k.Job == job && k.Dataset == output && k.Role == backends.RoleOutput && r.Status == backends.StatusRunning {
			out = append(out, *r)
		}
	}
	return out, nil
}
