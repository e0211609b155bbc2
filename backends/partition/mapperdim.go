package partition

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Mappings by dimension (SPEC §10 "Mappings across dimensions"): an input
// of a job may have several inputMappings entries, one per mapped
// dimension, each naming the input's dimension it maps (Dimension; empty
// for a one-dimensional input) and the output's dimension it maps from
// (OutputDimension; empty for a one-dimensional output), with section 9's
// kinds and offsets on that pair of axes. What no entry says follows the
// default rules (mapdims.go): a dimension of the same name read by value,
// a one-dimensional side's time axis paired with the other side's time
// dimension, an input dimension left unpaired read whole, an output one
// fanned out.
//
// Such a mapping reads, for an output tuple, the product of each input
// axis's values: those its entry maps the output value to (a window of
// dates, one date), or every value of an axis read whole, in tuple order,
// keeping the tuples the input expects. That set is not one run of tuples
// when an axis after the first is read by value (a 7-day lookback of one
// region lies among every region's): its spans (InputSpan, OutputSpan)
// bound it, and the engine lists it (Inputs, Outputs) where it must be
// exact. Each output reads at most MaxMapped tuples, and each input tuple
// is read by at most MaxByDimensionOutputs outputs, all of which a publish
// of it queues.

// ByDimension is the internal kind of an input mapped by dimension; no
// job names it: Job.Mapping gives it to an input whose entries name
// dimensions (ByDimensions).
const ByDimension MappingKind = "BY_DIMENSION"

// MaxByDimensionOutputs bounds how many outputs one input tuple of a
// mapping by dimension is read by: a publish of it queues each of them.
const MaxByDimensionOutputs = 1000

// ByDimensions is the mapping of an input read through entries, each of
// them an entry of the job's inputMappings for that input.
func ByDimensions(entries []Mapping) Mapping {
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = strings.Join([]string{string(e.kind()), strconv.Itoa(e.StartOffset), strconv.Itoa(e.EndOffset), e.Dimension, e.OutputDimension}, "\x1f")
	}
	return Mapping{Kind: ByDimension, entries: strings.Join(parts, "\x1e")}
}

// Named tells whether m names a dimension: an entry of a mapping by
// dimension.
func (m Mapping) Named() bool { return m.Dimension != "" || m.OutputDimension != "" }

var decodedEntries sync.Map // string -> []Mapping

// Entries lists the entries of a mapping by dimension.
func (m Mapping) Entries() []Mapping {
	if m.entries == "" {
		return nil
	}
	if v, ok := decodedEntries.Load(m.entries); ok {
		return v.([]Mapping)
	}
	var out []Mapping
	for _, p := range strings.Split(m.entries, "\x1e") {
		f := strings.Split(p, "\x1f")
		start, _ := strconv.Atoi(f[1])
		end, _ := strconv.Atoi(f[2])
		out = append(out, Mapping{Kind: MappingKind(f[0]), StartOffset: start, EndOffset: end, Dimension: f[3], OutputDimension: f[4]})
	}
	decodedEntries.Store(m.entries, out)
	return out
}

// axisMap is how one input axis is read: from output axis out (-1: read
// whole) through m (one-dimensional: the axes' own definitions).
type axisMap struct {
	out int
	m   Mapping
}

// perDimPlan is how the axes of an output and an input pair under a
// mapping by dimension.
type perDimPlan struct {
	out, in []axis
	pair    []axisMap // by input axis
}

func axisIndex(axes []axis, name, side string) (int, error) {
	if name == "" {
		if len(axes) == 1 {
			return 0, nil
		}
		return -1, invalid("the %s has dimensions: name the %s dimension an entry maps (%s)", side, side, axesNames(axes))
	}
	for i, a := range axes {
		if a.name == name {
			return i, nil
		}
	}
	if len(axes) == 1 && axes[0].name == "" {
		return -1, invalid("the %s is one-dimensional: an entry names no %s dimension (got %q)", side, side, name)
	}
	return -1, invalid("the %s has no dimension %q (its dimensions: %s)", side, name, axesNames(axes))
}

func axesNames(axes []axis) string {
	var names []string
	for _, a := range axes {
		names = append(names, a.name)
	}
	return strings.Join(names, ", ")
}

// planPerDim pairs the axes: the entries first, then the default rules for
// the axes no entry names.
func planPerDim(out, in Def, entries []Mapping) (perDimPlan, error) {
	p := perDimPlan{out: axesOf(out), in: axesOf(in)}
	p.pair = make([]axisMap, len(p.in))
	for i := range p.pair {
		p.pair[i].out = -2 // not decided yet
	}
	usedOut := make([]bool, len(p.out))
	for _, e := range entries {
		i, err := axisIndex(p.in, e.Dimension, "input")
		if err != nil {
			return p, err
		}
		if p.pair[i].out != -2 {
			return p, invalid("two entries map %s", axisName(p.in[i], "input"))
		}
		one := Mapping{Kind: e.kind(), StartOffset: e.StartOffset, EndOffset: e.EndOffset}
		if one.kind() == All {
			if e.OutputDimension != "" {
				return p, invalid("ALL reads every value of %s, whatever the output's: an ALL entry names no outputDimension", axisName(p.in[i], "input"))
			}
			if err := validateAll(p.in[i].def); err != nil {
				return p, invalid("%s: %v", axisName(p.in[i], "input"), err)
			}
			p.pair[i] = axisMap{out: -1}
			continue
		}
		j, err := axisIndex(p.out, e.OutputDimension, "output")
		if err != nil {
			return p, err
		}
		if usedOut[j] {
			return p, invalid("two entries map from %s", axisName(p.out[j], "output"))
		}
		switch one.kind() {
		case Latest:
			return p, invalid("LATEST by dimension is not built yet: map %s with IDENTITY, TIME_WINDOW or ALL", axisName(p.in[i], "input"))
		case Identity, TimeWindow:
		default:
			return p, invalid("unknown mapping kind %q: want IDENTITY, TIME_WINDOW or ALL for a dimension", e.Kind)
		}
		if err := validatePair(one, p.out[j], p.in[i]); err != nil {
			return p, invalid("%s from %s: %v", axisName(p.in[i], "input"), axisName(p.out[j], "output"), err)
		}
		p.pair[i], usedOut[j] = axisMap{out: j, m: one}, true
	}
	// The default rules for the axes no entry named.
	for i, a := range p.in {
		if p.pair[i].out != -2 {
			continue
		}
		p.pair[i] = axisMap{out: -1}
		for j, b := range p.out {
			byName := a.name != "" && a.name == b.name
			byTime := (a.name == "" || b.name == "") && a.def.Kind.IsTime() && b.def.Kind.IsTime()
			if usedOut[j] || !byName && !byTime {
				continue
			}
			one := Mapping{Kind: Identity}
			if a.def.Kind != b.def.Kind || a.def.Kind.IsTime() && a.def.Normalized().Timezone != b.def.Normalized().Timezone {
				if !a.def.Kind.IsTime() || !b.def.Kind.IsTime() {
					return p, invalid("%s is %s and %s is %s: name an entry for it (dimension, outputDimension)", axisName(a, "input"), describeAxis(a), axisName(b, "output"), describeAxis(b))
				}
				one = Mapping{Kind: TimeWindow}
			}
			if err := validatePair(one, b, a); err != nil {
				return p, invalid("%s from %s: %v", axisName(a, "input"), axisName(b, "output"), err)
			}
			p.pair[i], usedOut[j] = axisMap{out: j, m: one}, true
			break
		}
		if p.pair[i].out < 0 && !a.def.Bounded() {
			return p, invalid("%s is not read by value, so each output reads every value of it, and it has no end: name an entry for it", axisName(a, "input"))
		}
	}
	for j, b := range p.out {
		if !usedOut[j] && !b.def.Bounded() && !b.def.Kind.IsTime() {
			return p, invalid("%s is not in the input, so each input chunk is read by every value of it, and it has no end", axisName(b, "output"))
		}
	}
	if n := p.maxInputs(); n > MaxMapped {
		return p, invalid("each output reads up to %d input tuples through these entries, more than the %d one claim may read: narrow the windows or read fewer values whole", n, MaxMapped)
	}
	if n := p.maxOutputs(); n > MaxByDimensionOutputs {
		return p, invalid("each input tuple is read by up to %d outputs through these entries, more than the %d one publish may queue: narrow the windows", n, MaxByDimensionOutputs)
	}
	return p, nil
}

// ReadsByValue tells whether a mapping by dimension reads dimension name
// of in by value from out's dimension of the same name (IDENTITY on that
// pair, by an entry or the default rules): each output tuple reads the
// input tuples of its own value.
func (m Mapping) ReadsByValue(out, in Def, name string) bool {
	if m.kind() != ByDimension {
		return false
	}
	p, err := planPerDim(out, in, m.Entries())
	if err != nil {
		return false
	}
	for i, a := range p.pair {
		if p.in[i].name == name && a.out >= 0 && p.out[a.out].name == name && a.m.kind() == Identity {
			return true
		}
	}
	return false
}

// validatePair checks the mapping one of input axis in from output axis
// out. IDENTITY between axes of one kind other than time needs no check
// beyond the definitions' own: the axis of a DYNAMIC dimension (the STATIC
// set of its values) may hold no value yet.
func validatePair(one Mapping, out, in axis) error {
	if one.kind() != TimeWindow && (one.StartOffset != 0 || one.EndOffset != 0) {
		return invalid("startOffset and endOffset apply to TIME_WINDOW mappings only, not %s", one.kind())
	}
	if one.kind() == Identity && out.def.Kind == in.def.Kind && !out.def.Kind.IsTime() {
		return nil
	}
	return one.Validate(out.def, in.def)
}

func (p perDimPlan) maxInputs() int64 {
	n := int64(1)
	for i, a := range p.pair {
		if a.out < 0 {
			s, _ := dimSize(p.in[i].def)
			n *= max(s, 1)
		} else {
			n *= max(a.m.MaxInputs(p.out[a.out].def, p.in[i].def), 1)
		}
		if n > MaxMapped {
			return n
		}
	}
	return n
}

func (p perDimPlan) maxOutputs() int64 {
	n := int64(1)
	for j := range p.out {
		k := slices.IndexFunc(p.pair, func(a axisMap) bool { return a.out == j })
		if k < 0 {
			s, err := dimSize(p.out[j].def)
			if err != nil || !p.out[j].def.Bounded() {
				return MaxMapped + 1
			}
			n *= max(s, 1)
		} else {
			n *= max(p.pair[k].m.MaxOutputs(p.out[j].def, p.in[k].def), 1)
		}
		if n > MaxMapped {
			return n
		}
	}
	return n
}

// tupleProduct yields the tuples of the axes' value lists in tuple order,
// those keep keeps, at most limit+1 of them (the caller refuses more).
func tupleProduct(lists [][]string, keep func(string) bool, limit int) []string {
	var out []string
	values := make([]string, len(lists))
	var walk func(i int) bool
	walk = func(i int) bool {
		if i == len(lists) {
			id := joinAxes(values)
			if keep(id) {
				out = append(out, id)
			}
			return len(out) <= limit
		}
		for _, v := range lists[i] {
			values[i] = v
			if !walk(i + 1) {
				return false
			}
		}
		return true
	}
	walk(0)
	return out
}

// allValues lists every expected value of a bounded axis, in order.
func allValues(d Def, what string) ([]string, error) {
	return materialise(d, Span{}, what)
}

// inputs lists the input tuples output outID reads.
func (p perDimPlan) inputs(in Def, outID string) ([]string, error) {
	ov, ok := splitAxes(p.out, outID)
	if !ok {
		return nil, invalid("dataid %q is not one of the output's", outID)
	}
	lists := make([][]string, len(p.in))
	for i, a := range p.pair {
		var err error
		if a.out < 0 {
			lists[i], err = allValues(p.in[i].def, "input")
		} else {
			lists[i], err = a.m.Inputs(p.out[a.out].def, p.in[i].def, ov[a.out])
		}
		if err != nil {
			return nil, err
		}
		if len(lists[i]) == 0 {
			return []string{}, nil
		}
	}
	ids := tupleProduct(lists, in.Contains, MaxMapped)
	if len(ids) > MaxMapped {
		return nil, invalid("the mapping reads more than %d input dataids: narrow the windows", MaxMapped)
	}
	return ids, nil
}

// outputs lists the output tuples whose mapped set holds input inID.
func (p perDimPlan) outputs(out, in Def, inID string) ([]string, error) {
	if !in.Contains(inID) {
		return []string{}, nil
	}
	iv, _ := splitAxes(p.in, inID)
	lists := make([][]string, len(p.out))
	for j := range p.out {
		k := slices.IndexFunc(p.pair, func(a axisMap) bool { return a.out == j })
		var err error
		if k < 0 {
			lists[j], err = allValues(p.out[j].def, "output")
		} else {
			lists[j], err = p.pair[k].m.Outputs(p.out[j].def, p.in[k].def, iv[k])
		}
		if err != nil {
			return nil, err
		}
		if len(lists[j]) == 0 {
			return []string{}, nil
		}
	}
	ids := tupleProduct(lists, out.Contains, MaxMapped)
	if len(ids) > MaxMapped {
		return nil, invalid("the mapping has an input dataid read by more than %d outputs", MaxMapped)
	}
	return ids, nil
}

// bounding is the run from the first to the last of ids.
func bounding(ids []string) Span {
	if len(ids) == 0 {
		return Span{Empty: true}
	}
	return Span{From: ids[0], To: ids[len(ids)-1]}
}
