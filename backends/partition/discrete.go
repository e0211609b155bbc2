package partition

import (
	"iter"
	"math"
	"strconv"
)

// intDef is a validated INTEGER definition.
type intDef struct {
	first, last uint64 // inclusive; last is MaxUint64 when unbounded
}

func compileInteger(d Def) (intDef, error) {
	t := intDef{last: math.MaxUint64}
	var err error
	if d.Start != "" {
		if t.first, err = parseInteger(d.Start); err != nil {
			return t, invalid("start %v", err)
		}
	}
	if d.End != "" {
		if t.last, err = parseInteger(d.End); err != nil {
			return t, invalid("end %v", err)
		}
		if t.last < t.first {
			return t, invalid("end %q is before start %q", d.End, d.Start)
		}
	}
	return t, nil
}

// parseInteger reads a plain non-negative integer: ASCII digits without a
// sign or leading zeros, so that shortlex order is numeric order.
func parseInteger(id string) (uint64, error) {
	ok := id != "" && (id == "0" || id[0] != '0')
	for i := 0; ok && i < len(id); i++ {
		ok = id[i] >= '0' && id[i] <= '9'
	}
	if !ok {
		return 0, invalid("%q is not an INTEGER dataid: want a plain non-negative integer without sign or leading zeros, like 0 or 42", id)
	}
	v, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return 0, invalid("%q is not an INTEGER dataid: it is larger than %d", id, uint64(math.MaxUint64))
	}
	return v, nil
}

func (t intDef) contains(id string) bool {
	v, err := parseInteger(id)
	return err == nil && v >= t.first && v <= t.last
}

func (t intDef) next(id string) (string, bool) {
	v, err := parseInteger(id)
	switch {
	case err != nil || v >= t.last:
		return "", false
	case v < t.first:
		return strconv.FormatUint(t.first, 10), true
	}
	return strconv.FormatUint(v+1, 10), true
}

func (t intDef) prev(id string) (string, bool) {
	v, err := parseInteger(id)
	switch {
	case err != nil || v <= t.first:
		return "", false
	case v > t.last:
		return strconv.FormatUint(t.last, 10), true
	}
	return strconv.FormatUint(v-1, 10), true
}

// back is the integer k before id, or the first one when that is later.
func (t intDef) back(id string, k uint64) (string, bool) {
	v, err := parseInteger(id)
	if err != nil || v < t.first {
		return "", false
	}
	v = min(v, t.last)
	if k >= v-t.first {
		return strconv.FormatUint(t.first, 10), true
	}
	return strconv.FormatUint(v-k, 10), true
}

// integerSpan compiles an INTEGER definition and clamps [from, to] ("" =
// its own bound) to it: Range, RangeDown and Count read the span so.
func integerSpan(d Def, from, to string) (lo, hi uint64, err error) {
	t, err := compileInteger(d)
	if err != nil {
		return 0, 0, err
	}
	return t.span(from, to)
}

// span clamps [from, to] ("" = the definition's own bound) to t.
func (t intDef) span(from, to string) (lo, hi uint64, err error) {
	lo, hi = t.first, t.last
	if from != "" {
		v, err := parseInteger(from)
		if err != nil {
			return 0, 0, invalid("from %v", err)
		}
		lo = max(lo, v)
	}
	if to != "" {
		v, err := parseInteger(to)
		if err != nil {
			return 0, 0, invalid("to %v", err)
		}
		hi = min(hi, v)
	}
	return lo, hi, nil
}

func integerSeq(lo, hi uint64) iter.Seq[string] {
	return func(yield func(string) bool) {
		for v := lo; v <= hi; v++ {
			if !yield(strconv.FormatUint(v, 10)) || v == math.MaxUint64 {
				return
			}
		}
	}
}

func validateStatic(values []string) error {
	if len(values) == 0 {
		return invalid("STATIC partitions need at least one value")
	}
	if len(values) > MaxStaticValues {
		return invalid("STATIC partitions take at most %d values, got %d", MaxStaticValues, len(values))
	}
	seen := make(map[string]bool, len(values))
	for _, v := range values {
		if err := validDataID(v); err != nil {
			return invalid("value %q is not a valid dataid: %v", v, err)
		}
		if seen[v] {
			return invalid("value %q appears twice in values", v)
		}
		seen[v] = true
	}
	return nil
}
