package partition

import (
	"iter"
	"math"
	"regexp"
	"slices"
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
		case dim.Kind != Dynamic && (len(dim.Members) > 0 || len(dim.Removed) > 0):
			return where("members belong to a DYNAMIC dimension only")
		case dim.Lag != 0 || dim.Deadline != nil:
			return where("lag and deadline belong to the whole definition (lagSeconds, deadlineSeconds beside dimensions), not to a dimension")
		case dim.Kind.IsTime() && i > 0:
			return where("the time dimension must come first (lowest first is then oldest first)")
		case i > 0 && dim.Kind != Dynamic && !dim.Bounded():
			return where("%s: every dimension after the first needs an end (or STATIC values), so that each value of the first is reached", kindName(dim.Def))
		case i == 0 && dim.Kind == Integer && dim.End == "":
			return where("INTEGER without end: a first dimension of integers needs an end for now (the highest seen is not worked out across dimensions yet)")
		}
		seen[dim.Name] = true
		one := dim.Def
		one.Members, one.Removed = nil, nil // checked below
		if err := one.Validate(); err != nil {
			return where("%v", err)
		}
		if dim.Kind == Dynamic {
			if err := validateMembers(dim.Members, d.Dimensions[0].Kind.IsTime()); err != nil {
				return where("%v", err)
			}
		}
	}
	longest := len(d.Dimensions) - 1 // the separators
	for i := range d.Dimensions {
		longest += longestValue(d.dimDef(i))
	}
	if longest > MaxTupleLen {
		return invalid("the longest dataid these dimensions expect is %d characters: at most %d (shorten the longest values)", longest, MaxTupleLen)
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

// longestValue is the length of the longest dataid a one-dimensional d
// expects (time kinds: fixed; INTEGER: its end's, or a uint64's).
func longestValue(d Def) int {
	switch {
	case d.Kind == Static && len(d.Values) == 0:
		return 0
	case d.Kind == Static:
		n := 0
		for _, v := range d.Values {
			n = max(n, len(v))
		}
		return n
	case d.Kind == Integer && d.End != "":
		return len(d.End)
	case d.Kind == Integer:
		return len("18446744073709551615")
	case d.Kind.IsTime():
		return len(example[d.Kind])
	}
	return 128
}

// hasTime reports whether d's first dimension is of a time kind.
func (d Def) hasTime() bool { return d.Dimensions[0].Kind.IsTime() }

// dimDef is dimension i's definition; the time dimension carries the
// whole definition's lag and deadline.
// A DYNAMIC dimension is a STATIC one of its values (every value, whatever
// its since: ragged.go bounds them by the time dimension).
func (d Def) dimDef(i int) Def {
	def := d.Dimensions[i].Def
	if def.Kind == Dynamic {
		return Def{Kind: Static, Values: d.dynamicValues(i)}
	}
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
	if r := d.raggedOf(); r != nil {
		return r.contains(id)
	}
	values, ok := d.SplitDataID(id)
	if !ok || len(id) > MaxTupleLen {
		return false
	}
	return d.plainContains(values)
}

// plainContains tells whether a product without DYNAMIC dimensions beside
// its time one expects the tuple of values (one per dimension).
func (d Def) plainContains(values []string) bool {
	for i, v := range values {
		if !d.dimDef(i).Contains(v) {
			return false
		}
	}
	return true
}

// firstFrom is the smallest expected tuple of dimensions i.. (values for
// i..), or false when a dimension expects nothing.
func (d Def) firstFrom(i int) ([]string, bool) { return d.endsFrom(i, first) }

// lastFrom is firstFrom's largest.
func (d Def) lastFrom(i int) ([]string, bool) { return d.endsFrom(i, last) }

// endsFrom is end's value of each dimension from i on.
func (d Def) endsFrom(i int, end func(Def) (string, bool)) ([]string, bool) {
	var values []string
	for ; i < len(d.Dimensions); i++ {
		v, ok := end(d.dimDef(i))
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
	if r := d.raggedOf(); r != nil {
		return r.step(id, up)
	}
	values, ok := d.SplitDataID(id)
	if !ok {
		return "", false
	}
	return d.stepDims(values, up, 0)
}

// innerStep is the next (previous) tuple of a plain product after values
// with the same first value, if any.
func (d Def) innerStep(values []string, up bool) (string, bool) { return d.stepDims(values, up, 1) }

// stepDims steps the dimensions from lowest on (see tupleStep).
func (d Def) stepDims(values []string, up bool, lowest int) (string, bool) {
	k := 0
	for k < len(values) && d.dimDef(k).Contains(values[k]) {
		k++
	}
	for i := min(k, len(values)-1); i >= lowest; i-- {
		var v string
		var rest []string
		var ok bool
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
	if r := d.raggedOf(); r != nil {
		return r.walk(lo, hi, down), nil
	}
	return func(yield func(string) bool) {
		d.walkFrom(0, nil, lo, hi, true, true, down, yield)
	}, nil
}

// walkFrom yields the tuples of a plain product that begin with prefix
// (the values of the dimensions before i), in order, bounded by lo and hi
// while the prefix equals theirs (atLo, atHi); false when yield stopped.
func (d Def) walkFrom(i int, prefix, lo, hi []string, atLo, atHi, down bool, yield func(string) bool) bool {
	values := make([]string, len(d.Dimensions))
	copy(values, prefix)
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
	if i > 0 {
		atLo = atLo && lo[i-1] != ""
		atHi = atHi && hi[i-1] != ""
	}
	return walk(i, atLo, atHi)
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
			if to != "" && CompareDataID(v, to) > 0 {
				continue
			}
			if from != "" && CompareDataID(v, from) < 0 || !yield(v) {
				return
			}
		}
	}
}

// tupleDueBefore is the last tuple due at now: every tuple up to it is due
// (the time dimension is the first), none after it.
func (d Def) tupleDueBefore(now time.Time) (string, bool) {
	if r := d.raggedOf(); r != nil {
		return r.dueBefore(now)
	}
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
	if r := d.raggedOf(); r != nil {
		return r.last()
	}
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

// Counting and stepping back by rank. A tuple's rank is its place in the
// product: its first value's place among the first dimension's expected
// values (by Count, arithmetic for every kind) times the inner dimensions'
// product, plus the inner values' places in mixed radix. The inner
// dimensions are bounded (Validate), so their sizes are known.

// innerSizes are the sizes of dimensions 1.. and their product.
func (d Def) innerSizes() ([]int64, int64, error) {
	sizes := make([]int64, len(d.Dimensions))
	p := int64(1)
	for i := len(d.Dimensions) - 1; i >= 1; i-- {
		n, err := dimSize(d.dimDef(i))
		if err != nil {
			return nil, 0, err
		}
		sizes[i] = n
		if n > 0 && p > math.MaxInt64/n {
			return nil, 0, invalid("the dimensions expect more than %d tuples", int64(math.MaxInt64))
		}
		p *= n
	}
	return sizes, p, nil
}

func dimSize(d Def) (int64, error) {
	if d.Kind == Static {
		return int64(len(d.Values)), nil
	}
	return d.Count("", "")
}

// dimIndex is the place of the expected value v among dimension d's.
func dimIndex(d Def, v string) (int64, error) {
	if d.Kind == Static {
		i, found := slices.BinarySearchFunc(staticSorted(d.Values), v, CompareDataID)
		if !found {
			return 0, invalid("%q is not a value of the dimension", v)
		}
		return int64(i), nil
	}
	n, err := d.Count("", v)
	return n - 1, err
}

// dimValue is the value at place i of a bounded inner dimension d.
func dimValue(d Def, i int64) (string, bool) {
	if d.Kind == Static {
		sorted := staticSorted(d.Values)
		if i < 0 || i >= int64(len(sorted)) {
			return "", false
		}
		return sorted[i], true
	}
	last, ok := d.Last()
	if !ok {
		return "", false
	}
	n, err := d.Count("", "")
	if err != nil || i < 0 || i >= n {
		return "", false
	}
	return d.Back(last, int(n-1-i))
}

// rank is the place of the expected tuple id in d's product.
func (d Def) rank(id string) (int64, error) {
	values, ok := d.SplitDataID(id)
	if !ok {
		return 0, invalid("dataid %q does not have one value per dimension", id)
	}
	_, p, err := d.innerSizes()
	if err != nil {
		return 0, err
	}
	head, err := dimIndex(d.dimDef(0), values[0])
	if err != nil {
		return 0, err
	}
	if p > 0 && head > math.MaxInt64/p-1 {
		return 0, invalid("the dimensions expect more than %d tuples", int64(math.MaxInt64))
	}
	inner, err := d.innerRank(values)
	if err != nil {
		return 0, err
	}
	return head*p + inner, nil
}

// innerRank is the place of the inner values of a tuple (values[1:])
// among the inner dimensions' product, in mixed radix.
func (d Def) innerRank(values []string) (int64, error) {
	sizes, p, err := d.innerSizes()
	if err != nil {
		return 0, err
	}
	r, weight := int64(0), p
	for i := 1; i < len(values); i++ {
		weight /= sizes[i]
		k, err := dimIndex(d.dimDef(i), values[i])
		if err != nil {
			return 0, err
		}
		r += k * weight
	}
	return r, nil
}

// innerUnrank is the inner values at place k of the inner dimensions'
// product.
func (d Def) innerUnrank(k int64) ([]string, bool) {
	sizes, p, err := d.innerSizes()
	if err != nil || k < 0 || k >= p {
		return nil, false
	}
	var out []string
	weight := p
	for i := 1; i < len(d.Dimensions); i++ {
		weight /= sizes[i]
		v, ok := dimValue(d.dimDef(i), k/weight)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		k %= weight
	}
	return out, true
}

// atOrAfter is the smallest expected tuple at or after bound (a first
// value alone stands for the first tuple it begins); atOrBefore the
// largest at or before it (for a first value, the last tuple it begins).
func (d Def) atOrAfter(bound string) (string, bool) {
	if bound == "" {
		return d.First()
	}
	if !strings.Contains(bound, "|") {
		rest, ok := d.firstFrom(1)
		if !ok {
			return "", false
		}
		bound = joinTuple(append([]string{bound}, rest...))
	}
	if d.tupleContains(bound) {
		return bound, true
	}
	return d.tupleStep(bound, true)
}

func (d Def) atOrBefore(bound string) (string, bool) {
	if bound == "" {
		return d.tupleLast()
	}
	if !strings.Contains(bound, "|") {
		rest, ok := d.lastFrom(1)
		if !ok {
			return "", false
		}
		bound = joinTuple(append([]string{bound}, rest...))
	}
	if d.tupleContains(bound) {
		return bound, true
	}
	return d.tupleStep(bound, false)
}

// tupleCount counts the expected tuples in [from, to] by rank.
func (d Def) tupleCount(from, to string) (int64, error) {
	if _, err := d.tupleRange(from, to, false); err != nil {
		return 0, err // the bounds' form
	}
	if r := d.raggedOf(); r != nil {
		return r.count(from, to)
	}
	lo, ok := d.atOrAfter(from)
	if !ok {
		return 0, nil
	}
	hi, ok := d.atOrBefore(to)
	if !ok || CompareDataID(lo, hi) > 0 {
		return 0, nil
	}
	a, err := d.rank(lo)
	if err != nil {
		return 0, err
	}
	b, err := d.rank(hi)
	if err != nil {
		return 0, err
	}
	return b - a + 1, nil
}

// backExactly is the expected value of the one-dimensional d steps places
// before v (which has at least steps before it). Back steps periods, and
// lands on the next existing one when the clocks skip the period it
// reaches: each shortfall, counted, is stepped again.
func backExactly(d Def, v string, steps int64) (string, bool) {
	s := steps
	for range 64 {
		if s > math.MaxInt32 {
			return "", false
		}
		at, ok := d.Back(v, int(s))
		if !ok {
			return "", false
		}
		n, err := d.Count(at, v)
		if err != nil {
			return "", false
		}
		if got := n - 1; got >= steps {
			return at, true
		} else {
			s += steps - got
		}
	}
	return "", false
}

// tupleBack is the expected tuple k places before id (the first one when
// that is before the start): its rank less k, the first value stepped back
// with its own Back (which skips the hours the clocks skip, so the span
// holds at most k+1 tuples, as Back promises).
func (d Def) tupleBack(id string, k int) (string, bool) {
	if r := d.raggedOf(); r != nil {
		return r.back(id, k)
	}
	at, ok := d.atOrBefore(id)
	if !ok || k < 0 {
		return "", false
	}
	values, _ := d.SplitDataID(at)
	sizes, p, err := d.innerSizes()
	if err != nil || p == 0 {
		return "", false
	}
	inner := int64(0)
	weight := p
	for i := 1; i < len(values); i++ {
		weight /= sizes[i]
		n, err := dimIndex(d.dimDef(i), values[i])
		if err != nil {
			return "", false
		}
		inner += n * weight
	}
	// Steps of the first value, and the inner place after them.
	steps := int64(k) / p
	rest := inner - int64(k)%p
	if rest < 0 {
		steps++
		rest += p
	}
	head := values[0]
	if steps > 0 {
		var ok bool
		first := d.dimDef(0)
		if first.Kind == Static {
			n, err := dimIndex(first, head)
			if err != nil {
				return "", false
			}
			if n < steps {
				return d.First()
			}
			head, ok = dimValue(first, n-steps)
		} else {
			if n, err := dimIndex(first, head); err != nil || n < steps {
				return d.First()
			}
			head, ok = backExactly(first, head, steps)
		}
		if !ok {
			return "", false
		}
	}
	out := []string{head}
	weight = p
	for i := 1; i < len(values); i++ {
		weight /= sizes[i]
		v, ok := dimValue(d.dimDef(i), rest/weight)
		if !ok {
			return "", false
		}
		out = append(out, v)
		rest %= weight
	}
	return joinTuple(out), true
}

// Slice keeps the dataids of a multi-dimensional dataset whose value of
// Dimension is one of Values (SPEC §10 "Slices").
type Slice struct {
	Dimension string   `json:"dimension"`
	Values    []string `json:"values"`
}

// MaxSliceValues bounds the values of one slice, as a STATIC dimension's.
const MaxSliceValues = MaxStaticValues

// Sliced is d keeping only the tuples a slice selects: each sliced
// dimension becomes STATIC, with the listed values it expects. The time
// dimension is not sliced by values: from and to bound it. ok is false
// when the slice selects nothing (no listed value is expected).
func (d Def) Sliced(slices []Slice) (out Def, ok bool, err error) {
	if len(slices) == 0 {
		return d, true, nil
	}
	if d.Kind != Dimensional {
		return d, false, invalid("slice applies to a dataset with dimensions; this one has %s partitions", kindOf(d))
	}
	out = d
	out.Dimensions = append([]Dimension(nil), d.Dimensions...)
	seen := map[string]bool{}
	for _, s := range slices {
		i := slicesIndex(d.Dimensions, s.Dimension)
		switch {
		case i < 0:
			return d, false, invalid("slice: dataset has no dimension %q (its dimensions: %s)", s.Dimension, strings.Join(d.DimensionNames(), ", "))
		case seen[s.Dimension]:
			return d, false, invalid("slice: dimension %q is sliced twice: list its values in one slice", s.Dimension)
		case d.Dimensions[i].Kind.IsTime():
			return d, false, invalid("slice: %q is the time dimension: bound it with from and to", s.Dimension)
		case len(s.Values) == 0 || len(s.Values) > MaxSliceValues:
			return d, false, invalid("slice: dimension %q: give 1 to %d values, got %d", s.Dimension, MaxSliceValues, len(s.Values))
		}
		seen[s.Dimension] = true
		var keep []string
		kept := map[string]bool{}
		for _, v := range s.Values {
			if err := validDataID(v); err != nil {
				return d, false, invalid("slice: dimension %q: %v", s.Dimension, err)
			}
			if !kept[v] && d.dimDef(i).Contains(v) {
				keep = append(keep, v)
				kept[v] = true
			}
		}
		if len(keep) == 0 {
			return d, false, nil
		}
		if d.Dimensions[i].Kind == Dynamic {
			// Each value keeps when it is expected from.
			var members []Member
			for _, m := range d.Dimensions[i].Members {
				if kept[m.Value] {
					members = append(members, m)
				}
			}
			out.Dimensions[i] = Dimension{Name: s.Dimension, Def: Def{Kind: Dynamic, Members: members}}
			continue
		}
		out.Dimensions[i] = Dimension{Name: s.Dimension, Def: Def{Kind: Static, Values: keep}}
	}
	return out, true, nil
}

func slicesIndex(dims []Dimension, name string) int {
	for i, dim := range dims {
		if dim.Name == name {
			return i
		}
	}
	return -1
}
