package backends

import (
	"hash/maphash"
	"iter"
	"slices"
)

// CatalogMap is an immutable map from ids to V. With returns a new map
// that shares every entry but the changed one with the old map, in time
// independent of the map's size, so that a catalog can change by one job
// without copying the others while operations still read the old one.
type CatalogMap[V any] struct {
	root *mapNode[V]
	n    int
}

// mapNode is a node of a hash trie: an inner node has 32 children picked
// by 5 bits of the key's hash; a leaf holds one entry, or several whose
// hashes are equal.
type mapNode[V any] struct {
	kids    *[32]*mapNode[V] // nil for a leaf
	entries []mapEntry[V]
}

type mapEntry[V any] struct {
	hash uint64
	key  string
	val  V
}

var mapSeed = maphash.MakeSeed()

// Len returns the number of entries.
func (m CatalogMap[V]) Len() int { return m.n }

// Lookup returns the value of key and whether there is one.
func (m CatalogMap[V]) Lookup(key string) (V, bool) {
	h := maphash.String(mapSeed, key)
	n := m.root
	for shift := uint(0); n != nil; shift += 5 {
		if n.kids == nil {
			for _, e := range n.entries {
				if e.key == key {
					return e.val, true
				}
			}
			break
		}
		n = n.kids[(h>>shift)&31]
	}
	var zero V
	return zero, false
}

// Get returns the value of key, or the zero value.
func (m CatalogMap[V]) Get(key string) V {
	v, _ := m.Lookup(key)
	return v
}

// All iterates over the entries in no particular order.
func (m CatalogMap[V]) All() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) { m.root.each(yield) }
}

// Keys returns the keys, sorted.
func (m CatalogMap[V]) Keys() []string {
	out := make([]string, 0, m.n)
	for k := range m.All() {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (n *mapNode[V]) each(yield func(string, V) bool) bool {
	switch {
	case n == nil:
		return true
	case n.kids == nil:
		for _, e := range n.entries {
			if !yield(e.key, e.val) {
				return false
			}
		}
		return true
	}
	for _, k := range n.kids {
		if !k.each(yield) {
			return false
		}
	}
	return true
}

// with returns the map with key set to v; m is unchanged.
func (m CatalogMap[V]) with(key string, v V) CatalogMap[V] {
	root, added := m.root.with(0, mapEntry[V]{hash: maphash.String(mapSeed, key), key: key, val: v})
	if added {
		m.n++
	}
	m.root = root
	return m
}

// with returns a copy of the subtree at depth shift/5 holding e, and
// whether e's key is new.
func (n *mapNode[V]) with(shift uint, e mapEntry[V]) (*mapNode[V], bool) {
	if n == nil {
		return &mapNode[V]{entries: []mapEntry[V]{e}}, true
	}
	if n.kids == nil {
		for i, o := range n.entries {
			if o.key == e.key {
				entries := slices.Clone(n.entries)
				entries[i] = e
				return &mapNode[V]{entries: entries}, false
			}
		}
		if shift >= 64 || n.entries[0].hash == e.hash {
			return &mapNode[V]{entries: append(slices.Clone(n.entries), e)}, true
		}
		// Split the leaf: its entries (one hash) and e go one level down.
		inner := &mapNode[V]{kids: new([32]*mapNode[V])}
		inner.kids[(n.entries[0].hash>>shift)&31] = n
		return inner.with(shift, e)
	}
	kids := *n.kids
	i := (e.hash >> shift) & 31
	kid, added := kids[i].with(shift+5, e)
	kids[i] = kid
	return &mapNode[V]{kids: &kids}, added
}

// without returns the map without key; m is unchanged.
func (m CatalogMap[V]) without(key string) CatalogMap[V] {
	root, removed := m.root.without(0, maphash.String(mapSeed, key), key)
	if removed {
		m.n--
		m.root = root
	}
	return m
}

// without returns a copy of the subtree at depth shift/5 without key (nil
// when nothing is left of it), and whether key was there.
func (n *mapNode[V]) without(shift uint, hash uint64, key string) (*mapNode[V], bool) {
	switch {
	case n == nil:
		return nil, false
	case n.kids == nil:
		i := slices.IndexFunc(n.entries, func(e mapEntry[V]) bool { return e.key == key })
		if i < 0 {
			return n, false
		}
		if len(n.entries) == 1 {
			return nil, true
		}
		return &mapNode[V]{entries: slices.Delete(slices.Clone(n.entries), i, i+1)}, true
	}
	i := (hash >> shift) & 31
	kid, removed := n.kids[i].without(shift+5, hash, key)
	if !removed {
		return n, false
	}
	kids := *n.kids
	kids[i] = kid
	return &mapNode[V]{kids: &kids}, true
}
