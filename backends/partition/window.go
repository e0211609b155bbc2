package partition

import "time"

// reachMargin is more than the largest UTC offset any zone ever had (under
// 16 hours), so a wall clock never reads a given value earlier than that
// many seconds before the same value in UTC.
const reachMargin = 26 * secondsPerHour

// maxSkip bounds the searches for an existing period: no zone skips more
// than a day (Pacific/Apia skipped 2011-12-30), so 72 hourly periods are
// plenty.
const maxSkip = 72

// calendar is the period arithmetic of one time kind in one zone.
//
// The window of a period runs from the first instant at which the zone's
// wall clock reaches the period's civil start to the first instant at which
// it reaches the next period's civil start. Windows therefore tile the time
// line without gaps or overlaps whatever the zone does:
//
//   - a day on which clocks spring forward is 23 hours long, and the hour the
//     clocks skip has an empty window: that hour is no dataid at all;
//   - a day on which clocks fall back is 25 hours long, and the repeated hour
//     is ONE window of two hours (its first pass and its second);
//   - a zone that skips midnight starts its day at the first instant after
//     the jump; a zone that skipped a whole day (Pacific/Apia, 2011-12-30)
//     has no dataid for that day or its hours.
//
// Hourly dataids thus name local wall-clock hours, the names people and
// file layouts use (dt=2026-10-25/hour=02), without a UTC offset in them.
type calendar struct {
	kind Kind
	zone *zone
}

// reach is the first instant, in Unix seconds, at which the wall clock of
// c's zone reads wall (in seconds of a clock that reads 0 at 1970-01-01
// 00:00) or later.
func (c calendar) reach(wall int64) int64 {
	if c.zone.loc == time.UTC {
		return wall
	}
	t := wall - reachMargin // the wall clock reads less than wall here
	for range 32 {
		offset, end := c.zone.offsetAt(t)
		// Within [t, end) the wall clock reads t+offset and runs evenly;
		// if it already reads more than wall at t, the clocks jumped over
		// wall at t.
		cand := max(wall-int64(offset), t)
		if cand < end {
			return cand
		}
		t = end
	}
	return t
}

// start is the first instant of period n's window.
func (c calendar) start(n int64) int64 { return c.reach(wallStart(c.kind, n)) }

// exists reports whether period n has a non-empty window in c's zone.
func (c calendar) exists(n int64) bool { return c.start(n) < c.start(n+1) }

// window is the [start, end) of period n, in c's zone.
func (c calendar) window(n int64) (time.Time, time.Time) {
	return time.Unix(c.start(n), 0).In(c.zone.loc), time.Unix(c.start(n+1), 0).In(c.zone.loc)
}

// containing is the period whose window holds instant x (Unix seconds).
func (c calendar) containing(x int64) int64 {
	offset, _ := c.zone.offsetAt(x)
	n := periodOfWall(c.kind, x+int64(offset))
	for i := 0; i < maxSkip && c.start(n) > x; i++ {
		n--
	}
	for i := 0; i < maxSkip && c.start(n+1) <= x; i++ {
		n++
	}
	return n
}

// next is the first existing period after n; prev the last before n.
func (c calendar) next(n int64) int64 {
	for i := 0; i < maxSkip; i++ {
		n++
		if c.exists(n) {
			break
		}
	}
	return n
}

func (c calendar) prev(n int64) int64 {
	for i := 0; i < maxSkip; i++ {
		n--
		if c.exists(n) {
			break
		}
	}
	return n
}

// step moves k existing periods from n: forward when k > 0.
func (c calendar) step(n int64, k int) int64 {
	for ; k > 0; k-- {
		n = c.next(n)
	}
	for ; k < 0; k++ {
		n = c.prev(n)
	}
	return n
}
