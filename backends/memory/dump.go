package memory

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// The memory backend dumps and loads its maps (backends/dump.go).

var _ backends.Dumper = (*Backend)(nil)

// DumpCovers names the backend's tables (its maps) and the kind of each.
func (b *Backend) DumpCovers() map[string]backends.DumpKind {
	return map[string]backends.DumpKind{
		"datasets": backends.DumpDatasets, "jobs": backends.DumpJobs, "version": "", "producer": "",
		"creds": backends.DumpCredentials, "rows": backends.DumpRows, "running": "", "fences": backends.DumpFences, "fenceFloor": backends.DumpFences,
		"cands": backends.DumpCandidates, "candSeq": "", "events": backends.DumpEvents, "eventSeq": "", "locks": backends.DumpLocks,
		"lockSeq": "", "slots": backends.DumpSlots, "records": backends.DumpRecords,
		"watchers": "", "loaded": "", "closed": "", "mu": "", "counts": "", "changes": backends.DumpChanges,
		"values": backends.DumpValues,
	}
}

func (b *Backend) Empty(context.Context) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.datasets)+len(b.jobs)+len(b.creds)+len(b.rows)+len(b.fences)+len(b.cands)+len(b.events)+
		len(b.locks)+len(b.slots)+len(b.records.m)+len(b.changes)+len(b.values) == 0, nil
}

// sortedKeys returns m's keys in the order less gives.
func sortedKeys[K comparable, V any](m map[K]V, less func(a, b K) int) []K {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, less)
	return ks
}

func pairCmp(a, b [2]string) int {
	if c := strings.Compare(a[0], b[0]); c != 0 {
		return c
	}
	return strings.Compare(a[1], b[1])
}

// Dump copies the items under the lock, then hands them to fn.
func (b *Backend) Dump(ctx context.Context, kind backends.DumpKind, fn func(backends.DumpItem) error) error {
	items, err := b.dumpItems(kind)
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(it); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) dumpItems(kind backends.DumpKind) ([]backends.DumpItem, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []backends.DumpItem
	switch kind {
	case backends.DumpDatasets:
		for _, id := range sortedKeys(b.datasets, strings.Compare) {
			d := b.datasets[id]
			out = append(out, backends.DumpItem{Dataset: &d})
		}
	case backends.DumpJobs:
		for _, id := range sortedKeys(b.jobs, strings.Compare) {
			j := b.jobs[id]
			out = append(out, backends.DumpItem{Job: &j})
		}
	case backends.DumpCredentials:
		for _, k := range sortedKeys(b.creds, pairCmp) {
			c := b.creds[k]
			c.Ciphertext = bytes.Clone(c.Ciphertext)
			out = append(out, backends.DumpItem{Credential: &c})
		}
	case backends.DumpRows:
		for _, k := range sortedKeys(b.rows, func(x, y backends.RowKey) int { return strings.Compare(rowCursor(x), rowCursor(y)) }) {
			r := b.rows[k]
			out = append(out, backends.DumpItem{Row: &r})
		}
	case backends.DumpFences:
		if b.fenceFloor > 0 {
			out = append(out, backends.DumpItem{Fence: &backends.Fence{Fence: b.fenceFloor, Global: true}})
		}
		for _, k := range sortedKeys(b.fences, pairCmp) {
			out = append(out, backends.DumpItem{Fence: &backends.Fence{Dataset: k[0], DataID: k[1], Fence: b.fences[k]}})
		}
	case backends.DumpCandidates:
		for _, h := range sortedKeys(b.cands, func(x, y int64) int { return int(x - y) }) {
			c := b.cands[h]
			c.Handle = nil
			out = append(out, backends.DumpItem{Candidate: &c})
		}
	case backends.DumpEvents:
		for i := range b.events {
			e := b.events[i]
			out = append(out, backends.DumpItem{Event: &e})
		}
	case backends.DumpLocks:
		for _, id := range sortedKeys(b.locks, strings.Compare) {
			l := b.locks[id]
			out = append(out, backends.DumpItem{Lock: &l})
		}
	case backends.DumpSlots:
		for _, k := range sortedKeys(b.slots, strings.Compare) {
			s := b.slots[k]
			out = append(out, backends.DumpItem{Slots: &s})
		}
	case backends.DumpRecords:
		for _, k := range sortedKeys(b.records.m, strings.Compare) {
			r := b.records.get(k)
			out = append(out, backends.DumpItem{Record: &r})
		}
	case backends.DumpBackfills:
		// The memory backend backfills in the job's transaction.
	case backends.DumpChanges:
		for i := range b.changes {
			c := b.changes[i]
			out = append(out, backends.DumpItem{Change: &c})
		}
	case backends.DumpValues:
		for _, k := range sortedKeys(b.values, func(x, y valueKey) int {
			return pairCmp([2]string{x.dataset, x.dimension}, [2]string{y.dataset, y.dimension})
		}) {
			for _, v := range sortedKeys(b.values[k], backends.CompareDataID) {
				out = append(out, backends.DumpItem{Value: &backends.PartitionValue{Dataset: k.dataset, Dimension: k.dimension, Value: v, AddedAt: b.values[k][v]}})
			}
		}
	default:
		return nil, fmt.Errorf("memory: no dump kind %q", kind)
	}
	return out, nil
}

// Load stores items as they come; FinishLoad lays a global fence floor.
func (b *Backend) Load(_ context.Context, kind backends.DumpKind, items []backends.DumpItem) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.loaded.IsZero() {
		b.loaded = time.Now().UTC()
	}
	for _, it := range items {
		if err := b.load(kind, it); err != nil {
			return err
		}
	}
	return nil
}

func (b *Backend) load(kind backends.DumpKind, it backends.DumpItem) error {
	switch kind {
	case backends.DumpDatasets:
		b.datasets[it.Dataset.ID] = *it.Dataset
		b.version++
	case backends.DumpJobs:
		b.jobs[it.Job.ID] = *it.Job
		b.producer[it.Job.Output] = it.Job.ID
		b.version++
	case backends.DumpCredentials:
		b.creds[[2]string{it.Credential.Job, it.Credential.Dataset}] = *it.Credential
	case backends.DumpRows:
		r := *it.Row
		b.putRow(r.RowKey, &r) // counts are derived: kept as rows load
	case backends.DumpEvents:
		e := *it.Event
		b.eventSeq++
		e.Seq = b.eventSeq
		b.events = append(b.events, e)
	case backends.DumpFences:
		f := it.Fence
		if !f.Global {
			b.fences[[2]string{f.Dataset, f.DataID}] = max(b.fences[[2]string{f.Dataset, f.DataID}], f.Fence)
			return nil
		}
		for _, k := range b.fencedChunks() {
			b.fences[k] = max(b.fences[k], f.Fence)
		}
		// Chunks neither rows nor events name (a deleted dataset's, their
		// events pruned) start above it too.
		b.fenceFloor = max(b.fenceFloor, f.Fence)
	case backends.DumpCandidates:
		b.candSeq++
		c := *it.Candidate
		c.Handle = b.candSeq
		b.cands[b.candSeq] = c
	case backends.DumpLocks:
		b.lockSeq++
		l := *it.Lock
		l.ID = fmt.Sprintf("rl%010d", b.lockSeq)
		b.locks[l.ID] = l
	case backends.DumpSlots:
		b.slots[it.Slots.Key] = *it.Slots
	case backends.DumpRecords:
		if b.records.m == nil {
			b.records.m = map[string]backends.Record{}
		}
		r := *it.Record
		r.Version = 1
		b.records.m[r.Key] = r
	case backends.DumpChanges:
		c := *it.Change
		c.Cursor = ""
		b.changes = append(b.changes, c)
	case backends.DumpBackfills:
		j, ok := b.jobs[it.Backfill.Job]
		if !ok || len(j.Inputs) == 0 {
			return nil
		}
		for k, r := range b.rows {
			if k.Dataset == j.Inputs[0] && k.Role == backends.RoleOutput && k.ReadFor == "" && k.Job == b.outputJob(k.Dataset) && r.Status == backends.StatusReady {
				b.candSeq++
				b.cands[b.candSeq] = backends.Candidate{Job: j.ID, DataID: k.DataID, Handle: b.candSeq}
			}
		}
	case backends.DumpValues:
		v := it.Value
		k := valueKey{v.Dataset, v.Dimension}
		if b.values[k] == nil {
			b.values[k] = map[string]time.Time{}
		}
		b.values[k][v.Value] = v.AddedAt
	default:
		return fmt.Errorf("memory: no dump kind %q", kind)
	}
	return nil
}

// fencedChunks lists every chunk the rows and events name: those a
// global fence floor covers.
func (b *Backend) fencedChunks() [][2]string {
	seen := map[[2]string]bool{}
	for k := range b.rows {
		seen[[2]string{k.Dataset, k.DataID}] = true
	}
	for _, e := range b.events {
		seen[[2]string{e.Dataset, e.DataID}] = true
	}
	out := make([][2]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return pairCmp(out[i], out[j]) < 0 })
	return out
}

// FinishLoad has nothing to do: the maps' counters moved with the loads.
func (b *Backend) FinishLoad(context.Context) error { return nil }
