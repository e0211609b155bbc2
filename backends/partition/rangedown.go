package partition

import (
	"iter"
	"strconv"
)

// RangeDown yields the expected dataids in [from, to] from to down to from;
// an empty from or to stands for the definition's own start or end, as in
// Range. It walks the time kinds and INTEGER only: other kinds answer an
// error.
func (d Def) RangeDown(from, to string) (iter.Seq[string], error) {
	if d.Kind == Dimensional {
		return d.tupleRange(from, to, true)
	}
	if d.Kind == Integer {
		lo, hi, err := integerSpan(d, from, to)
		if err != nil {
			return nil, err
		}
		return func(yield func(string) bool) {
			for v := hi; v >= lo && lo <= hi; v-- {
				if !yield(strconv.FormatUint(v, 10)) || v == 0 {
					return
				}
			}
		}, nil
	}
	if !d.Kind.IsTime() {
		return nil, invalid("only the time kinds and INTEGER are walked down, not %s", kindOf(d))
	}
	t, lo, hi, err := d.timeBounds(from, to)
	if err != nil {
		return nil, err
	}
	return func(yield func(string) bool) {
		n := hi
		if !t.cal.exists(n) {
			n = t.cal.prev(n)
		}
		for ; n >= lo; n = t.cal.prev(n) {
			id, ok := formatPeriod(t.cal.kind, n)
			if !ok || !yield(id) {
				return
			}
		}
	}, nil
}
