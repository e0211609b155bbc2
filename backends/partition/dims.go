package partition

import (
	"iter"
	"regexp"
	"strings"
	"time"
)

// Multi-dimensional definitions (SPEC §10). A Def of kind Dimensional
// expects the cross product of its dimensions' dataids, each dimension a
// one-dimensional Def of its own; a dataid is the dimensions' values joined
// by '|' in declared order, and dataids order as tuples (value by value,
// each shortlex), so that the methods below walk the product dimension by
// dimension. Lag and Deadline are the whole definition's and apply to its
// time dimension, which gives a chunk its window; without one a chunk is
// due at once and never late.
//
// What is built so far, and checked by Validate: the time dimension, when
// there is one, comes first (so that "lowest first" is "oldest first" and
// the due dataids are those up to a tuple), and every dimension after the
// first is bounded (STATIC, or with an end), so that walking the product in
// order reaches each value of the first dimension. DYNAMIC dimensions are
// refused until the store keeps a value set per dimension.

// Dimensional is the kind of a multi-dimensional definition. The API and
// pipeline files spell such a definition with `dimensions` and no kind;
// stores keep it with this kind.
const Dimensional Kind = "DIMENSIONS"

// MinDimensions and MaxDimensions bound how many dimensions a definition
// declares.
const (
	MinDimensions = 2
	MaxDimensions = 4
)

// MaxTupleLen is the longest multi-dimensional dataid.
const MaxTupleLen = 255

// Dimension is one named dimension of a multi-dimensional definition: a
// one-dimensional definition without lag or deadline.
type Dimension struct {
	Name string `json:"name"`
	Def
}

// dimensionName is the form of a dimension's name: it names a location's
// placeholder ({region}) and, upper-cased, a runner's variable
// (CHUNKLOCK_OUTPUT_REGION).
var dimensionName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// reservedNames are placeholders a location has already, and the names a
// runner's variables of a dataset end in (CHUNKLOCK_OUTPUT_URL).
var reservedNames = map[string]bool{"dataid": true, "dataset": true, "job": true, "url": true, "connection": true,
	"location": true, "locations": true, "dataids": true, "secret": true}

func (d Def) validateDimensions() error {
	switch {
	case d.Start != "" || d.End != "" || d.Timezone != "" || len(d.Values) > 0:
		return invalid("a definition with dimensions takes start, end, timezone and values in each dimension, not beside them")
	case len(d.Dimensions) < MinDimensions || len(d.Dimensions) > MaxDimensions:
		return invalid("a definition has %d to %d dimensions, got %d (one axis is a plain kind)", MinDimensions, MaxDimensions, len(d.Dimensions))
	case d.Lag < 0:
		return invalid("lag must not be negative, got %s", d.Lag)
	case d.Deadline != nil && *d.Deadline < 0:
		return invalid("deadline must not be negative, got %s", *d.Deadline)
	case d.Deadline != nil && *d.Deadline < d.Lag:
		return invalid("deadline (%s) is shorter than lag (%s): every window would be late before it is due", *d.Deadline, d.Lag)
	}
	seen := map[string]bool{}
	for i, dim := range d.Dimensions {
		where := func(format string, args ...any) error {
			return invalid("dimension %d (%s): "+format, append([]any{i + 1, dim.Name}, args...)...)
		}
		switch {
		case !dimensionName.MatchString(dim.Name):
			return invalid("dimension %d: name %q must be 1-32 characters of a-z 0-9 _, starting with a letter", i+1, dim.Name)
		case reservedNames[dim.Name]:
			return where("%q names a placeholder every location has, or a runner variable of every dataset; choose another name", dim.Name)
		case seen[dim.Name]:
			return where("the name is used twice")
		case dim.Kind == Dimensional || len(dim.Dimensions) > 0:
			return where("a dimension is one axis: give it a kind, not dimensions")
		case dim.Kind == Dynamic:
			return where("DYNAMIC dimensions are not supported yet: use STATIC values (apply adds new ones), or a one-dimensional DYNAMIC dataset")
		case dim.Lag != 0 || dim.Deadline != nil:
			return where("lag and deadline belong to the whole definition (lagSeconds, deadlineSeconds beside dimensions), not to a dimension")
		case dim.Kind.IsTime() && i > 0:
			return where("the time dimension must come first (lowest first is then oldest first)")
		case i > 0 && !dim.Bounded():
			return where("%s: every dimension after the first needs an end (or STATIC values), so that each value of the first is reached", kindName(dim.Def))
		}
		seen[dim.Name] = true
		if err := dim.Def.Validate(); err != nil {
			return where("%v", err)
		}
	}
	if (d.Lag != 0 || d.Deadline != nil) && !d.Dimensions[0].Kind.IsTime() {
		return invalid("lag and deadline apply to a time dimension: these dimensions have none, so their chunks are due at once")
	}
	return nil
}

// Windowed reports whether d's dataids have windows: a time kind, or
// dimensions with a time dimension. Their chunks are due when the window
// ends (+ lag), so every expected dataid up to DueBefore is due.
func (d Def) Windowed() bool {
	return d.Kind.IsTime() || d.Kind == Dimensional && len(d.Dimensions) > 0 && d.hasTime()
}

// hasTime reports whether d's first dimension is of a time kind.
func (d Def) hasTime() bool { return d.Dimensions[0].Kind.IsTime() }

// dimDef is dimension i's definition; the time dimension carries the
// whole definition's lag and deadline.
func (d Def) dimDef(i int) Def {
	def := d.Dimensions[i].Def
	if i == 0 && def.Kind.IsTime() {
		def.Lag, def.Deadline = d.Lag, d.Deadline
	}
	return def
}

// DimensionNames lists the names of d's dimensions (nil for one axis).
func (d Def) DimensionNames() []string {
	var names []string
	for _, dim := range d.Dimensions {
		names = append(names, dim.Name)
	}
	return names
}

// SplitDataID splits a dataid of d into its dimensions' values (the dataid
// itself for a one-dimensional d). ok is false when it does not have one
// value per dimension.
func (d Def) SplitDataID(id string) (values []string, ok bool) {
	if d.Kind != Dimensional {
		return []string{id}, strings.IndexByte(id, '|') < 0
	}
	values = strings.Split(id, "|")
	return values, len(values) == len(d.Dimensions)
}

func joinTuple(values []string) string { return strings.Join(values, "|") }

func (d Def) tupleContains(id string) bool {
	values, ok := d.SplitDataID(id)
	if !ok || len(id) > MaxTupleLen {
		return false
	}
	for i, v := range values {
		if !d.dimDef(i).Contains(v) {
			return false
		}
	}
	return true
}

// firstFrom is the smallest expected tuple of dimensions i.. (values for
// i..), or false when a dimension expects nothing.
func (d Def) firstFrom(i int) ([]string, bool) {
	var values []string
	for ; i < len(d.Dimensions); i++ {
		v, ok := first(d.dimDef(i))
		if !ok {
			return nil, false
		}
		values = append(values, v)
	}
	return values, true
}

// lastFrom is firstFrom's largest.
func (d Def) lastFrom(i int) ([]string, bool) {
	var values []string
	for ; i < len(d.Dimensions); i++ {
		v, ok := last(d.dimDef(i))
		if !ok {
			return nil, false
		}
		values = append(values, v)
	}
	return values, true
}

// First is the smallest expected dataid of d; ok is false when it expects
// none, or keeps its set in the store (DYNAMIC).
func (d Def) First() (string, bool) { return first(d) }

func first(d Def) (string, bool) {
	seq, err := d.Range("", "")
	if err != nil {
		return "", false
	}
	for v := range seq {
		return v, true
	}
	return "", false
}

func last(d Def) (string, bool) {
	if d.Kind == Static {
		if len(d.Values) == 0 {
			return "", false
		}
		return staticLast(d.Values), true
	}
	return d.Last()
}

// tupleStep is the smallest expected tuple after id (up), or the largest
// before it (!up). Values up to the first one its dimension does not
// expect are kept; the last of them that can step does, and the
// dimensions after it start over.
func (d Def) tupleStep(id string, up bool) (string, bool) {
	values, ok := d.SplitDataID(id)
	if !ok {
		return "", false
	}
	k := 0
	for k < len(values) && d.dimDef(k).Contains(values[k]) {
		k++
	}
	for i := min(k, len(values)-1); i >= 0; i-- {
		var v string
		var rest []string
		if up {
			v, ok = d.dimDef(i).Next(values[i])
			if ok {
				rest, ok = d.firstFrom(i + 1)
			}
		} else {
			v, ok = d.dimDef(i).Prev(values[i])
			if ok {
				rest, ok = d.lastFrom(i + 1)
			}
		}
		if ok {
			return joinTuple(append(append(append([]string(nil), values[:i]...), v), rest...)), true
		}
	}
	return "", false
}

// bounds splits a range's from or to into the values that bound each
// dimension: a tuple bounds every dimension, a single value the first
// only (a range of first values covers every tuple they begin).
func (d Def) bounds(id string) ([]string, error) {
	values := make([]string, len(d.Dimensions))
	if id == "" {
		return values, nil
	}
	got := strings.Split(id, "|")
	if len(got) != 1 && len(got) != len(d.Dimensions) {
		return nil, invalid("%q has %d values: give a value of the first dimension (%s) or one value per dimension (%s)",
			id, len(got), d.Dimensions[0].Name, strings.Join(d.DimensionNames(), "|"))
	}
	copy(values, got)
	return values, nil
}

// tupleRange yields the expected tuples in [from, to] in order (down: from
// to down to from), dimension inside dimension: the inner dimensions are
// bounded by from's and to's values only while the outer values equal
// theirs.
func (d Def) tupleRange(from, to string, down bool) (iter.Seq[string], error) {
	lo, err := d.bounds(from)
	if err != nil {
		return nil, err
	}
	hi, err := d.bounds(to)
	if err != nil {
		return nil, err
	}
	// Each dimension's own walk is checked once, unbounded, so that a bad
	// bound is an error here and not a silently empty range.
	for i := range d.Dimensions {
		if _, err := d.dimRange(i, lo[i], hi[i], down); err != nil {
			return nil, err
		}
	}
	return func(yield func(string) bool) {
		values := make([]string, len(d.Dimensions))
		var walk func(i int, atLo, atHi bool) bool
		walk = func(i int, atLo, atHi bool) bool {
			if i == len(d.Dimensions) {
				return yield(joinTuple(values))
			}
			var l, h string
			if atLo {
				l = lo[i]
			}
			if atHi {
				h = hi[i]
			}
			seq, err := d.dimRange(i, l, h, down)
			if err != nil {
				return true
			}
			for v := range seq {
				values[i] = v
				if !walk(i+1, atLo && l != "" && v == l, atHi && h != "" && v == h) {
					return false
				}
			}
			return true
		}
		walk(0, true, true)
	}, nil
}

func (d Def) dimRange(i int, from, to string, down bool) (iter.Seq[string], error) {
	def := d.dimDef(i)
	if !down {
		return def.Range(from, to)
	}
	if def.Kind == Static {
		return staticSeqDown(def.Values, from, to), nil
	}
	return def.RangeDown(from, to)
}

// staticSeqDown is staticSeq from to down to from.
func staticSeqDown(values []string, from, to string) iter.Seq[string] {
	sorted := staticSorted(values)
	return func(yield func(string) bool) {
		for i := len(sorted) - 1; i >= 0; i-- {
			v := sorted[i]
			if to != "" && compareDataID(v, to) > 0 {
				continue
			}
			if from != "" && compareDataID(v, from) < 0 || !yield(v) {
				return
			}
		}
	}
}

// tupleDueBefore is the last tuple due at now: every tuple up to it is due
// (the time dimension is the first), none after it.
func (d Def) tupleDueBefore(now time.Time) (string, bool) {
	var head string
	var ok bool
	if d.hasTime() {
		head, ok = d.dimDef(0).DueBefore(now)
	} else {
		head, ok = last(d.dimDef(0))
		ok = ok && d.dimDef(0).Bounded()
	}
	if !ok {
		return "", false
	}
	rest, ok := d.lastFrom(1)
	if !ok {
		return "", false
	}
	return joinTuple(append([]string{head}, rest...)), true
}

// tupleLast is the largest expected tuple.
func (d Def) tupleLast() (string, bool) {
	values, ok := d.lastFrom(0)
	if !ok {
		return "", false
	}
	return joinTuple(values), true
}

// timeValue is the time dimension's value of a tuple of d.
func (d Def) timeValue(id string) (Def, string, error) {
	if !d.hasTime() {
		return Def{}, "", invalid("dataids of dimensions %s have no window: none is of a time kind", strings.Join(d.DimensionNames(), ", "))
	}
	values, ok := d.SplitDataID(id)
	if !ok {
		return Def{}, "", invalid("dataid %q does not have one value per dimension (%s)", id, strings.Join(d.DimensionNames(), "|"))
	}
	return d.dimDef(0), values[0], nil
}
