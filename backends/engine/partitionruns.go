package engine

import (
	"github.com/chunklock/chunklock/backends"

	"context"
	"time"

	"github.com/chunklock/chunklock/backends/partition"
)

// The runs read model (the dashboard's partition grid and history strip): a
// span of a dataset's partitions answered as runs of one status and
// lateness, and at a coarser zoom as summaries per column of that zoom, so
// that a long and mostly READY history comes back in a few hundred bytes
// instead of one entry per partition.

func validateRunsFilter(f backends.RunsFilter) error {
	for _, id := range []string{f.From, f.To} {
		if id != "" {
			if err := backends.ValidateDataID(id); err != nil {
				return err
			}
		}
	}
	switch {
	case f.Limit < 0 || f.Limit > backends.MaxRunsLimit:
		return backends.InvalidArgument("limit %d is out of range: look at 1 to %d dataids per call (0: %d), and go on from next", f.Limit, backends.MaxRunsLimit, backends.DefaultRunsLimit)
	case f.MaxRuns < 0 || f.MaxRuns > backends.MaxRuns:
		return backends.InvalidArgument("at most %d runs per call, not %d", backends.MaxRuns, f.MaxRuns)
	case f.Zoom != "" && !f.Zoom.IsTime():
		return backends.InvalidArgument("zoom %q is not a time kind: want HOURLY, DAILY, WEEKLY or MONTHLY", f.Zoom)
	}
	return nil
}

func (e *engine) PartitionRuns(ctx context.Context, f backends.RunsFilter) (backends.PartitionSpan, error) {
	if err := validateRunsFilter(f); err != nil {
		return backends.PartitionSpan{}, err
	}
	def, producer, err := e.spanSource(ctx, f.Dataset)
	if err != nil {
		return backends.PartitionSpan{}, err
	}
	sc := runScan{f: f, limit: f.Limit, maxRuns: f.MaxRuns, span: backends.PartitionSpan{Dataset: f.Dataset}}
	if sc.limit == 0 {
		sc.limit = backends.DefaultRunsLimit
		if len(f.Slice) > 0 {
			sc.limit = backends.DefaultSlicedRunsLimit
		}
	}
	if sc.maxRuns == 0 {
		sc.maxRuns = backends.MaxRuns
	}
	def, some, err := sliceDef(def, f.Dataset, f.Slice)
	if err != nil || !some {
		return sc.span, err
	}
	if def == nil {
		return sc.span, sc.chunks(ctx, e, producer)
	}
	sc.span.Kind = def.Kind
	kind, tuple := def.Kind, false
	if def.Kind == partition.Dimensional && def.Windowed() {
		kind, tuple = def.Dimensions[0].Kind, true // columns of its dates
	}
	if f.Zoom != "" && finer(kind, f.Zoom) {
		sc.cols = &columnOf{kind: kind, zoom: f.Zoom, tuple: tuple}
	}
	return sc.span, sc.expected(ctx, e, *def, producer)
}

// spanSource returns a dataset's definition (nil without one) and
// producer from the cached catalog, confirmed current by a transaction (as
// Chunk does), not by reading every dataset and job.
func (e *engine) spanSource(ctx context.Context, dataset string) (*partition.Def, string, error) {
	var def *partition.Def
	var producer string
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		d, err := cat.Dataset(dataset)
		if err != nil {
			return err
		}
		def, producer = d.Partitions, cat.OutputJob(dataset)
		if def != nil {
			due := notDueBefore(cat.Catalog, dataset, *def)
			def = &due
		}
		if dynamicDef(def) {
			// Its values are not listed here yet: the runs are those of
			// its chunks, as for a dataset without a definition.
			def = nil
		}
		return e.update(ctx, cat, func(backends.Tx) error { return nil })
	})
	return def, producer, err
}

// runScan is one PartitionRuns call in progress.
type runScan struct {
	f       backends.RunsFilter
	limit   int
	maxRuns int
	cols    *columnOf // nil: no columns asked for
	col     columnTally
	span    backends.PartitionSpan
}

// add takes the next dataid of the span, or tells that the span ends
// before it (a bound is reached).
func (s *runScan) add(id string, st backends.Status, late bool) bool {
	if s.span.Count == s.limit {
		return false
	}
	runs := s.span.Runs
	extend := len(runs) > 0 && runs[len(runs)-1].Status == st && runs[len(runs)-1].Late == late
	if s.f.Runs && !extend && len(runs) == s.maxRuns {
		return false
	}
	if s.cols != nil {
		key := s.cols.key(id)
		if key != s.col.key && s.col.key != "" {
			s.flushColumn()
			if len(s.span.Columns) == s.maxRuns {
				s.col = columnTally{}
				return false
			}
		}
		if key != s.col.key {
			s.col = columnTally{key: key}
		}
		s.col.take(st, late)
	}
	if s.f.Runs {
		if extend {
			runs[len(runs)-1].To = id
			runs[len(runs)-1].Count++
		} else {
			s.span.Runs = append(runs, backends.PartitionRun{From: id, To: id, Count: 1, Status: st, Late: late})
		}
	}
	if s.span.Count == 0 {
		s.span.From = id
	}
	s.span.To = id
	s.span.Count++
	return true
}

// flushColumn ends the column being counted: it joins the last column
// run when its counts are the same, else starts one.
func (s *runScan) flushColumn() {
	c := s.col.run()
	if n := len(s.span.Columns); n > 0 {
		last := &s.span.Columns[n-1]
		if sameCounts(*last, c) {
			last.To = c.To
			last.Columns++
			return
		}
	}
	s.span.Columns = append(s.span.Columns, c)
}

// end closes the span: id is the dataid it would go on with ("" when it
// ended with the asked span).
func (s *runScan) end(id string) {
	s.span.Next = id
	if s.cols != nil && s.col.key != "" {
		s.flushColumn()
	}
}

// chunks scans a dataset without a definition: its producer's OUTPUT
// rows in the span, nothing missing or late.
func (s *runScan) chunks(ctx context.Context, e *engine, producer string) error {
	f := backends.ChunkFilter{Dataset: s.f.Dataset, Role: backends.RoleOutput, From: s.f.From, To: s.f.To, First: backends.MaxPageSize}
	for {
		page, err := e.b.ListRows(ctx, f)
		if err != nil {
			return err
		}
		for _, r := range page.Rows {
			if r.Job != producer || r.ReadFor != "" {
				continue
			}
			if !s.add(r.DataID, r.Status, false) {
				s.end(r.DataID)
				return nil
			}
		}
		if !page.HasNextPage || len(page.Rows) == 0 {
			s.end("")
			return nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}

// runBounds is the span a definition's scan covers.
type runBounds struct {
	from, to string
	// open: INTEGER without end or to, up to the highest dataid seen.
	open bool
	// empty: no window is due yet.
	empty bool
	// lastLate is the last dataid past its deadline ("" when none is, or
	// without a deadline).
	lastLate string
	// dueAt is when the window after the last due one becomes due, when
	// the asked span reaches it; zero otherwise.
	dueAt time.Time
}

func spanBounds(def partition.Def, f backends.RunsFilter, now time.Time) (runBounds, error) {
	b := runBounds{from: f.From, to: f.To}
	if _, err := def.Range(f.From, f.To); err != nil { // from and to are of the kind's format
		return b, backends.InvalidArgument("%v", err)
	}
	if def.Deadline != nil {
		late := def
		late.Lag = *def.Deadline
		b.lastLate, _ = late.DueBefore(now)
	}
	switch {
	case def.Windowed():
		last, ok := def.DueBefore(now)
		next, more := def.Start, true
		if def.Kind == partition.Dimensional {
			next, more = def.First()
		}
		if ok {
			next, more = def.Next(last)
		}
		if more && (f.To == "" || backends.CompareDataID(backends.UpperBound(f.To), next) >= 0) {
			b.dueAt, _ = def.Due(next)
		}
		b.empty = !ok
		if b.to == "" || backends.CompareDataID(b.to, last) > 0 {
			b.to = last
		}
	case def.Kind == partition.Integer && def.End == "" && f.To == "":
		b.open = true
	}
	return b, nil
}

// runWindow is how many expected dataids a scan joins with their rows at
// once: one ordered read of the rows between its first and last dataid
// (a narrow key range, which every store reads fast however long the
// history).
const runWindow = backends.MaxPageSize

// expected scans the expected dataids of a definition in the span, a
// window at a time, each with the status of its OUTPUT row.
func (s *runScan) expected(ctx context.Context, e *engine, def partition.Def, producer string) error {
	b, err := spanBounds(def, s.f, e.clock.Now())
	if err != nil {
		return err
	}
	if b.empty {
		s.span.ChangesAt = b.dueAt
		return nil
	}
	ids, err := def.Range(b.from, b.to)
	if err != nil {
		return backends.InvalidArgument("%v", err)
	}
	w := runWindowScan{runScan: s, e: e, def: def, producer: producer, b: b}
	batch := make([]string, 0, runWindow)
	for id := range ids {
		// One dataid past the limit, so that add finds where Next is.
		if batch = append(batch, id); len(batch) < min(runWindow, s.limit-s.span.Count+1) {
			continue
		}
		if done, err := w.window(ctx, batch); done || err != nil {
			return err
		}
		batch = batch[:0]
	}
	if len(batch) > 0 {
		if done, err := w.window(ctx, batch); done || err != nil {
			return err
		}
	}
	s.end("")
	s.changes(def, w.pending, b.dueAt)
	return nil
}

// runWindowScan is expected's state across windows.
type runWindowScan struct {
	*runScan
	e        *engine
	def      partition.Def
	producer string
	b        runBounds
	// pending is the first dataid neither READY nor late yet.
	pending string
}

// window joins a window of expected dataids with their rows and adds them
// to the span; done when the span ended in it.
func (w *runWindowScan) window(ctx context.Context, batch []string) (done bool, err error) {
	last := batch[len(batch)-1]
	var ids []string
	var sts []backends.Status
	if len(w.f.Slice) > 0 {
		// A slice's tuples lie apart among the dataset's rows: by key.
		ids, sts, err = w.e.pointStatuses(ctx, w.f.Dataset, w.producer, batch)
	} else {
		ids, sts, err = w.e.windowStatuses(ctx, w.f.Dataset, w.producer, batch[0], last)
	}
	if err != nil {
		return false, err
	}
	if w.b.open {
		highest := ""
		for k := len(ids) - 1; k >= 0 && highest == ""; k-- {
			if w.def.Contains(ids[k]) {
				highest = ids[k]
			}
		}
		if highest == "" || backends.CompareDataID(highest, last) < 0 {
			l := partitionList{e: w.e, f: backends.PartitionFilter{Dataset: w.f.Dataset}, def: w.def, producer: w.producer}
			more, err := l.expectedBeyond(ctx, last)
			if err != nil {
				return false, err
			}
			if !more { // the highest INTEGER dataid seen ends the span
				batch, done = cutAfter(batch, highest), true
			}
		}
	}
	for k, st := range statusesOf(batch, ids, sts) {
		id := batch[k]
		late := w.b.lastLate != "" && st != backends.StatusReady && backends.CompareDataID(id, w.b.lastLate) <= 0
		if !w.add(id, st, late) {
			w.end(id)
			w.changes(w.def, w.pending, time.Time{})
			return true, nil
		}
		if w.def.Deadline != nil && st != backends.StatusReady && !late && w.pending == "" {
			w.pending = id
		}
	}
	if done {
		w.end("")
		w.changes(w.def, w.pending, time.Time{})
	}
	return done, nil
}

// statusesOf joins expected dataids (ascending) with rows read for them
// (ids and their sts, ascending): the status of each dataid's row,
// StatusNone where it has none.
func statusesOf(expected, ids []string, sts []backends.Status) []backends.Status {
	out := make([]backends.Status, len(expected))
	j := 0
	for k, id := range expected {
		for j < len(ids) && backends.CompareDataID(ids[j], id) < 0 {
			j++
		}
		out[k] = backends.StatusNone
		if j < len(ids) && ids[j] == id {
			out[k] = sts[j]
		}
	}
	return out
}

// windowStatuses reads the dataids and statuses of the producer's OUTPUT
// rows on dataset between from and to, in shortlex order: with the
// backend's OutputStatusReader when it has one, else with ListRows.
func (e *engine) windowStatuses(ctx context.Context, dataset, producer, from, to string) ([]string, []backends.Status, error) {
	if r, ok := e.b.(backends.OutputStatusReader); ok {
		// A window holds at most runWindow expected dataids; more rows are
		// rows outside the definition, read below.
		ids, sts, err := r.OutputStatuses(ctx, dataset, producer, from, to, 2*runWindow)
		if err != nil || len(ids) < 2*runWindow {
			return ids, sts, err
		}
	}
	return e.listOutputStatuses(ctx, dataset, producer, from, to, 0)
}

// listOutputStatuses reads the dataids and statuses of the producer's
// OUTPUT rows on dataset between from and to with ListRows, a page at a
// time, in shortlex order: all of them, or when limit > 0 the pages up to
// the first that brings more than limit.
func (e *engine) listOutputStatuses(ctx context.Context, dataset, producer, from, to string, limit int) ([]string, []backends.Status, error) {
	var ids []string
	var sts []backends.Status
	f := backends.ChunkFilter{Dataset: dataset, Role: backends.RoleOutput, Job: producer, From: from, To: to, First: backends.MaxPageSize}
	for {
		page, err := e.b.ListRows(ctx, f)
		if err != nil {
			return nil, nil, err
		}
		for _, r := range page.Rows {
			if r.Job == producer && r.Role == backends.RoleOutput && r.ReadFor == "" {
				ids, sts = append(ids, r.DataID), append(sts, r.Status)
			}
		}
		if !page.HasNextPage || len(page.Rows) == 0 || (limit > 0 && len(ids) > limit) {
			return ids, sts, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}

// changes sets ChangesAt: the earlier of due (a window becoming due) and
// the deadline of pending, the first partition that will turn late.
func (s *runScan) changes(def partition.Def, pending string, due time.Time) {
	at := due
	if pending != "" {
		if _, end, err := def.Window(pending); err == nil {
			if t := end.Add(*def.Deadline); at.IsZero() || t.Before(at) {
				at = t
			}
		}
	}
	s.span.ChangesAt = at
}
