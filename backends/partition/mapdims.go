package partition

import (
	"strings"
)

// Mappings across dimensions (SPEC §10), by the default rules: an input
// dimension pairs with the output dimension of its name and reads its value
// (IDENTITY on that dimension); a one-dimensional side's single axis pairs
// with the other side's time dimension when both are of the same time kind
// and zone; an input dimension left unpaired is read whole (ALL: a roll-up
// across regions); an output dimension left unpaired reads the same input
// chunk for every value (a fan-out). The engine reads such an input through
// AcrossDimensions, a kind no job names: Job.Mapping gives it to an input
// read without a mapping whose dimensions differ from the output's.
//
// What is built so far: the spans stay runs of tuples, so the dimensions
// read whole come after the paired ones in the input's order, and the
// fanned-out ones after the paired ones in the output's; the dimensions
// read whole are bounded, and hold at most MaxMapped tuples together.
// Explicit entries (dimension, outputDimension) are not built.

// AcrossDimensions is the internal kind of a mapping across dimensions.
const AcrossDimensions MappingKind = "DIMENSIONS"

// axis is one dimension of a definition, one-dimensional ones included
// (their single axis has no name).
type axis struct {
	name string
	def  Def
}

func axesOf(d Def) []axis {
	if d.Kind != Dimensional {
		return []axis{{"", d}}
	}
	out := make([]axis, len(d.Dimensions))
	for i := range d.Dimensions {
		out[i] = axis{d.Dimensions[i].Name, d.dimDef(i)}
	}
	return out
}

// dimsPlan is how the axes of an output and an input pair: pair[i] is the
// output axis input axis i reads the value of (-1: read whole).
type dimsPlan struct {
	out, in []axis
	pair    []int
}

// DimensionsDiffer reports whether a job writing out and reading in
// through no mapping reads across dimensions (AcrossDimensions): either
// side has dimensions, and they are not the same dimensions.
func DimensionsDiffer(out, in Def) bool {
	if out.Kind != Dimensional && in.Kind != Dimensional {
		return false
	}
	if out.Kind != in.Kind || len(out.Dimensions) != len(in.Dimensions) {
		return true
	}
	for i := range out.Dimensions {
		if out.Dimensions[i].Name != in.Dimensions[i].Name || out.Dimensions[i].Kind != in.Dimensions[i].Kind {
			return true
		}
	}
	return false
}

func planDimensions(out, in Def) (dimsPlan, error) {
	p := dimsPlan{out: axesOf(out), in: axesOf(in)}
	p.pair = make([]int, len(p.in))
	used := make([]bool, len(p.out))
	for i, a := range p.in {
		p.pair[i] = -1
		for j, b := range p.out {
			byName := a.name != "" && a.name == b.name
			byTime := (a.name == "" || b.name == "") && a.def.Kind.IsTime() && b.def.Kind.IsTime()
			if used[j] || !byName && !byTime {
				continue
			}
			if a.def.Kind != b.def.Kind || a.def.Kind.IsTime() && a.def.Normalized().Timezone != b.def.Normalized().Timezone {
				return p, invalid("%s is %s and %s is %s: a dimension read by value must be of the same kind (and zone); "+
					"mapping windows across dimensions is not supported yet", axisName(a, "input"), describeAxis(a), axisName(b, "output"), describeAxis(b))
			}
			p.pair[i], used[j] = j, true
			break
		}
	}
	// The paired dimensions in the same order on both sides: the outputs
	// then move forward as the input tuples do (a backfill, the window
	// locks and the enqueue of the outputs a chunk completes count on it).
	prev := -1
	for i, j := range p.pair {
		if j < 0 {
			continue
		}
		if j < prev {
			return p, invalid("%s comes after %s in the input but before it in the output: declare the dimensions both read by value in the same order (not supported yet otherwise)",
				axisName(p.in[i], "input"), p.out[prev].name)
		}
		prev = j
	}
	// Runs of tuples: the dimensions read whole after the paired ones.
	whole := int64(1)
	for i, j := range p.pair {
		if j >= 0 {
			if i > 0 && p.pair[i-1] < 0 {
				return p, invalid("%s is read whole (the output lacks it) and comes before %s, which is read by value: the tuples read would not be one run (not supported yet)",
					axisName(p.in[i-1], "input"), axisName(p.in[i], "input"))
			}
			continue
		}
		if !p.in[i].def.Bounded() {
			return p, invalid("%s is not in the output, so each output reads every value of it, and it has no end", axisName(p.in[i], "input"))
		}
		n, err := dimSize(p.in[i].def)
		if err != nil {
			return p, err
		}
		if whole *= n; whole > MaxMapped {
			return p, invalid("each output reads more than %d input tuples across the dimensions it lacks", MaxMapped)
		}
	}
	fanned := int64(1)
	for j := range p.out {
		if p.paired(j) {
			if j > 0 && !p.paired(j-1) {
				return p, invalid("%s is fanned out (the input lacks it) and comes before %s, which is read by value: not supported yet",
					axisName(p.out[j-1], "output"), axisName(p.out[j], "output"))
			}
			continue
		}
		if !p.out[j].def.Bounded() {
			return p, invalid("%s is not in the input, so each input chunk is read by every value of it, and it has no end", axisName(p.out[j], "output"))
		}
		n, err := dimSize(p.out[j].def)
		if err != nil {
			return p, err
		}
		if fanned *= n; fanned > MaxMapped {
			return p, invalid("each input chunk is read by more than %d output tuples across the dimensions the input lacks", MaxMapped)
		}
	}
	if !slicesContainsPaired(p.pair) {
		return p, invalid("no dimension of the input pairs with one of the output (by name, or a one-dimensional time axis with a time dimension of its kind): " +
			"every output would read the whole input (not supported yet)")
	}
	return p, nil
}

func slicesContainsPaired(pair []int) bool {
	for _, j := range pair {
		if j >= 0 {
			return true
		}
	}
	return false
}

func describeAxis(a axis) string {
	if a.def.Kind.IsTime() {
		return string(a.def.Kind) + " in " + a.def.Normalized().Timezone
	}
	return string(a.def.Kind)
}

func (p dimsPlan) paired(j int) bool {
	for _, k := range p.pair {
		if k == j {
			return true
		}
	}
	return false
}

func axisName(a axis, side string) string {
	if a.name == "" {
		return "the " + side + "'s " + string(a.def.Kind) + " axis"
	}
	return side + " dimension " + a.name
}

// values splits id into one value per axis.
func splitAxes(axes []axis, id string) ([]string, bool) {
	if len(axes) == 1 {
		return []string{id}, !strings.Contains(id, "|")
	}
	v := strings.Split(id, "|")
	return v, len(v) == len(axes)
}

func joinAxes(values []string) string { return strings.Join(values, "|") }

// dimsInputs is the run of input tuples output outID reads: the paired
// input values from outID, the whole ones from their first to their last.
func (p dimsPlan) inputs(in Def, outID string) (Span, error) {
	ov, ok := splitAxes(p.out, outID)
	if !ok {
		return Span{}, invalid("dataid %q is not one of the output's", outID)
	}
	from, to := make([]string, len(p.in)), make([]string, len(p.in))
	for i, j := range p.pair {
		if j >= 0 {
			from[i], to[i] = ov[j], ov[j]
			continue
		}
		lo, ok1 := first(p.in[i].def)
		hi, ok2 := last(p.in[i].def)
		if !ok1 || !ok2 {
			return Span{Empty: true}, nil
		}
		from[i], to[i] = lo, hi
	}
	return clampSpan(in, Span{From: joinAxes(from), To: joinAxes(to)})
}

// outputs is the run of output tuples whose mapped run holds input inID.
func (p dimsPlan) outputs(out, in Def, inID string) (Span, error) {
	if !in.Contains(inID) {
		return Span{Empty: true}, nil
	}
	iv, _ := splitAxes(p.in, inID)
	from, to := make([]string, len(p.out)), make([]string, len(p.out))
	for j := range p.out {
		set := false
		for i, k := range p.pair {
			if k == j {
				from[j], to[j], set = iv[i], iv[i], true
			}
		}
		if set {
			continue
		}
		lo, ok1 := first(p.out[j].def)
		hi, ok2 := last(p.out[j].def)
		if !ok1 || !ok2 {
			return Span{Empty: true}, nil
		}
		from[j], to[j] = lo, hi
	}
	return clampSpan(out, Span{From: joinAxes(from), To: joinAxes(to)})
}

// wholeIn and wholeOut are how many tuples one output reads, and one input
// is read by, at most.
func (p dimsPlan) wholeIn() int64 {
	n := int64(1)
	for i, j := range p.pair {
		if j < 0 {
			s, _ := dimSize(p.in[i].def)
			n *= max(s, 1)
		}
	}
	return n
}

func (p dimsPlan) wholeOut() int64 {
	n := int64(1)
	for j := range p.out {
		if !p.paired(j) {
			s, err := dimSize(p.out[j].def)
			if err != nil || !p.out[j].def.Bounded() {
				return MaxMapped + 1
			}
			n *= max(s, 1)
		}
	}
	return n
}

// ValidateAcrossDimensions checks that a job writing out may read in
// across dimensions by the default rules, and says what is not built.
func ValidateAcrossDimensions(out, in Def) error {
	if out.IsZero() || in.IsZero() {
		return invalid("a dataset with dimensions is read, or written, with a dataset without a partition definition: give both definitions")
	}
	_, err := planDimensions(out, in)
	return err
}
