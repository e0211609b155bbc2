package partition

import (
	"sync"
	"time"
)

// Bounds on the spans of a mapping over a whole definition, worked out from
// the kinds, the zones and the offsets, without listing any dataid: how
// many input dataids one claim reads at most (MaxInputs), and how many
// output dataids one input dataid is read by at most (MaxOutputs: the
// outputs one publish may queue). A store refuses a mapping whose bounds
// exceed what it can do in one transaction, so that no output of it, near
// the definition's start or years later, fails.

// civilLen is the shortest and the longest civil (wall-clock) length of a
// period of each time kind, in seconds.
var civilLen = map[Kind][2]int64{
	Hourly:  {secondsPerHour, secondsPerHour},
	Daily:   {secondsPerDay, secondsPerDay},
	Weekly:  {7 * secondsPerDay, 7 * secondsPerDay},
	Monthly: {28 * secondsPerDay, 31 * secondsPerDay},
}

// nested is how many periods of the second kind one period of the first
// holds at most, where each of them lies within one of the first in the
// same zone.
var nested = map[[2]Kind]int64{
	{Daily, Hourly}: 24, {Weekly, Hourly}: 7 * 24, {Monthly, Hourly}: 31 * 24,
	{Weekly, Daily}: 7, {Monthly, Daily}: 31,
}

// MaxInputs bounds how many input dataids InputSpan holds for any output
// dataid of out (for LATEST, the one it reads; for ALL, every expected
// input dataid, counted up to MaxMapped+1).
func (m Mapping) MaxInputs(out, in Def) int64 {
	switch m.kind() {
	case TimeWindow:
		if !out.Kind.IsTime() || !in.Kind.IsTime() {
			return 1
		}
		n := cover(1, out, in) + int64(m.EndOffset) - int64(m.StartOffset)
		return clampSize(n, in)
	case All:
		return countExpected(in, MaxMapped+1)
	case AcrossDimensions:
		p, err := planDimensions(out, in)
		if err != nil {
			return MaxMapped + 1
		}
		return p.wholeIn()
	case ByDimension:
		p, err := planPerDim(out, in, m.Entries())
		if err != nil {
			return MaxMapped + 1
		}
		return p.maxInputs()
	}
	return 1
}

// MaxOutputs bounds how many output dataids OutputSpan holds for any input
// dataid of in through TIME_WINDOW. The other kinds queue one output per
// input dataid, or one sweep: 1.
func (m Mapping) MaxOutputs(out, in Def) int64 {
	if m.kind() == ByDimension {
		p, err := planPerDim(out, in, m.Entries())
		if err != nil {
			return MaxMapped + 1
		}
		return p.maxOutputs()
	}
	if m.kind() == AcrossDimensions {
		p, err := planDimensions(out, in)
		if err != nil {
			return MaxMapped + 1
		}
		return p.wholeOut()
	}
	if m.kind() != TimeWindow || !out.Kind.IsTime() || !in.Kind.IsTime() {
		return 1
	}
	n := cover(int64(m.EndOffset)-int64(m.StartOffset)+1, in, out)
	return clampSize(n, out)
}

// checkWidth refuses a TIME_WINDOW whose claims may read more than
// MaxMapped input dataids, or one of whose input dataids may be read by
// more than MaxMapped outputs (all of which one publish may queue).
func (m Mapping) checkWidth(out, in Def) error {
	if n := m.MaxInputs(out, in); n > MaxMapped {
		return invalid("this TIME_WINDOW reads up to %d input dataids for one output dataid, more than the %d one claim may read: "+
			"narrow startOffset and endOffset", n, MaxMapped)
	}
	if n := m.MaxOutputs(out, in); n > MaxMapped {
		return invalid("this TIME_WINDOW has each input dataid read by up to %d output dataids, more than the %d one publish may queue: "+
			"narrow startOffset and endOffset", n, MaxMapped)
	}
	return nil
}

// cover bounds how many periods of b a run of r consecutive existing
// periods of a overlaps. In one zone the windows of both kinds are the
// zone's reach of civil times, so civil lengths decide; across zones the
// run moves, on b's wall clock, by at most the zones' offset ranges at each
// end.
func cover(r int64, a, b Def) int64 {
	same := sameZone(a.Timezone, b.Timezone)
	switch {
	case same && a.Kind == b.Kind:
		return r
	case same && nested[[2]Kind{a.Kind, b.Kind}] > 0:
		return r * nested[[2]Kind{a.Kind, b.Kind}]
	case same && r == 1 && nested[[2]Kind{b.Kind, a.Kind}] > 0:
		return 1
	}
	span := r * civilLen[a.Kind][1]
	if !same {
		span += 2 * (offsetRange(a.Timezone) + offsetRange(b.Timezone))
	}
	short := civilLen[b.Kind][0]
	return (span+short-1)/short + 1
}

func sameZone(a, b string) bool {
	utc := func(z string) string {
		if z == "" {
			return "UTC"
		}
		return z
	}
	return utc(a) == utc(b)
}

// clampSize is n, or fewer when d is bounded: never more than the periods
// from its start to its end.
func clampSize(n int64, d Def) int64 {
	t, err := compileTime(d)
	if err != nil || !t.bounded {
		return n
	}
	return min(n, t.last-t.first+1)
}

// countExpected counts the expected dataids of d, stopping at limit.
func countExpected(d Def, limit int) int64 {
	ids, err := d.Range("", "")
	if err != nil {
		return 1
	}
	var n int64
	for range ids {
		if n++; n >= int64(limit) {
			break
		}
	}
	return n
}

var offsetRanges sync.Map // zone name -> int64

// offsetRange is the difference, in seconds, between the largest and the
// smallest UTC offset zone ever had (local mean time included), through
// its rules' repetition in the years after its table. 0 for UTC.
func offsetRange(zone string) int64 {
	if sameZone(zone, "UTC") {
		return 0
	}
	if v, ok := offsetRanges.Load(zone); ok {
		return v.(int64)
	}
	z, err := loadZone(zone)
	if err != nil {
		return 2 * reachMargin // unknown: as wide as any
	}
	end := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	x := time.Date(minYear, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	first, _ := z.offsetAt(x)
	lo, hi := first, first
	for x < end {
		off, next := z.offsetAt(x)
		lo, hi = min(lo, off), max(hi, off)
		if next <= x {
			break
		}
		x = next
	}
	r := int64(hi - lo)
	offsetRanges.Store(zone, r)
	return r
}
