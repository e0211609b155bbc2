package partition

import (
	"math"
	"strconv"
	"time"
)

// Count is how many expected dataids lie in [from, to] (an empty from or
// to stands for the definition's own start or end), computed from period
// numbers and the zone's transitions, not by walking the windows: ten
// years of hours cost what a day does. Time kinds and INTEGER only (an
// INTEGER span of more than math.MaxInt64 dataids is an error); other
// kinds answer an error.
func (d Def) Count(from, to string) (int64, error) {
	if d.Kind == Dimensional {
		return d.tupleCount(from, to)
	}
	if d.Kind == Integer {
		lo, hi, err := integerSpan(d, from, to)
		switch {
		case err != nil:
			return 0, err
		case lo > hi:
			return 0, nil
		case hi-lo >= math.MaxInt64:
			return 0, invalid("INTEGER span [%d, %d] holds more than %d dataids", lo, hi, int64(math.MaxInt64))
		}
		return int64(hi-lo) + 1, nil
	}
	if !d.Kind.IsTime() {
		return 0, invalid("only the time kinds and INTEGER are counted, not %s", kindOf(d))
	}
	t, lo, hi, err := d.timeBounds(from, to)
	if err != nil {
		return 0, err
	}
	if lo > hi {
		return 0, nil
	}
	n := hi - lo + 1
	if t.cal.kind == Weekly || t.cal.kind == Monthly || t.cal.zone.loc == time.UTC {
		return n, nil
	}
	return n - t.cal.missing(lo, hi), nil
}

// Last is the last expected dataid of a time or INTEGER definition: its
// end, or the last period of the year 9999 (the largest uint64 for
// INTEGER) when it has none. ok is false for the other kinds, or when
// nothing is expected.
func (d Def) Last() (last string, ok bool) {
	if d.Kind == Dimensional {
		return d.tupleLast()
	}
	if d.Kind == Integer {
		t, err := compileInteger(d)
		if err != nil {
			return "", false
		}
		return strconv.FormatUint(t.last, 10), true
	}
	if !d.Kind.IsTime() {
		return "", false
	}
	t, err := compileTime(d)
	if err != nil {
		return "", false
	}
	n := t.last
	if !t.cal.exists(n) {
		n = t.cal.prev(n)
	}
	return t.format(n)
}
