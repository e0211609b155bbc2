package partition

import (
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"weak"
)

// A STATIC definition holds up to MaxStaticValues values in any order.
// Scanning them for every lookup made a count over a 10,000-value set cost
// 10,000 comparisons per row; instead each values slice is indexed once, on
// first use, and the index kept as long as the slice lives: a set for
// Contains and the values in shortlex order for Next, Prev, Range and
// DueBefore. Definitions are values passed around by copy, so the index is
// found by the identity of the slice's backing array (a weak pointer, which
// never matches another array, even one later allocated at the same
// address), not stored in the Def. A Def's Values must therefore not be
// changed in place once the Def is used; every caller builds a new slice.

// smallStatic is the size up to which a scan is as fast as the index.
const smallStatic = 16

// staticIndex is one values slice indexed for lookups.
type staticIndex struct {
	set    map[string]struct{}
	sorted []string // shortlex order; shared, never modified
}

type staticKey struct {
	first weak.Pointer[string]
	n     int
}

// maxStaticIndexes bounds the indexes kept: the catalog holds one
// definition per dataset, shared by every snapshot of it.
const maxStaticIndexes = 1024

var (
	staticIndexes     sync.Map // staticKey -> *staticIndex
	staticIndexesSize atomic.Int64
)

// indexStatic returns the index of values (at least one value).
func indexStatic(values []string) *staticIndex {
	key := staticKey{weak.Make(&values[0]), len(values)}
	if ix, ok := staticIndexes.Load(key); ok {
		return ix.(*staticIndex)
	}
	ix := &staticIndex{set: make(map[string]struct{}, len(values)), sorted: slices.Clone(values)}
	for _, v := range values {
		ix.set[v] = struct{}{}
	}
	slices.SortFunc(ix.sorted, CompareDataID)
	if staticIndexesSize.Add(1) > maxStaticIndexes {
		pruneStaticIndexes()
	}
	if prev, loaded := staticIndexes.LoadOrStore(key, ix); loaded {
		staticIndexesSize.Add(-1)
		return prev.(*staticIndex)
	}
	return ix
}

// pruneStaticIndexes drops the indexes of slices gone; when too many are
// still alive, it drops them all (they are rebuilt on their next use).
func pruneStaticIndexes() {
	alive := int64(0)
	staticIndexes.Range(func(k, _ any) bool {
		if k.(staticKey).first.Value() == nil {
			staticIndexes.Delete(k)
		} else {
			alive++
		}
		return true
	})
	if alive > maxStaticIndexes/2 {
		staticIndexes.Clear()
		alive = 0
	}
	staticIndexesSize.Store(alive + 1)
}

// staticContains reports whether id is one of values.
func staticContains(values []string, id string) bool {
	if len(values) <= smallStatic {
		return slices.Contains(values, id)
	}
	_, ok := indexStatic(values).set[id]
	return ok
}

// staticSorted returns values in shortlex order: a copy of a small set,
// the index's own slice (not to be modified) otherwise.
func staticSorted(values []string) []string {
	if len(values) <= smallStatic {
		sorted := slices.Clone(values)
		slices.SortFunc(sorted, CompareDataID)
		return sorted
	}
	return indexStatic(values).sorted
}

// staticNext is the smallest value after id (shortlex), staticPrev the
// largest before it.
func staticNext(values []string, id string) (string, bool) {
	sorted := staticSorted(values)
	i, found := slices.BinarySearchFunc(sorted, id, CompareDataID)
	if found {
		i++
	}
	if i == len(sorted) {
		return "", false
	}
	return sorted[i], true
}

func staticPrev(values []string, id string) (string, bool) {
	sorted := staticSorted(values)
	i, _ := slices.BinarySearchFunc(sorted, id, CompareDataID)
	if i == 0 {
		return "", false
	}
	return sorted[i-1], true
}

// staticLast is the largest value.
func staticLast(values []string) string {
	sorted := staticSorted(values)
	return sorted[len(sorted)-1]
}

// staticSeq yields the values in [from, to] ("" = unbounded) in shortlex
// order.
func staticSeq(values []string, from, to string) iter.Seq[string] {
	sorted := staticSorted(values)
	start := 0
	if from != "" {
		start, _ = slices.BinarySearchFunc(sorted, from, CompareDataID)
	}
	return func(yield func(string) bool) {
		for _, v := range sorted[start:] {
			if to != "" && CompareDataID(v, to) > 0 {
				return
			}
			if !yield(v) {
				return
			}
		}
	}
}
