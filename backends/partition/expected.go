package partition

import (
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"
)

// Window is the [start, end) of a time dataid, in the definition's zone. It
// is the arithmetic of the kind and zone: it does not check that id lies
// between start and end (Contains does). A dataid the zone's clocks skip
// has no window and is an error.
func (d Def) Window(id string) (start, end time.Time, err error) {
	if d.Kind == Dimensional {
		def, v, err := d.timeValue(id)
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		return def.Window(v)
	}
	t, n, err := d.period(id)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	start, end = t.cal.window(n)
	return start, end, nil
}

// period compiles d, which must be a time definition, and parses id into an
// existing period.
func (d Def) period(id string) (timeDef, int64, error) {
	if !d.Kind.IsTime() {
		return timeDef{}, 0, invalid("%s dataids have no window", d.Kind)
	}
	t, err := compileTime(d)
	if err != nil {
		return t, 0, err
	}
	n, err := t.existing("dataid", id)
	return t, n, err
}

// Due is when the window of id is due: its end + Lag. INTEGER and STATIC
// dataids are due at once: Due answers the zero time for them.
func (d Def) Due(id string) (time.Time, error) {
	if d.Kind == Dimensional && d.hasTime() {
		def, v, err := d.timeValue(id)
		if err != nil {
			return time.Time{}, err
		}
		return def.Due(v)
	}
	if !d.Kind.IsTime() {
		if !d.Contains(id) {
			return time.Time{}, invalid("%q is not an expected %s dataid", id, d.Kind)
		}
		return time.Time{}, nil
	}
	_, end, err := d.Window(id)
	return end.Add(d.Lag), err
}

// Late reports whether the chunk id is late at now: not ready, and now is
// at or past its window's end + Deadline. Without a deadline nothing is late.
func (d Def) Late(id string, now time.Time, ready bool) (bool, error) {
	if d.Kind == Dimensional && d.hasTime() && d.Deadline != nil {
		def, v, err := d.timeValue(id)
		if err != nil {
			return false, err
		}
		return def.Late(v, now, ready)
	}
	if !d.Kind.IsTime() || d.Deadline == nil {
		return false, nil
	}
	_, end, err := d.Window(id)
	if err != nil || ready {
		return false, err
	}
	return !now.Before(end.Add(*d.Deadline)), nil
}

// Contains reports whether id is an expected dataid of d: of the kind's
// format, with a window in the zone, between start and end. The zero Def
// expects any valid dataid.
func (d Def) Contains(id string) bool {
	switch {
	case d.IsZero():
		return validDataID(id) == nil
	case d.Kind == Dimensional:
		return d.tupleContains(id)
	case d.Kind.IsTime():
		t, err := compileTime(d)
		if err != nil {
			return false
		}
		n, err := parsePeriod(d.Kind, id)
		return err == nil && n >= t.first && n <= t.last && t.cal.exists(n)
	case d.Kind == Integer:
		t, err := compileInteger(d)
		return err == nil && t.contains(id)
	case d.Kind == Dynamic:
		// The set is in the store: any valid dataid may be one of its
		// values, and the store's set tells (DynamicValues).
		return validDataID(id) == nil
	default:
		return staticContains(d.Values, id)
	}
}

// ErrDynamicSet is what Range answers for a DYNAMIC definition: its
// expected dataids are a set kept in the store, which the caller lists.
var ErrDynamicSet = errors.New("DYNAMIC partitions: the expected dataids are the values kept in the store")

// Next is the smallest expected dataid after id (shortlex order, which is
// time order for the time kinds); id need not be expected itself, but must
// be of the kind's format. ok is false when there is none.
func (d Def) Next(id string) (next string, ok bool) {
	switch {
	case d.Kind == Dimensional:
		return d.tupleStep(id, true)
	case d.Kind.IsTime():
		t, n, err := d.compileAndParse(id)
		if err != nil {
			return "", false
		}
		return t.format(max(t.cal.next(n), t.first))
	case d.Kind == Integer:
		t, err := compileInteger(d)
		if err != nil {
			return "", false
		}
		return t.next(id)
	case d.Kind == Static:
		return staticNext(d.Values, id)
	}
	return "", false
}

// Prev is the largest expected dataid before id; see Next.
func (d Def) Prev(id string) (prev string, ok bool) {
	switch {
	case d.Kind == Dimensional:
		return d.tupleStep(id, false)
	case d.Kind.IsTime():
		t, n, err := d.compileAndParse(id)
		if err != nil {
			return "", false
		}
		return t.format(min(t.cal.prev(n), t.last))
	case d.Kind == Integer:
		t, err := compileInteger(d)
		if err != nil {
			return "", false
		}
		return t.prev(id)
	case d.Kind == Static:
		return staticPrev(d.Values, id)
	}
	return "", false
}

// Back is the expected dataid k periods before id, stepped on the kind's
// calendar (k hours, days, ISO weeks or months; INTEGER: k less), or the
// definition's first dataid when that is later; a period the zone's clocks
// skip gives the next one that exists. [Back(id, k), id] thus holds at
// most k+1 expected dataids, exactly k+1 where no period is skipped and
// the start is not reached. It is arithmetic on period numbers, so no k
// overflows, however long the windows. ok is false for STATIC, a negative
// k, an id not of the kind's format, or when no expected dataid lies at or
// before id.
func (d Def) Back(id string, k int) (back string, ok bool) {
	switch {
	case k < 0:
		return "", false
	case d.Kind == Dimensional:
		return d.tupleBack(id, k)
	case d.Kind.IsTime():
		t, n, err := d.compileAndParse(id)
		if err != nil || n < t.first {
			return "", false
		}
		n = min(n, t.last)
		m := t.first
		if uint64(k) < uint64(n-t.first) {
			m = n - int64(k)
		}
		if !t.cal.exists(m) {
			if m = t.cal.next(m); m > n {
				return "", false
			}
		}
		return t.format(m)
	case d.Kind == Integer:
		t, err := compileInteger(d)
		if err != nil {
			return "", false
		}
		return t.back(id, uint64(k))
	}
	return "", false
}

// compileAndParse compiles a time definition and parses id by format only
// (a skipped hour is accepted: it orders between its neighbours).
func (d Def) compileAndParse(id string) (timeDef, int64, error) {
	t, err := compileTime(d)
	if err != nil {
		return t, 0, err
	}
	n, err := parsePeriod(d.Kind, id)
	return t, n, err
}

// format is the dataid of period n if it is expected.
func (t timeDef) format(n int64) (string, bool) {
	if n < t.first || n > t.last || !t.cal.exists(n) {
		return "", false
	}
	return formatPeriod(t.cal.kind, n)
}

// Range yields the expected dataids in [from, to], in order; an empty from
// or to stands for the definition's own start or end. It computes each
// dataid as it yields it and holds none: over an unbounded definition with
// an empty to it goes on until the consumer stops (the largest integer, or
// the year 9999). To page, pass Next(last dataid of the previous page) as
// from and stop after a page.
func (d Def) Range(from, to string) (iter.Seq[string], error) {
	switch {
	case d.Kind == Dimensional:
		return d.tupleRange(from, to, false)
	case d.Kind.IsTime():
		return d.timeRange(from, to)
	case d.Kind == Integer:
		lo, hi, err := integerSpan(d, from, to)
		if err != nil {
			return nil, err
		}
		return integerSeq(lo, hi), nil
	case d.Kind == Static:
		return staticSeq(d.Values, from, to), nil
	case d.Kind == Dynamic:
		return nil, ErrDynamicSet
	}
	return nil, invalid("a dataset without a partition definition has no expected dataids")
}

func (d Def) timeRange(from, to string) (iter.Seq[string], error) {
	t, lo, hi, err := d.timeBounds(from, to)
	if err != nil {
		return nil, err
	}
	return t.seq(lo, hi), nil
}

// timeBounds compiles a time definition and returns the periods from and
// to stand for, within it; an empty one stands for its start or end.
func (d Def) timeBounds(from, to string) (t timeDef, lo, hi int64, err error) {
	if t, err = compileTime(d); err != nil {
		return t, 0, 0, err
	}
	lo, hi = t.first, t.last
	if from != "" {
		n, err := parsePeriod(d.Kind, from)
		if err != nil {
			return t, 0, 0, invalid("from %v", err)
		}
		lo = max(lo, n)
	}
	if to != "" {
		n, err := parsePeriod(d.Kind, to)
		if err != nil {
			return t, 0, 0, invalid("to %v", err)
		}
		hi = min(hi, n)
	}
	return t, lo, hi, nil
}

// seq yields the existing periods in [lo, hi] as dataids.
func (t timeDef) seq(lo, hi int64) iter.Seq[string] {
	return func(yield func(string) bool) {
		n := lo
		if !t.cal.exists(n) {
			n = t.cal.next(n)
		}
		for ; n <= hi; n = t.cal.next(n) {
			id, ok := formatPeriod(t.cal.kind, n)
			if !ok || !yield(id) {
				return
			}
		}
	}
}

// DueBefore is the last expected dataid that is due at now, found by
// arithmetic on the clock, not by walking the windows: every expected
// dataid up to it is due, none after it. ok is false when none is due yet.
// For INTEGER and STATIC every expected dataid is due at once: DueBefore
// answers the last one, and ok is false for an unbounded INTEGER definition
// (there is no last one to schedule up to).
func (d Def) DueBefore(now time.Time) (last string, ok bool) {
	switch {
	case d.Kind == Dimensional:
		return d.tupleDueBefore(now)
	case d.Kind.IsTime():
		t, err := compileTime(d)
		if err != nil {
			return "", false
		}
		x := now.Add(-d.Lag).Unix() // a window is due once its end <= x
		n := min(t.cal.prev(t.cal.containing(x)), t.last)
		if !t.cal.exists(n) {
			n = t.cal.prev(n)
		}
		return t.format(n)
	case d.Kind == Integer:
		if d.End == "" || !d.Contains(d.End) {
			return "", false
		}
		return d.End, true
	case d.Kind == Static:
		if len(d.Values) == 0 {
			return "", false
		}
		return staticLast(d.Values), true
	}
	return "", false
}

// Describe names the definition's kind and bounds, for messages.
func (d Def) Describe() string {
	switch {
	case d.Kind == Dimensional:
		return fmt.Sprintf("dimensions %s", strings.Join(d.DimensionNames(), "|"))
	case d.Kind == Static:
		return fmt.Sprintf("STATIC, %d values", len(d.Values))
	case d.End == "" && d.Start == "":
		return string(d.Kind) + " from 0"
	case d.End == "":
		return fmt.Sprintf("%s from %s", d.Kind, d.Start)
	}
	return fmt.Sprintf("%s from %s to %s", d.Kind, d.Start, d.End)
}
