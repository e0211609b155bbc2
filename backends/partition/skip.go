package partition

import "time"

// Stepping over many periods at once. calendar.step visits every period it
// passes, which makes a window reaching a year of hours back cost a year of
// hours each time it is computed. skip gets the same answer from the zone's
// transitions: a period has an empty window only where the zone's clocks
// jump forward, HOURLY periods at a DST change and DAILY ones where a zone
// skipped a whole day (Pacific/Apia, 2011-12-30); a WEEKLY or MONTHLY one
// never (no zone ever skipped a week).

// maxSkipRounds bounds the rounds of skip; each round finds every period
// missing from the periods it crossed, so two rounds are the most any real
// zone needs.
const maxSkipRounds = 16

// skip is c.step(n, k): the k-th existing period after n (before n when k
// is negative), in time that grows with the zone transitions crossed rather
// than with k.
func (c calendar) skip(n int64, k int) int64 {
	if k == 0 {
		return n
	}
	if c.kind == Weekly || c.kind == Monthly || c.zone.loc == time.UTC {
		return n + int64(k)
	}
	dir, rem := int64(1), int64(k)
	if k < 0 {
		dir, rem = -1, -rem
	}
	for range maxSkipRounds {
		target := n + dir*rem
		lo, hi := n+1, target // the periods crossed
		if dir < 0 {
			lo, hi = target, n-1
		}
		missing := c.missing(lo, hi)
		if missing == 0 {
			return target
		}
		n, rem = target, missing
	}
	return c.step(n, int(dir*rem))
}

// missing counts the periods in [lo, hi] whose window is empty. Only the
// periods next to a forward jump of the zone's clocks can be: it looks at
// those around each transition between the windows of lo and hi.
func (c calendar) missing(lo, hi int64) int64 {
	if lo > hi {
		return 0
	}
	seen := map[int64]bool{}
	var count int64
	c.forwardJumps(c.start(lo)-reachMargin, c.start(hi+1)+reachMargin, func(before, after int, at int64) {
		from := periodOfWall(c.kind, at+int64(before)) - 1
		to := periodOfWall(c.kind, at+int64(after)) + 1
		for p := max(from, lo); p <= min(to, hi); p++ {
			if !seen[p] && !c.exists(p) {
				count++
			}
			seen[p] = true
		}
	})
	return count
}

// forwardJumps calls fn for each transition of c's zone in [from, to)
// (Unix seconds) at which its clocks jump forward, with the UTC offsets
// before and after, and the instant.
func (c calendar) forwardJumps(from, to int64, fn func(before, after int, at int64)) {
	for x := from; x < to; {
		before, end := c.zone.offsetAt(x)
		if end >= to || end <= x {
			return
		}
		x = end
		if after, _ := c.zone.offsetAt(x); after > before {
			fn(before, after, x)
		}
	}
}
