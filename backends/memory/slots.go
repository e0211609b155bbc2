package memory

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Slot records: the backend's one mutex makes every transaction serial.
// A claim counts the live claims of a job or pool (backends.LiveCounter)
// in an index of the OUTPUT rows in RUNNING, kept at commit.

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

// CountLive counts the committed OUTPUT rows of jobs in RUNNING whose
// lease is to come at now; this transaction's own claims are not counted.
func (t *tx) CountLive(_ context.Context, jobs []string, now time.Time) (int, error) {
	n := 0
	for _, j := range jobs {
		for _, lease := range t.b.running[j] {
			if now.Before(lease) {
				n++
			}
		}
	}
	return n, nil
}

// indexRunning keeps the index of RUNNING OUTPUT rows as row k becomes r
// (nil: deleted); the caller holds b.mu.
func (b *Backend) indexRunning(k backends.RowKey, r *backends.StatusRow) {
	if k.Role != backends.RoleOutput {
		return
	}
	if r == nil || r.Status != backends.StatusRunning {
		if rs := b.running[k.Job]; rs != nil {
			delete(rs, k)
			if len(rs) == 0 {
				delete(b.running, k.Job)
			}
		}
		return
	}
	rs := b.running[k.Job]
	if rs == nil {
		rs = map[backends.RowKey]time.Time{}
		b.running[k.Job] = rs
	}
	rs[k] = r.LeaseExpiresAt
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
