package partition

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MappingKind is how an output dataid maps to the input dataids it reads.
type MappingKind string

// The mapping kinds, named as in the GraphQL API. The empty kind is IDENTITY.
const (
	Identity   MappingKind = "IDENTITY"
	TimeWindow MappingKind = "TIME_WINDOW"
	Latest     MappingKind = "LATEST"
	All        MappingKind = "ALL"
)

// MaxOffset bounds StartOffset and EndOffset, in input windows.
const MaxOffset = 10000

// MaxMapped bounds the dataids Inputs and Outputs list: a claim takes a read
// lock on each mapped input chunk.
const MaxMapped = 10000

// ErrClaimTime is what Inputs and Outputs answer for LATEST: the mapped
// input is the newest READY one among the candidates, which only the stored
// rows tell. InputSpan and OutputSpan give the candidates.
var ErrClaimTime = errors.New("LATEST is resolved at claim time from the stored rows: use InputSpan or OutputSpan")

// Mapping maps the dataids of a job's output to those of one of its inputs.
type Mapping struct {
	Kind MappingKind `json:"kind" yaml:"kind"`
	// StartOffset and EndOffset widen a TIME_WINDOW mapping by whole input
	// windows: the first overlapping input window moves by StartOffset, the
	// last by EndOffset (a 7-day daily lookback is StartOffset -6).
	StartOffset int `json:"startOffset" yaml:"startOffset"`
	EndOffset   int `json:"endOffset" yaml:"endOffset"`
	// Dimension and OutputDimension name, in an entry of a mapping by
	// dimension (mapperdim.go), the input's dimension the entry maps and
	// the output's dimension it maps from.
	Dimension       string `json:"dimension,omitempty" yaml:"dimension"`
	OutputDimension string `json:"outputDimension,omitempty" yaml:"outputDimension"`
	// entries are a mapping by dimension's (ByDimensions), encoded so that
	// a Mapping stays comparable.
	entries string
}

// Span is a contiguous run of dataids of one dataset, in shortlex order:
// From and To are inclusive, and an empty From or To stands for the start or
// end of the dataset's definition, as in Def.Range. Empty means no dataid.
type Span struct {
	From, To string
	Empty    bool
}

func single(id string) Span { return Span{From: id, To: id} }

func (m Mapping) kind() MappingKind {
	if m.Kind == "" {
		return Identity
	}
	return m.Kind
}

// Validate checks that m can map out's dataids to in's. A zero Def stands
// for a dataset without a partition definition; others must be valid.
func (m Mapping) Validate(out, in Def) error {
	for _, d := range []struct {
		name string
		def  Def
	}{{"output", out}, {"input", in}} {
		if !d.def.IsZero() {
			if err := d.def.Validate(); err != nil {
				return invalid("%s partition definition: %v", d.name, err)
			}
		}
	}
	k := m.kind()
	if k == AcrossDimensions {
		return ValidateAcrossDimensions(out, in)
	}
	if k == ByDimension {
		if out.IsZero() || in.IsZero() {
			return invalid("a mapping by dimension maps the dimensions of two partition definitions: give both datasets one")
		}
		_, err := planPerDim(out, in, m.Entries())
		return err
	}
	if k == Latest && out.Kind == Dimensional && in.Kind != Dimensional && m.Dimension == "" {
		return validateLatestIntoDimensions(m, out, in)
	}
	if m.Named() {
		return invalid("an entry naming a dimension belongs to a mapping by dimension (Job.Mapping assembles them)")
	}
	if out.Kind == Dimensional || in.Kind == Dimensional {
		return validateAcrossDimensions(k, out, in)
	}
	if k != TimeWindow && (m.StartOffset != 0 || m.EndOffset != 0) {
		return invalid("startOffset and endOffset apply to TIME_WINDOW mappings only, not %s", k)
	}
	switch k {
	case Identity:
		if !out.IsZero() && !in.IsZero() && out.Kind != in.Kind {
			return invalid("IDENTITY reads the input dataid equal to the output dataid, but the output is %s "+
				"and the input %s: use TIME_WINDOW, LATEST or ALL", out.Kind, in.Kind)
		}
	case TimeWindow:
		if err := m.validateTimeWindow(out, in); err != nil {
			return err
		}
		return m.checkWidth(out, in)
	case Latest:
		return validateLatest(out, in)
	case All:
		return validateAll(in)
	default:
		return invalid("unknown mapping kind %q: want IDENTITY, TIME_WINDOW, LATEST or ALL", m.Kind)
	}
	return nil
}

func (m Mapping) validateTimeWindow(out, in Def) error {
	switch {
	case !out.Kind.IsTime() || !in.Kind.IsTime():
		return invalid("TIME_WINDOW needs time partitions (HOURLY, DAILY, WEEKLY, MONTHLY) on both datasets, "+
			"got output %s and input %s", kindOf(out), kindOf(in))
	case m.StartOffset > m.EndOffset:
		return invalid("startOffset %d is after endOffset %d", m.StartOffset, m.EndOffset)
	case abs(m.StartOffset) > MaxOffset || abs(m.EndOffset) > MaxOffset:
		return invalid("startOffset and endOffset must lie within ±%d windows", MaxOffset)
	}
	return nil
}

// validateLatest refuses a LATEST mapping whose candidates are every
// dataid of an input that cannot list them: when the datasets' dataids
// have no order between them (different kinds, not both of time, or an
// output without a definition), each output reads the newest READY dataid
// of the whole input, which needs a bounded input definition.
func validateLatest(out, in Def) error {
	if out.Kind == Dynamic || in.Kind == Dynamic {
		return invalid("LATEST does not read from or into DYNAMIC partitions yet: map them with IDENTITY")
	}
	ordered := (out.Kind.IsTime() && in.Kind.IsTime()) || out.Kind == in.Kind
	if ordered || (!in.IsZero() && in.Bounded()) {
		return nil
	}
	return invalid("LATEST from an output with %s to an input with %s reads the newest READY dataid of the whole input, "+
		"so the input needs a bounded partition definition (STATIC, or an end), or the output the input's kind", kindName(out), kindName(in))
}

// validateLatestIntoDimensions checks a LATEST entry from a
// one-dimensional input into an output with dimensions (SPEC §10, one side
// one-dimensional): it pairs with the output's time dimension, named or
// not, and every value of the output's other dimensions reads the same
// snapshot.
func validateLatestIntoDimensions(m Mapping, out, in Def) error {
	if m.StartOffset != 0 || m.EndOffset != 0 {
		return invalid("startOffset and endOffset apply to TIME_WINDOW mappings only, not LATEST")
	}
	if !out.hasTime() {
		return invalid("LATEST into dimensions pairs with the output's time dimension, and the output (%s) has none: map the input with ALL", strings.Join(out.DimensionNames(), ", "))
	}
	if name := m.OutputDimension; name != "" && name != out.Dimensions[0].Name {
		if !slices.Contains(out.DimensionNames(), name) {
			return invalid("the output has no dimension %q (its dimensions: %s)", name, strings.Join(out.DimensionNames(), ", "))
		}
		return invalid("LATEST pairs with the output's time dimension (%s), not %s: each value of %s reads the same snapshot", out.Dimensions[0].Name, name, name)
	}
	return validateLatest(out.dimDef(0), in)
}

func validateAll(in Def) error {
	if in.IsZero() || !in.Bounded() {
		return invalid("ALL reads every expected dataid of the input, so the input needs a bounded partition "+
			"definition (STATIC, or an end), got %s", kindName(in))
	}
	_, err := materialise(in, Span{}, "input")
	return err
}

// validateAcrossDimensions checks a mapping with a multi-dimensional side.
// What is built so far: IDENTITY between datasets of the same dimensions
// (names and kinds, in the same order), each chunk reading its own tuple.
func validateAcrossDimensions(k MappingKind, out, in Def) error {
	if k != Identity {
		return invalid("%s mappings to or from datasets with dimensions are not supported yet: map datasets of the same dimensions with IDENTITY", k)
	}
	same := out.Kind == Dimensional && in.Kind == Dimensional && len(out.Dimensions) == len(in.Dimensions)
	for i := 0; same && i < len(out.Dimensions); i++ {
		same = out.Dimensions[i].Name == in.Dimensions[i].Name && out.Dimensions[i].Kind == in.Dimensions[i].Kind
	}
	if !same {
		return invalid("IDENTITY reads the input dataid equal to the output dataid, but the output has %s and the input %s: "+
			"mappings across different dimensions are not supported yet", kindOf(out), kindOf(in))
	}
	return nil
}

// kindOf names the kind of d for messages.
func kindOf(d Def) string {
	switch {
	case d.IsZero():
		return "no definition"
	case d.Kind == Dimensional:
		var parts []string
		for _, dim := range d.Dimensions {
			parts = append(parts, dim.Name+" "+string(dim.Kind))
		}
		return "dimensions (" + strings.Join(parts, ", ") + ")"
	}
	return string(d.Kind)
}

// kindName names the kind of d and whether it is unbounded, for messages.
func kindName(d Def) string {
	switch {
	case d.IsZero():
		return "no definition"
	case d.Kind.IsTime() && d.End == "":
		return fmt.Sprintf("%s without end", d.Kind)
	case d.Kind == Integer && d.End == "":
		return "INTEGER without end"
	}
	return string(d.Kind)
}

func abs(v int) int { return max(v, -v) }

// Inputs lists the input dataids that the output dataid outID reads, in
// order: the mapped set. It is the materialised InputSpan, and ErrClaimTime
// for LATEST.
func (m Mapping) Inputs(out, in Def, outID string) ([]string, error) {
	if m.kind() == Latest {
		return nil, ErrClaimTime
	}
	if m.kind() == ByDimension {
		p, err := planPerDim(out, in, m.Entries())
		if err != nil {
			return nil, err
		}
		return p.inputs(in, outID)
	}
	span, err := m.InputSpan(out, in, outID)
	if err != nil {
		return nil, err
	}
	return materialise(in, span, "input")
}

// Outputs lists the expected output dataids whose mapped set holds the input
// dataid inID, in order: those to reconsider when inID becomes READY, and to
// invalidate when it changes. It is the materialised OutputSpan, and
// ErrClaimTime for LATEST.
func (m Mapping) Outputs(out, in Def, inID string) ([]string, error) {
	if m.kind() == Latest {
		return nil, ErrClaimTime
	}
	if m.kind() == ByDimension {
		p, err := planPerDim(out, in, m.Entries())
		if err != nil {
			return nil, err
		}
		return p.outputs(out, in, inID)
	}
	span, err := m.OutputSpan(out, in, inID)
	if err != nil {
		return nil, err
	}
	return materialise(out, span, "output")
}

// materialise lists the dataids of span in d, at most MaxMapped of them.
func materialise(d Def, span Span, what string) ([]string, error) {
	switch {
	case span.Empty:
		return []string{}, nil
	case span.From != "" && span.From == span.To:
		return []string{span.From}, nil
	case d.IsZero() || !d.Bounded() && span.To == "":
		return nil, invalid("every %s dataid is mapped, and the %s has %s: list them from the stored rows",
			what, what, kindName(d))
	}
	seq, err := d.Range(span.From, span.To)
	if err != nil {
		return nil, err
	}
	var ids []string
	for id := range seq {
		if len(ids) == MaxMapped {
			return nil, invalid("the mapping reads more than %d %s dataids: narrow the window or the definition",
				MaxMapped, what)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// InputSpan is the run of input dataids the output dataid outID reads:
//
//   - IDENTITY: outID itself;
//   - TIME_WINDOW: the input windows that overlap outID's window, each in its
//     own definition's zone, the first moved by StartOffset windows and the
//     last by EndOffset;
//   - ALL: every expected input dataid;
//   - LATEST: the candidates, of which the claim reads the newest READY one:
//     between two time definitions the input windows that begin before
//     outID's window ends; between definitions of the same kind (or two
//     datasets without one) the input dataids not after outID; otherwise,
//     where "after" has no meaning (a DAILY output, a STATIC input), every
//     input dataid.
//
// The span holds only dataids the input's definition expects: one it does
// not expect can never be published, and waiting for it would block the
// output forever, so the first outputs of a lookback that starts with its
// input read a shorter window. It may be Empty (an output wholly before the
// input's start): the output then reads nothing from this input.
func (m Mapping) InputSpan(out, in Def, outID string) (Span, error) {
	switch m.kind() {
	case Identity:
		return clampSpan(in, single(outID))
	case AcrossDimensions:
		p, err := planDimensions(out, in)
		if err != nil {
			return Span{}, err
		}
		return p.inputs(in, outID)
	case ByDimension:
		// The run bounding the tuples read (not one run of tuples).
		ids, err := m.Inputs(out, in, outID)
		if err != nil {
			return Span{}, err
		}
		return bounding(ids), nil
	case TimeWindow:
		return m.timeInputs(out, in, outID)
	case All:
		return Span{}, nil
	case Latest:
		return latestInputs(out, in, outID)
	}
	return Span{}, invalid("unknown mapping kind %q", m.Kind)
}

// OutputSpan is the run of expected output dataids whose mapped set holds
// the input dataid inID; for LATEST, those whose candidates hold it (each
// reads it only while it is the newest READY candidate). It is Empty when
// the input's definition does not expect inID: no mapped set holds it.
func (m Mapping) OutputSpan(out, in Def, inID string) (Span, error) {
	if !in.Contains(inID) {
		return Span{Empty: true}, nil
	}
	switch m.kind() {
	case Identity:
		return clampSpan(out, single(inID))
	case AcrossDimensions:
		p, err := planDimensions(out, in)
		if err != nil {
			return Span{}, err
		}
		return p.outputs(out, in, inID)
	case ByDimension:
		ids, err := m.Outputs(out, in, inID)
		if err != nil {
			return Span{}, err
		}
		return bounding(ids), nil
	case TimeWindow:
		return m.timeOutputs(out, in, inID)
	case All:
		return Span{}, nil
	case Latest:
		return latestOutputs(out, in, inID)
	}
	return Span{}, invalid("unknown mapping kind %q", m.Kind)
}

// clampSpan narrows span to the dataids d expects; a zero Def expects all.
func clampSpan(d Def, span Span) (Span, error) {
	if d.IsZero() || span.Empty {
		return span, nil
	}
	if span.From != "" && !d.Contains(span.From) {
		next, ok := d.Next(span.From)
		if !ok {
			return Span{Empty: true}, nil
		}
		span.From = next
	}
	if span.To != "" && !d.Contains(span.To) {
		prev, ok := d.Prev(span.To)
		if !ok {
			return Span{Empty: true}, nil
		}
		span.To = prev
	}
	if span.From != "" && span.To != "" && CompareDataID(span.From, span.To) > 0 {
		return Span{Empty: true}, nil
	}
	return span, nil
}

// latestInputs is the LATEST candidates of outID (see InputSpan).
func latestInputs(out, in Def, outID string) (Span, error) {
	if out.Kind == Dimensional && in.Kind != Dimensional {
		// Into dimensions: the candidates of the tuple's time value.
		values, ok := out.SplitDataID(outID)
		if !ok {
			return Span{}, invalid("dataid %q does not have a value of each of the output's dimensions", outID)
		}
		return latestInputs(out.dimDef(0), in, values[0])
	}
	switch {
	case out.Kind.IsTime() && in.Kind.IsTime():
		_, end, err := out.Window(outID)
		if err != nil {
			return Span{}, err
		}
		it, err := compileTime(in)
		if err != nil {
			return Span{}, err
		}
		last, _ := formatPeriod(in.Kind, it.cal.containing(end.Unix()-1))
		return clampSpan(in, Span{To: last})
	case out.Kind == in.Kind:
		return clampSpan(in, Span{To: outID})
	}
	return Span{}, nil
}

// latestOutputs is the outputs whose LATEST candidates hold inID.
func latestOutputs(out, in Def, inID string) (Span, error) {
	if out.Kind == Dimensional && in.Kind != Dimensional {
		// Into dimensions: every tuple from the first of the time value.
		span, err := latestOutputs(out.dimDef(0), in, inID)
		if err != nil || span.Empty || span.From == "" {
			return span, err
		}
		first, ok := out.atOrAfter(span.From)
		if !ok {
			return Span{Empty: true}, nil
		}
		return clampSpan(out, Span{From: first})
	}
	switch {
	case out.Kind.IsTime() && in.Kind.IsTime():
		start, _, err := in.Window(inID)
		if err != nil {
			return Span{}, err
		}
		ot, err := compileTime(out)
		if err != nil {
			return Span{}, err
		}
		first, _ := formatPeriod(out.Kind, ot.cal.containing(start.Unix()))
		return clampSpan(out, Span{From: first})
	case out.Kind == in.Kind:
		return clampSpan(out, Span{From: inID})
	}
	return Span{}, nil
}
