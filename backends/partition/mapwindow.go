package partition

// timeInputs is the TIME_WINDOW span of outID: the input windows that
// overlap its window, widened by the offsets, within the input's definition.
func (m Mapping) timeInputs(out, in Def, outID string) (Span, error) {
	if err := m.validateTimeWindow(out, in); err != nil {
		return Span{}, err
	}
	_, n, err := out.period(outID)
	if err != nil {
		return Span{}, err
	}
	ot, _ := compileTime(out)
	it, err := compileTime(in)
	if err != nil {
		return Span{}, err
	}
	first := it.cal.containing(ot.cal.start(n))
	last := it.cal.containing(ot.cal.start(n+1) - 1)
	return it.span(it.cal.skip(first, m.StartOffset), it.cal.skip(last, m.EndOffset)), nil
}

// timeOutputs is the TIME_WINDOW reverse of inID: the outputs whose span
// holds it. An output's span holds input period a exactly when its window
// overlaps the input windows from a-EndOffset to a-StartOffset, because
// stepping by existing windows preserves order both ways.
func (m Mapping) timeOutputs(out, in Def, inID string) (Span, error) {
	if err := m.validateTimeWindow(out, in); err != nil {
		return Span{}, err
	}
	_, a, err := in.period(inID)
	if err != nil {
		return Span{}, err
	}
	it, _ := compileTime(in)
	ot, err := compileTime(out)
	if err != nil {
		return Span{}, err
	}
	from := it.cal.start(it.cal.skip(a, -m.EndOffset))
	to := it.cal.start(it.cal.skip(a, -m.StartOffset) + 1)
	return ot.span(ot.cal.containing(from), ot.cal.containing(to-1)), nil
}

// span is the Span of the expected periods in [lo, hi].
func (t timeDef) span(lo, hi int64) Span {
	lo, hi = max(lo, t.first), min(hi, t.last)
	if lo > hi {
		return Span{Empty: true}
	}
	from, okFrom := formatPeriod(t.cal.kind, lo)
	to, okTo := formatPeriod(t.cal.kind, hi)
	if !okFrom || !okTo {
		return Span{Empty: true}
	}
	return Span{From: from, To: to}
}
