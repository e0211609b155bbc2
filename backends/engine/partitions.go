package engine

import (
	"context"
	"iter"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The partitions read model (SPEC §8 "Missing and late"): a dataset's
// expected dataids, each joined with the status of its OUTPUT row.

// maxBeyondProbe bounds how many rows that are not expected dataids the
// search for the highest INTEGER dataid seen reads past a page.
const maxBeyondProbe = 2 * backends.MaxPageSize

func validatePartitionFilter(f backends.PartitionFilter) error {
	for _, id := range []string{f.From, f.To, f.After} {
		if id != "" {
			if err := backends.ValidateDataID(id); err != nil {
				return err
			}
		}
	}
	if f.Status != nil {
		switch *f.Status {
		case backends.StatusNone, backends.StatusRunning, backends.StatusReady, backends.StatusFailed, backends.StatusResubmit, backends.StatusHold:
		default:
			return backends.InvalidArgument("partition status %q is unknown: want NONE (missing) or an OUTPUT status (RUNNING, READY, FAILED, RESUBMIT, HOLD)", *f.Status)
		}
	}
	return nil
}

// partitionDef returns the definition of a dataset, or INVALID_ARGUMENT
// when it has none.
func partitionDef(cat *backends.Catalog, dataset string) (partition.Def, error) {
	ds, err := cat.Dataset(dataset)
	if err != nil {
		return partition.Def{}, err
	}
	if ds.Partitions == nil {
		return partition.Def{}, backends.InvalidArgument("dataset %q has no partition definition, so no dataids are expected of it; list its chunks with chunks, or give it partitions with upsertDataset", dataset)
	}
	return *ds.Partitions, nil
}

// notDueBefore is def, the definition of dataset, of a time kind, whose
// producer reads a DYNAMIC dimension of an input whole (a total over the
// customers), from the window that holds the earliest value's expected
// start: a window before it reads no value, so its chunk is not due (SPEC
// §10), and neither missing nor late. Without a value nothing is due yet
// (nothingDue). Any other def is itself.
func notDueBefore(cat *backends.Catalog, dataset string, def partition.Def) partition.Def {
	p := cat.Producer(dataset)
	if !def.Kind.IsTime() || p == "" {
		return def
	}
	job := cat.Jobs.Get(p)
	// Each window needs a value of every such dimension: from the latest
	// over the inputs of the first instant one is read.
	var from time.Time
	any := false
	for _, in := range job.Inputs {
		if k := job.Mapping(in).Kind; k != partition.AcrossDimensions && k != partition.ByDimension {
			continue
		}
		idef := cat.DefOf(in)
		for _, name := range dynamicDimNames(idef) {
			members := idef.Dimensions[dynamicDim(idef, name)].Members
			if len(members) == 0 {
				return nothingDue(def)
			}
			earliest := members[0].Since
			for _, mem := range members[1:] {
				earliest = min(earliest, mem.Since)
			}
			t := time.Unix(earliest, 0)
			if idef.Windowed() && idef.Dimensions[0].Kind.IsTime() {
				// Not before the input's own start; and a window that
				// ends before its output reads that instant only
				// -EndOffset of the input's windows later (stopAt).
				tdef := idef.Dimensions[0].Def
				if _, begins, ok := firstWindow(tdef); ok && t.Before(begins) {
					t = begins
				}
				k := 0
				for _, x := range startEntries(cat, job, in) {
					if x.Kind == partition.TimeWindow && x.EndOffset < 0 {
						k = max(k, -x.EndOffset)
					}
				}
				t = stopAt([]emptyStop{{def: tdef, k: k}}, t)
			}
			if !any || t.After(from) {
				from, any = t, true
			}
		}
	}
	if !any {
		return def
	}
	if last, ok := def.Last(); ok {
		if _, ends, err := def.Window(last); err == nil && !from.Before(ends) {
			return nothingDue(def) // it ended before any value is read
		}
	}
	first, ok := lastStarted(def, from)
	if !ok || backends.CompareDataID(first, def.Start) <= 0 {
		return def
	}
	def.Start = first
	return def
}

// nothingDue is def with nothing due (nor late) for as long as a clock
// may tell: its lag and deadline moved centuries on.
func nothingDue(def partition.Def) partition.Def {
	const never = 200 * 365 * 24 * time.Hour
	def.Lag = never
	if def.Deadline != nil {
		d := never
		def.Deadline = &d
	}
	return def
}

// partitionSource returns a dataset's definition and producer from the
// cached catalog, confirmed current by a transaction (as Chunk does), not
// by reading every dataset and job; INVALID_ARGUMENT when it has no
// definition.
func (e *engine) partitionSource(ctx context.Context, dataset string) (partition.Def, string, error) {
	def, producer, _, _, err := e.partitionSourceOf(ctx, dataset)
	return def, producer, err
}

// partitionSourceOf is partitionSource, the dataset itself and the
// catalog's version.
func (e *engine) partitionSourceOf(ctx context.Context, dataset string) (partition.Def, string, backends.Dataset, int64, error) {
	var def partition.Def
	var producer string
	var ds backends.Dataset
	var version int64
	err := e.withCatalog(ctx, func(cat *opCatalog) error {
		d, err := partitionDef(cat.Catalog, dataset)
		if err != nil {
			return err
		}
		ds, _ = cat.Dataset(dataset)
		def, producer, version = notDueBefore(cat.Catalog, dataset, d), cat.OutputJob(dataset), cat.version
		return e.update(ctx, cat, func(backends.Tx) error { return nil })
	})
	return def, producer, ds, version, err
}

func (e *engine) Partitions(ctx context.Context, f backends.PartitionFilter) (backends.PartitionPage, error) {
	if err := validatePartitionFilter(f); err != nil {
		return backends.PartitionPage{}, err
	}
	def, producer, err := e.partitionSource(ctx, f.Dataset)
	if err != nil {
		return backends.PartitionPage{}, err
	}
	sliced, some, err := sliceDef(&def, f.Dataset, f.Slice)
	if err != nil || !some {
		return backends.PartitionPage{}, err // no listed value is expected
	}
	def = *sliced
	if def.Kind == partition.Dynamic {
		l := partitionList{e: e, f: f, def: def, producer: producer, now: e.clock.Now(), first: backends.PageSize(f.First)}
		return l.runDynamic(ctx)
	}
	if _, err := def.Range(f.From, f.To); err != nil { // from and to are of the kind's format
		return backends.PartitionPage{}, backends.InvalidArgument("%v", err)
	}
	l := partitionList{e: e, f: f, def: def, producer: producer, now: e.clock.Now(), first: backends.PageSize(f.First)}
	return l.run(ctx)
}

// sliceDef is def keeping only the tuples of slice (def itself without
// one); some is false when the slice selects nothing. INVALID_ARGUMENT for
// a bad slice, or one of a dataset without dimensions.
func sliceDef(def *partition.Def, dataset string, slice []partition.Slice) (sliced *partition.Def, some bool, err error) {
	switch {
	case len(slice) == 0:
		return def, true, nil
	case def == nil:
		return nil, false, backends.InvalidArgument("slice applies to a dataset with dimensions; %q has no partition definition", dataset)
	}
	d, some, err := def.Sliced(slice)
	if err != nil {
		return nil, false, backends.InvalidArgument("%v", err)
	}
	return &d, some, nil
}

// partitionList is one Partitions call in progress.
type partitionList struct {
	e        *engine
	f        backends.PartitionFilter
	def      partition.Def
	producer string
	now      time.Time
	first    int
	// open: the upper bound is the highest INTEGER dataid seen, found as
	// the scan goes (INTEGER without end, no To).
	open    bool
	scanned int
	page    backends.PartitionPage
	// added is when each value of a DYNAMIC set listed was added.
	added map[string]time.Time
}

// bounds is the span of expected dataids left to list, and whether there
// is any.
func (l *partitionList) bounds() (from, to string, ok bool) {
	from, to = l.f.From, l.f.To
	if l.f.After != "" {
		next, ok := l.def.Next(l.f.After)
		if !ok {
			return "", "", false
		}
		if from == "" || backends.CompareDataID(next, from) > 0 {
			from = next
		}
	}
	if to != "" {
		return from, to, true
	}
	if l.def.Kind == partition.Integer && l.def.End == "" {
		l.open = true
		return from, "", true
	}
	last, ok := l.def.DueBefore(l.now)
	return from, last, ok
}

func (l *partitionList) run(ctx context.Context) (backends.PartitionPage, error) {
	from, to, ok := l.bounds()
	if !ok {
		return l.page, nil
	}
	ids, err := l.def.Range(from, to)
	if err != nil {
		return backends.PartitionPage{}, backends.InvalidArgument("%v", err)
	}
	next, stop := iter.Pull(ids)
	defer stop()
	size := backends.MaxPageSize
	if l.f.Status == nil && l.f.Late == nil {
		size = l.first + 1
	}
	for {
		var batch []string
		for n := min(size, backends.MaxPartitionScan-l.scanned); len(batch) < n; {
			id, ok := next()
			if !ok {
				break
			}
			batch = append(batch, id)
		}
		if len(batch) == 0 {
			if _, more := next(); more && l.scanned >= backends.MaxPartitionScan {
				l.page.HasNextPage = true // the scan bound ended the page
			}
			return l.page, nil
		}
		done, err := l.take(ctx, batch)
		if err != nil || done {
			return l.page, err
		}
	}
}

// runDynamic lists the values of a DYNAMIC set in [From, To] after
// After, a page of values at a time, each one ordered read of the set.
func (l *partitionList) runDynamic(ctx context.Context) (backends.PartitionPage, error) {
	size := backends.MaxPageSize
	if l.f.Status == nil && l.f.Late == nil {
		size = l.first + 1
	}
	after := l.f.After
	for {
		n := min(size, backends.MaxPartitionScan-l.scanned)
		if n <= 0 {
			more, err := l.e.b.ListPartitionValues(ctx, l.f.Dataset, "", l.f.From, after, l.f.To, 1)
			l.page.HasNextPage = len(more) > 0 // the scan bound ended the page
			return l.page, err
		}
		vals, err := l.e.b.ListPartitionValues(ctx, l.f.Dataset, "", l.f.From, after, l.f.To, n)
		if err != nil || len(vals) == 0 {
			return l.page, err
		}
		batch := make([]string, len(vals))
		l.added = make(map[string]time.Time, len(vals))
		for i, v := range vals {
			batch[i], l.added[v.Value] = v.Value, v.AddedAt
		}
		done, err := l.take(ctx, batch)
		if err != nil || done || len(vals) < n {
			return l.page, err
		}
		after = batch[len(batch)-1]
	}
}

// take joins a batch of expected dataids with their OUTPUT rows and keeps
// the ones the filter selects. done: the page is complete, or the listing
// ended at the highest INTEGER dataid seen.
func (l *partitionList) take(ctx context.Context, batch []string) (done bool, err error) {
	last := batch[len(batch)-1]
	statuses, highest, err := l.outputStatuses(ctx, batch[0], last, batch)
	if err != nil {
		return false, err
	}
	if l.open && (highest == "" || backends.CompareDataID(highest, last) < 0) {
		more, err := l.expectedBeyond(ctx, last)
		if err != nil {
			return false, err
		}
		if !more {
			batch, done = cutAfter(batch, highest), true
		}
	}
	for _, id := range batch {
		p, err := l.partition(id, statuses[id])
		if err != nil {
			return false, err
		}
		if !l.selects(p) {
			l.scanned++
			l.page.EndCursor = id
			continue
		}
		if len(l.page.Partitions) == l.first {
			l.page.HasNextPage = true
			return true, nil
		}
		l.scanned++
		l.page.EndCursor = id
		l.page.Partitions = append(l.page.Partitions, p)
		l.page.Cursors = append(l.page.Cursors, id)
	}
	return done, nil
}

// cutAfter keeps the dataids up to highest ("" keeps none).
func cutAfter(batch []string, highest string) []string {
	for i, id := range batch {
		if highest == "" || backends.CompareDataID(id, highest) > 0 {
			return batch[:i]
		}
	}
	return batch
}

func (l *partitionList) selects(p backends.Partition) bool {
	return (l.f.Status == nil || *l.f.Status == p.Status) && (l.f.Late == nil || *l.f.Late == p.Late)
}

func (l *partitionList) partition(id string, st backends.Status) (backends.Partition, error) {
	p := backends.Partition{Dataset: l.f.Dataset, DataID: id, Status: st}
	if l.def.Kind == partition.Dynamic {
		at := l.added[id]
		p.DueAt = at.Add(l.def.Lag)
		p.Late = l.def.Deadline != nil && st != backends.StatusReady && !l.now.Before(at.Add(*l.def.Deadline))
		return p, nil
	}
	if !l.def.Windowed() {
		return p, nil
	}
	var err error
	if p.WindowStart, p.WindowEnd, err = l.def.Window(id); err != nil {
		return p, err
	}
	p.DueAt = p.WindowEnd.Add(l.def.Lag)
	p.Late, err = l.def.Late(id, l.now, st == backends.StatusReady)
	return p, err
}

// outputStatuses reads the OUTPUT rows of the dataset's producer in [from,
// to] and answers their statuses by dataid, and the highest expected
// dataid among them.
func (l *partitionList) outputStatuses(ctx context.Context, from, to string, batch []string) (map[string]backends.Status, string, error) {
	if len(l.f.Slice) > 0 {
		return l.pointStatuses(ctx, batch)
	}
	out := map[string]backends.Status{}
	highest := ""
	f := backends.ChunkFilter{Dataset: l.f.Dataset, Role: backends.RoleOutput, From: from, To: to, First: backends.MaxPageSize}
	for {
		page, err := l.e.b.ListRows(ctx, f)
		if err != nil {
			return nil, "", err
		}
		for _, r := range page.Rows {
			if r.Job == l.producer && l.def.Contains(r.DataID) {
				out[r.DataID] = r.Status
				highest = r.DataID
			}
		}
		if !page.HasNextPage || len(page.Rows) == 0 {
			return out, highest, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
}

// pointStatuses reads the OUTPUT rows of a slice's batch one key each, in
// one read: a slice's dataids lie apart among the dataset's rows (one
// customer's every date), where a run would read every customer's.
func (l *partitionList) pointStatuses(ctx context.Context, batch []string) (map[string]backends.Status, string, error) {
	ids, sts, err := l.e.pointStatuses(ctx, l.f.Dataset, l.producer, batch)
	out := make(map[string]backends.Status, len(ids))
	highest := ""
	for i, id := range ids {
		out[id] = sts[i]
		highest = id
	}
	return out, highest, err
}

// pointStatuses reads the OUTPUT rows of producer at the dataids of batch,
// one key each, in one read; it answers the dataids that have one, in
// order, with their statuses.
func (e *engine) pointStatuses(ctx context.Context, dataset, producer string, batch []string) ([]string, []backends.Status, error) {
	keys := make([]backends.RowKey, len(batch))
	for i, id := range batch {
		keys[i] = backends.RowKey{Dataset: dataset, DataID: id, Job: producer, Role: backends.RoleOutput}
	}
	var ids []string
	var sts []backends.Status
	err := e.b.Update(ctx, func(tx backends.Tx) error {
		ids, sts = ids[:0], sts[:0]
		rows, err := tx.PeekRows(ctx, keys)
		if err != nil {
			return err
		}
		for i, r := range rows {
			if r != nil {
				ids, sts = append(ids, batch[i]), append(sts, r.Status)
			}
		}
		return nil
	})
	return ids, sts, err
}

// expectedBeyond reports whether an OUTPUT row of an expected dataid after
// id exists (for INTEGER without end: the highest one seen is further on).
// It reads at most maxBeyondProbe rows of other dataids on the way.
func (l *partitionList) expectedBeyond(ctx context.Context, id string) (bool, error) {
	next, ok := l.def.Next(id)
	if !ok {
		return false, nil
	}
	f := backends.ChunkFilter{Dataset: l.f.Dataset, Role: backends.RoleOutput, From: next, First: backends.MaxPageSize}
	for read := 0; read < maxBeyondProbe; {
		page, err := l.e.b.ListRows(ctx, f)
		if err != nil {
			return false, err
		}
		for _, r := range page.Rows {
			if r.Job == l.producer && l.def.Contains(r.DataID) {
				return true, nil
			}
		}
		read += len(page.Rows)
		if !page.HasNextPage || len(page.Rows) == 0 {
			return false, nil
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
	return false, nil
}
