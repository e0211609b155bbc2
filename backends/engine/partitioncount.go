package engine

import (
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

func (e *engine) PartitionCounts(ctx context.Context, dataset string) (backends.PartitionCount, error) {
	def, producer, ds, version, err := e.partitionSourceOf(ctx, dataset)
	if err != nil {
		return backends.PartitionCount{}, err
	}
	now := e.clock.Now()
	c := backends.PartitionCount{Dataset: dataset, At: now}
	if def.Kind == partition.Dynamic {
		return e.countDynamic(ctx, def, producer, c)
	}
	lastDue, ok := def.DueBefore(now)
	open := def.Kind == partition.Integer && def.End == ""
	if !ok && !open {
		return c, nil
	}
	lastLate := ""
	if def.Deadline != nil {
		late := def
		late.Lag = *def.Deadline
		lastLate, _ = late.DueBefore(now)
	}
	if c, ok, err := e.countKept(ctx, def, producer, keptSource{ds, version}, c, lastDue, lastLate); err != nil || ok {
		return c, err
	}
	from := countFrom(def, lastDue)
	c.Truncated = from != ""
	ids, err := def.Range(from, lastDue)
	if err != nil {
		return c, backends.InvalidArgument("%v", err)
	}
	rows := rowStream{e: e, producer: producer, def: def,
		f: backends.ChunkFilter{Dataset: dataset, Role: backends.RoleOutput, From: from, To: lastDue, First: backends.MaxPageSize}}
	missing, seen := 0, 0
	for id := range ids {
		if seen++; seen > backends.MaxPartitionCount {
			c.Truncated = true
			break
		}
		st, more, err := rows.status(ctx, id)
		if err != nil {
			return c, err
		}
		if open && !more {
			break // past the highest INTEGER dataid seen
		}
		if st == backends.StatusNone {
			missing++
			if c.OldestMissing == "" {
				c.OldestMissing = id
			}
		}
		if lastLate != "" && backends.CompareDataID(id, lastLate) <= 0 && st != backends.StatusReady {
			c.Late++
			if c.OldestLate == "" {
				c.OldestLate = id
			}
		}
		if open && st != backends.StatusNone {
			c.Missing = missing // every gap up to a row seen is missing
		}
	}
	if !open || c.Truncated {
		c.Missing = missing
	}
	return c, nil
}

// countFrom is where a count starts: "" (the definition's start) unless
// the history up to lastDue is longer than MaxPartitionCount dataids, then
// MaxPartitionCount-1 periods before lastDue, stepped back on the kind's
// calendar (Def.Back: months as months, never a window's length times a
// count, which overflows a time.Duration for weeks and months).
func countFrom(def partition.Def, lastDue string) string {
	if lastDue == "" {
		return ""
	}
	from, ok := def.Back(lastDue, backends.MaxPartitionCount-1)
	if !ok {
		return ""
	}
	if _, earlier := def.Prev(from); !earlier {
		return "" // from is the definition's first dataid: nothing is left out
	}
	return from
}

// rowStream reads a dataset's OUTPUT rows in dataid order, a page at a
// time, for a merge with the expected dataids.
type rowStream struct {
	e        *engine
	producer string
	def      partition.Def
	f        backends.ChunkFilter
	rows     []backends.StatusRow
	ended    bool
}

// status is the status of id's OUTPUT row; more tells whether a row of an
// expected dataid at or after id exists.
func (s *rowStream) status(ctx context.Context, id string) (backends.Status, bool, error) {
	for {
		for len(s.rows) > 0 && backends.CompareDataID(s.rows[0].DataID, id) < 0 {
			s.rows = s.rows[1:]
		}
		if len(s.rows) > 0 {
			if s.rows[0].DataID == id {
				return s.rows[0].Status, true, nil
			}
			return backends.StatusNone, true, nil
		}
		if s.ended {
			return backends.StatusNone, false, nil
		}
		page, err := s.e.b.ListRows(ctx, s.f)
		if err != nil {
			return backends.StatusNone, false, err
		}
		// Only the producer's rows of expected dataids count, each
		// looked at once.
		s.rows = slices.DeleteFunc(page.Rows, func(r backends.StatusRow) bool { return r.Job != s.producer || !s.def.Contains(r.DataID) })
		s.ended = !page.HasNextPage || len(page.Rows) == 0
		if len(page.Cursors) > 0 {
			s.f.After = page.Cursors[len(page.Cursors)-1]
		}
	}
}

// countDynamic counts the missing and late values of a DYNAMIC set: those
// due (added + lag) without an OUTPUT row, and those not READY at their
// adding + deadline; the first MaxPartitionCount values at most, in
// shortlex order (Truncated beyond).
func (e *engine) countDynamic(ctx context.Context, def partition.Def, producer string, c backends.PartitionCount) (backends.PartitionCount, error) {
	rows := rowStream{e: e, producer: producer, def: def,
		f: backends.ChunkFilter{Dataset: c.Dataset, Role: backends.RoleOutput, First: backends.MaxPageSize}}
	after, seen := "", 0
	for seen < backends.MaxPartitionCount {
		vals, err := e.b.ListPartitionValues(ctx, c.Dataset, "", "", after, "", min(backends.MaxPageSize, backends.MaxPartitionCount-seen))
		if err != nil {
			return c, err
		}
		if len(vals) == 0 {
			return c, nil
		}
		for _, v := range vals {
			st, _, err := rows.status(ctx, v.Value)
			if err != nil {
				return c, err
			}
			if st == backends.StatusNone && !c.At.Before(v.AddedAt.Add(def.Lag)) {
				c.Missing++
				if c.OldestMissing == "" {
					c.OldestMissing = v.Value
				}
			}
			if def.Deadline != nil && st != backends.StatusReady && !c.At.Before(v.AddedAt.Add(*def.Deadline)) {
				c.Late++
				if c.OldestLate == "" {
					c.OldestLate = v.Value
				}
			}
		}
		seen += len(vals)
		after = vals[len(vals)-1].Value
	}
	more, err := e.b.ListPartitionValues(ctx, c.Dataset, "", "", after, "", 1)
	c.Truncated = len(more) > 0
	return c, err
}
