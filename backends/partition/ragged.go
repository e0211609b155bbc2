package partition

import (
	"iter"
	"slices"
	"sort"
	"sync"
	"time"
	"weak"
)

// DYNAMIC dimensions (SPEC §10). A DYNAMIC dimension of a multi-dimensional
// definition keeps its values in the definition itself (Members), added and
// removed at run time (the store's addPartitions with a dimension), at most
// MaxDynamicDimensionValues of them: every claim, count and listing of the
// dataset reads them, as it reads a STATIC dimension's. Beside a time
// dimension each value is expected from the window holding its Since (when
// it was added, or the start of a backfill), not from the time dimension's
// start: a new customer's feed starts when the customer does, and adding
// one makes no history of missing chunks. The expected tuples are then a
// ragged product: at a period p of the time dimension, each DYNAMIC
// dimension expects the values whose since period is p or earlier.
//
// The arithmetic of such a definition (ragged below) splits the time line
// into segments at the values' since periods: within a segment every period
// expects the same number of tuples, so counts and ranks are sums over
// segments, kept per definition as prefix sums, and a period's tuples are
// those of a plain product (at: each DYNAMIC dimension a STATIC one of the
// values expected then).

// MaxDynamicDimensionValues bounds the values of a DYNAMIC dimension, as a
// STATIC one's: they are part of the definition.
const MaxDynamicDimensionValues = MaxStaticValues

// Member is one value of a DYNAMIC dimension.
type Member struct {
	Value string `json:"value"`
	// Since is the instant (Unix seconds) whose window of the time
	// dimension is the first the value is expected in; 0 (or an instant
	// before the time dimension's start) is from its start. Without a time
	// dimension it is not used.
	Since int64 `json:"since,omitempty"`
	// Added is when the value was added (Unix seconds).
	Added int64 `json:"added,omitempty"`
}

// MemberValues lists the values of members, in their order.
func MemberValues(members []Member) []string {
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = m.Value
	}
	return out
}

func validateMembers(members []Member, timed bool) error {
	if len(members) > MaxDynamicDimensionValues {
		return invalid("a DYNAMIC dimension holds at most %d values, got %d", MaxDynamicDimensionValues, len(members))
	}
	seen := make(map[string]bool, len(members))
	for _, m := range members {
		if err := validDataID(m.Value); err != nil {
			return invalid("value %v", err)
		}
		if seen[m.Value] {
			return invalid("value %q is listed twice", m.Value)
		}
		seen[m.Value] = true
		if m.Since != 0 && !timed {
			return invalid("value %q: since applies beside a time dimension only", m.Value)
		}
	}
	return nil
}

// memberIndex is one DYNAMIC dimension's members, indexed for one time
// dimension's calendar.
type memberIndex struct {
	values  []string         // shortlex order: the dimension as a STATIC one (dimDef)
	bySince []string         // by since period, then shortlex: a prefix is the values expected from a period on
	periods []int64          // the since period of each of bySince, ascending
	since   map[string]int64 // value -> since period
}

// expectedAt is how many values are expected at period p (a prefix of
// bySince).
func (ix *memberIndex) expectedAt(p int64) int {
	return sort.Search(len(ix.periods), func(i int) bool { return ix.periods[i] > p })
}

type memberKey struct {
	first weak.Pointer[Member]
	n     int
	kind  Kind
	zone  string
	start string
}

var memberIndexes sync.Map // memberKey -> *memberIndex

// smallMembers is the size up to which members are indexed at each use.
const smallMembers = 16

// indexMembers indexes members (at least one) for the time dimension t
// (nil: no time dimension, every value expected at once). As a STATIC
// definition's index (static.go), it is found by the identity of the
// members' backing array, which must not be changed in place once used.
//
// A few members (smallMembers) are indexed anew at each use, not kept: a
// definition sliced to a value or two is made for one request.
func indexMembers(members []Member, t *timeDef, tdef Def) *memberIndex {
	key := memberKey{first: weak.Make(&members[0]), n: len(members)}
	if t != nil {
		key.kind, key.zone, key.start = tdef.Kind, tdef.Timezone, tdef.Start
	}
	small := len(members) <= smallMembers
	if !small {
		if ix, ok := memberIndexes.Load(key); ok {
			return ix.(*memberIndex)
		}
	}
	ix := &memberIndex{values: MemberValues(members), since: make(map[string]int64, len(members))}
	slices.SortFunc(ix.values, CompareDataID)
	type ranked struct {
		v string
		p int64
	}
	rs := make([]ranked, len(members))
	for i, m := range members {
		p := int64(0)
		if t != nil {
			p = t.first
			if m.Since != 0 {
				p = max(p, t.cal.containing(m.Since))
			}
		}
		rs[i] = ranked{m.Value, p}
		ix.since[m.Value] = p
	}
	slices.SortFunc(rs, func(a, b ranked) int {
		if a.p != b.p {
			if a.p < b.p {
				return -1
			}
			return 1
		}
		return CompareDataID(a.v, b.v)
	})
	for _, r := range rs {
		ix.bySince = append(ix.bySince, r.v)
		ix.periods = append(ix.periods, r.p)
	}
	if small {
		return ix
	}
	if prev, loaded := memberIndexes.LoadOrStore(key, ix); loaded {
		return prev.(*memberIndex)
	}
	pruneMemberIndexes()
	return ix
}

var memberIndexesSize struct {
	sync.Mutex
	n int
}

// pruneMemberIndexes drops the indexes of member slices gone, now and
// then, as pruneStaticIndexes does.
func pruneMemberIndexes() {
	memberIndexesSize.Lock()
	defer memberIndexesSize.Unlock()
	if memberIndexesSize.n++; memberIndexesSize.n < maxStaticIndexes {
		return
	}
	memberIndexesSize.n = 0
	memberIndexes.Range(func(k, _ any) bool {
		if k.(memberKey).first.Value() == nil {
			memberIndexes.Delete(k)
		} else {
			memberIndexesSize.n++
		}
		return true
	})
	if memberIndexesSize.n > maxStaticIndexes/2 {
		memberIndexes.Clear() // indexed again at their next use
		memberIndexesSize.n = 0
	}
}

// HasMember reports whether value is one of the values of d's DYNAMIC
// dimension name.
func (d Def) HasMember(name, value string) bool {
	for i, dim := range d.Dimensions {
		if dim.Name == name && dim.Kind == Dynamic {
			_, ok := slices.BinarySearchFunc(d.dynamicValues(i), value, CompareDataID)
			return ok
		}
	}
	return false
}

// dynamicValues is the values of DYNAMIC dimension i, as a STATIC
// dimension's, in shortlex order (nil when it has none).
func (d Def) dynamicValues(i int) []string {
	members := d.Dimensions[i].Members
	if len(members) == 0 {
		return nil
	}
	return indexMembers(members, nil, Def{}).values
}

// ragged is the compiled arithmetic of a definition whose time dimension
// (the first) is beside DYNAMIC dimensions.
type ragged struct {
	d     Def
	t     timeDef
	dyn   []int          // the DYNAMIC dimensions
	idx   []*memberIndex // their members, aligned with dyn
	fixed int64          // the product of the other inner dimensions' sizes
	empty bool           // a dimension expects nothing: no tuple at all
	// Segments of the time line from bounds[0], the first period with a
	// tuple: each period of segment j (bounds[j] to bounds[j+1]-1, the
	// last one open) expects size[j] tuples, and cum[j] tuples come before
	// it.
	bounds, size, cum []int64
}

type raggedKey struct {
	members [MaxDimensions]weak.Pointer[Member]
	lens    [MaxDimensions]int
	t       string // the time dimension, as JSON would spell it
	fixed   int64
}

var raggeds sync.Map // raggedKey -> *ragged

// raggedOf is d's ragged arithmetic, nil when d has no time dimension
// beside a DYNAMIC one (its tuples are then a plain product).
func (d Def) raggedOf() *ragged {
	if d.Kind != Dimensional || !d.hasTime() {
		return nil
	}
	var dyn []int
	for i, dim := range d.Dimensions {
		if dim.Kind == Dynamic {
			dyn = append(dyn, i)
		}
	}
	if len(dyn) == 0 {
		return nil
	}
	tdef := d.dimDef(0)
	t, err := compileTime(tdef)
	if err != nil {
		return &ragged{d: d, empty: true}
	}
	fixed := int64(1)
	for i := 1; i < len(d.Dimensions); i++ {
		if d.Dimensions[i].Kind == Dynamic {
			continue
		}
		n, err := dimSize(d.dimDef(i))
		if err != nil {
			return &ragged{d: d, empty: true}
		}
		fixed *= n
	}
	key := raggedKey{t: string(tdef.Kind) + " " + tdef.Timezone + " " + tdef.Start + " " + tdef.End, fixed: fixed}
	for _, i := range dyn {
		m := d.Dimensions[i].Members
		if len(m) == 0 {
			return &ragged{d: d, t: t, dyn: dyn, empty: true}
		}
		key.members[i], key.lens[i] = weak.Make(&m[0]), len(m)
	}
	small := true // every DYNAMIC dimension small: compiled at each use, not kept
	for _, i := range dyn {
		small = small && len(d.Dimensions[i].Members) <= smallMembers
	}
	if !small {
		if r, ok := raggeds.Load(key); ok {
			out := *r.(*ragged)
			out.d = d
			return &out
		}
	}
	r := &ragged{d: d, t: t, dyn: dyn, fixed: fixed, empty: fixed == 0}
	for _, i := range dyn {
		r.idx = append(r.idx, indexMembers(d.Dimensions[i].Members, &t, tdef))
	}
	r.segments()
	if small {
		return r
	}
	// The cache keeps a copy without d: d holds the members the key's
	// weak pointer points to, and would keep them, and the entry, alive
	// for ever (each load puts its own d back).
	kept := *r
	kept.d = Def{}
	if _, loaded := raggeds.LoadOrStore(key, &kept); !loaded {
		pruneRaggeds()
	}
	return r
}

var raggedsSize struct {
	sync.Mutex
	n int
}

func pruneRaggeds() {
	raggedsSize.Lock()
	defer raggedsSize.Unlock()
	if raggedsSize.n++; raggedsSize.n < maxStaticIndexes {
		return
	}
	raggedsSize.n = 0
	raggeds.Range(func(k, _ any) bool {
		gone := false
		key := k.(raggedKey)
		for i := range key.members {
			if key.lens[i] > 0 && key.members[i].Value() == nil {
				gone = true
			}
		}
		if gone {
			raggeds.Delete(k)
		} else {
			raggedsSize.n++
		}
		return true
	})
	if raggedsSize.n > maxStaticIndexes/2 {
		raggeds.Clear()
		raggedsSize.n = 0
	}
}

// segments computes the segments of the time line.
func (r *ragged) segments() {
	if r.empty {
		return
	}
	start := r.t.first
	for _, ix := range r.idx {
		start = max(start, ix.periods[0]) // no tuple before every DYNAMIC dimension has a value
	}
	if start > r.t.last {
		r.empty = true
		return
	}
	cuts := []int64{start}
	for _, ix := range r.idx {
		for _, p := range ix.periods {
			if p > start && p <= r.t.last {
				cuts = append(cuts, p)
			}
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	r.bounds = cuts
	r.size = make([]int64, len(cuts))
	r.cum = make([]int64, len(cuts))
	for j, p := range cuts {
		n := r.fixed
		for _, ix := range r.idx {
			n *= int64(ix.expectedAt(p))
		}
		r.size[j] = n
		if j > 0 {
			r.cum[j] = r.cum[j-1] + r.size[j-1]*r.periods(cuts[j-1], p-1)
		}
	}
}

// periods counts the existing periods in [a, b].
func (r *ragged) periods(a, b int64) int64 {
	if a > b {
		return 0
	}
	n := b - a + 1
	if r.t.cal.kind == Weekly || r.t.cal.kind == Monthly || r.t.cal.zone.loc == time.UTC {
		return n
	}
	return n - r.t.cal.missing(a, b)
}

// segment is the segment holding period p (p at or after bounds[0]).
func (r *ragged) segment(p int64) int {
	return sort.Search(len(r.bounds), func(j int) bool { return r.bounds[j] > p }) - 1
}

// at is d at period p: each DYNAMIC dimension a STATIC one of the values
// expected then (a plain product, whose methods work as for any other).
func (r *ragged) at(p int64) Def {
	g := r.d
	g.Dimensions = slices.Clone(r.d.Dimensions)
	for k, i := range r.dyn {
		n := r.idx[k].expectedAt(p)
		g.Dimensions[i] = Dimension{Name: g.Dimensions[i].Name, Def: Def{Kind: Static, Values: r.idx[k].bySince[:n:n]}}
	}
	return g
}

// head parses a tuple's time value: its period, and whether the time
// dimension expects it.
func (r *ragged) head(v string) (int64, bool) {
	p, err := parsePeriod(r.t.cal.kind, v)
	if err != nil {
		return 0, false
	}
	return p, p >= r.t.first && p <= r.t.last && r.t.cal.exists(p)
}

func (r *ragged) contains(id string) bool {
	values, ok := r.d.SplitDataID(id)
	if r.empty || !ok || len(id) > MaxTupleLen {
		return false
	}
	p, ok := r.head(values[0])
	if !ok || p < r.bounds[0] {
		return false
	}
	return r.at(p).plainContains(values)
}

// firstAt and lastAt are the smallest and largest tuple of period p
// (which has tuples).
func (r *ragged) firstAt(p int64) (string, bool) { return r.endAt(p, first) }
func (r *ragged) lastAt(p int64) (string, bool)  { return r.endAt(p, last) }

func (r *ragged) endAt(p int64, end func(Def) (string, bool)) (string, bool) {
	head, ok := r.t.format(p)
	if !ok {
		return "", false
	}
	rest, ok := r.at(p).endsFrom(1, end)
	if !ok {
		return "", false
	}
	return joinTuple(append([]string{head}, rest...)), true
}

// step is tupleStep for a ragged product: within the tuple's period when
// it can, else the first (last) tuple of the next (previous) period that
// has tuples.
func (r *ragged) step(id string, up bool) (string, bool) {
	values, ok := r.d.SplitDataID(id)
	if r.empty || !ok {
		return "", false
	}
	p, err := parsePeriod(r.t.cal.kind, values[0])
	if err != nil {
		return "", false
	}
	if _, expected := r.head(values[0]); expected && p >= r.bounds[0] {
		if next, ok := r.at(p).innerStep(values, up); ok {
			return next, true
		}
	}
	if up {
		q := max(r.t.cal.next(p), r.bounds[0])
		if !r.t.cal.exists(q) {
			q = r.t.cal.next(q)
		}
		if q > r.t.last {
			return "", false
		}
		return r.firstAt(q)
	}
	q := min(r.t.cal.prev(p), r.t.last)
	if !r.t.cal.exists(q) {
		q = r.t.cal.prev(q)
	}
	if q < r.bounds[0] {
		return "", false
	}
	return r.lastAt(q)
}

// walk is tupleRange for a ragged product: the time dimension's values in
// the range, from the first period with tuples, each with the tuples of
// its period.
func (r *ragged) walk(lo, hi []string, down bool) iter.Seq[string] {
	return func(yield func(string) bool) {
		if r.empty {
			return
		}
		from := lo[0]
		if start, ok := r.t.format(r.bounds[0]); ok && !down && (from == "" || CompareDataID(start, from) > 0) {
			from = start // no tuple before the first period with one: start there
		}
		seq, err := r.d.dimRange(0, from, hi[0], down)
		if err != nil {
			return
		}
		for v := range seq {
			p, _ := parsePeriod(r.t.cal.kind, v)
			if p < r.bounds[0] {
				if down {
					return
				}
				continue
			}
			g := r.at(p)
			if !g.walkFrom(1, []string{v}, lo, hi, v == lo[0], v == hi[0], down, yield) {
				return
			}
		}
	}
}

// before counts the tuples at periods before p.
func (r *ragged) before(p int64) int64 {
	if r.empty || p <= r.bounds[0] {
		return 0
	}
	j := r.segment(p - 1)
	return r.cum[j] + r.size[j]*r.periods(r.bounds[j], p-1)
}

// rank is the place of the expected tuple id.
func (r *ragged) rank(id string) (int64, error) {
	values, ok := r.d.SplitDataID(id)
	if !ok {
		return 0, invalid("dataid %q does not have one value per dimension", id)
	}
	p, ok := r.head(values[0])
	if !ok {
		return 0, invalid("%q is not an expected value of the time dimension", values[0])
	}
	inner, err := r.at(p).innerRank(values)
	if err != nil {
		return 0, err
	}
	return r.before(p) + inner, nil
}

// unrank is the tuple at place k (ok false past the last one).
func (r *ragged) unrank(k int64) (string, bool) {
	if r.empty || k < 0 {
		return "", false
	}
	j := sort.Search(len(r.cum), func(j int) bool { return r.cum[j] > k }) - 1
	if r.size[j] == 0 {
		return "", false
	}
	off := k - r.cum[j]
	q, inner := off/r.size[j], off%r.size[j]
	p := r.forward(r.bounds[j], q)
	if p > r.t.last || (j+1 < len(r.bounds) && p >= r.bounds[j+1]) {
		return "", false
	}
	head, ok := r.t.format(p)
	if !ok {
		return "", false
	}
	rest, ok := r.at(p).innerUnrank(inner)
	if !ok {
		return "", false
	}
	return joinTuple(append([]string{head}, rest...)), true
}

// forward is the existing period q places after the existing period a.
func (r *ragged) forward(a, q int64) int64 {
	p := a + q
	for range 64 {
		n := r.periods(a, p)
		if n >= q+1 {
			break
		}
		p += q + 1 - n
	}
	for p > a && !r.t.cal.exists(p) {
		p--
	}
	return p
}

func (r *ragged) count(from, to string) (int64, error) {
	if r.empty {
		return 0, nil
	}
	lo, ok := r.d.atOrAfter(from)
	if !ok {
		return 0, nil
	}
	hi, ok := r.d.atOrBefore(to)
	if !ok || CompareDataID(lo, hi) > 0 {
		return 0, nil
	}
	a, err := r.rank(lo)
	if err != nil {
		return 0, err
	}
	b, err := r.rank(hi)
	if err != nil {
		return 0, err
	}
	return b - a + 1, nil
}

// back is tupleBack for a ragged product: the tuple k places before id,
// or the first one.
func (r *ragged) back(id string, k int) (string, bool) {
	at, ok := r.d.atOrBefore(id)
	if !ok || k < 0 {
		return "", false
	}
	n, err := r.rank(at)
	if err != nil {
		return "", false
	}
	return r.unrank(max(0, n-int64(k)))
}

func (r *ragged) dueBefore(now time.Time) (string, bool) {
	if r.empty {
		return "", false
	}
	head, ok := r.d.dimDef(0).DueBefore(now)
	if !ok {
		return "", false
	}
	p, _ := parsePeriod(r.t.cal.kind, head)
	if p < r.bounds[0] {
		return "", false
	}
	return r.lastAt(p)
}

func (r *ragged) last() (string, bool) {
	if r.empty {
		return "", false
	}
	p := r.t.last
	if !r.t.cal.exists(p) {
		p = r.t.cal.prev(p)
	}
	if p < r.bounds[0] {
		return "", false
	}
	return r.lastAt(p)
}

// MemberView is a member of a DYNAMIC dimension as people read it.
type MemberView struct {
	Member
	// ExpectedFrom is the first dataid of the time dimension the value is
	// expected at: "" without a time dimension, or when it lies past the
	// time dimension's end.
	ExpectedFrom string
}

// DimensionMembers lists the members of DYNAMIC dimension i of d in
// shortlex order of their values.
func (d Def) DimensionMembers(i int) []MemberView {
	members := d.Dimensions[i].Members
	out := make([]MemberView, len(members))
	for k, m := range members {
		out[k] = MemberView{Member: m, ExpectedFrom: d.ExpectedFrom(m)}
	}
	slices.SortFunc(out, func(a, b MemberView) int { return CompareDataID(a.Value, b.Value) })
	return out
}

// ExpectedFrom is the first dataid of d's time dimension a member of a
// DYNAMIC dimension of d is expected at (see MemberView).
func (d Def) ExpectedFrom(m Member) string {
	if d.Kind != Dimensional || !d.hasTime() {
		return ""
	}
	t, err := compileTime(d.dimDef(0))
	if err != nil {
		return ""
	}
	p := t.first
	if m.Since != 0 {
		p = max(p, t.cal.containing(m.Since))
	}
	if !t.cal.exists(p) {
		p = t.cal.next(p)
	}
	id, _ := t.format(p)
	return id
}

// ValuesAsMembers is d with the values listed for each DYNAMIC dimension
// (as the API's PartitionDimension.values reads them back) as its members,
// each counted as expected from the start: a client's view of a
// definition, whose counts of the tuples in a span are then at least the
// server's. The API never takes values for a DYNAMIC dimension.
func (d Def) ValuesAsMembers() Def {
	if d.Kind != Dimensional {
		return d
	}
	d.Dimensions = slices.Clone(d.Dimensions)
	for i, dim := range d.Dimensions {
		if dim.Kind == Dynamic && len(dim.Values) > 0 {
			members := make([]Member, len(dim.Values))
			for k, v := range dim.Values {
				members[k] = Member{Value: v}
			}
			dim.Members, dim.Values = members, nil
			d.Dimensions[i] = dim
		}
	}
	return d
}

// WithoutMembers is d without the values of its DYNAMIC dimensions: the
// definition as declared (the values are data, added at run time).
func (d Def) WithoutMembers() Def {
	if d.Kind != Dimensional {
		return d
	}
	d.Dimensions = slices.Clone(d.Dimensions)
	for i := range d.Dimensions {
		d.Dimensions[i].Members, d.Dimensions[i].Removed = nil, nil
	}
	return d
}
