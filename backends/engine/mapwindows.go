package engine

import (
	"context"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// A chunk becoming READY under a TIME_WINDOW consumer (SPEC §9): the outputs
// whose window the chunk completes become candidates. Those are worked out
// as intervals, never window by window: the outputs whose window holds the
// chunk are one run of output dataids (OutputSpan), and among them the
// windows that hold no other chunk that is not READY are one run too,
// between the nearest such chunks on either side of the chunk (windows move
// forward as the outputs do). So making a chunk READY reads, at most, the
// chunks of the widest reach of those windows once, in ordered reads, and
// writes one candidate per output it completes, whatever the width of the
// window; it holds a batch of dataids at a time.
//
// Two chunks of one window becoming READY at once must not both miss that
// they complete it. Each transaction locks, shared, the nearest chunks that
// were not READY on either side of its own (found first as a hint, then
// checked under the locks; windowLocks, checkRun), and a chunk becomes
// READY only under its exclusive lock: of two such transactions, the one
// that locks second sees the other's chunk READY once it holds its locks,
// and runs again (errReplan) with the wider run. A backend that validates
// reads at commit guards the two chunks instead.

// windowRun is what making chunk (dataset, dataid) READY found, for one
// consumer reading dataset through TIME_WINDOW: outs, the outputs whose
// window holds the chunk; before and after, the nearest expected chunks on
// either side, within the reach of those windows, that were not READY and
// that this transaction does not write ("": none); own, the chunks between
// that this transaction locks exclusively (and may make READY before it
// queues: they are read again then).
type windowRun struct {
	outs          partition.Span
	before, after string
	own           []string
}

type runKey struct{ job, dataset, dataid string }

// windowRuns are the runs windowLocks found in one transaction, for
// enqueueWindow in the same transaction.
type windowRuns map[runKey]*windowRun

type windowRunsKey struct{}

// withWindowRuns is ctx with room for the runs of one transaction: a
// transaction that may make chunks READY starts with it.
func withWindowRuns(ctx context.Context) context.Context {
	return context.WithValue(ctx, windowRunsKey{}, windowRuns{})
}

func runsOf(ctx context.Context) windowRuns {
	r, _ := ctx.Value(windowRunsKey{}).(windowRuns)
	return r
}

// errWindowMoved is the replan of a transaction that locked, as the
// nearest chunk not READY next to a window, one that became READY before
// the lock was granted.
func errWindowMoved() error {
	return &errReplan{what: "the chunks next to a window kept becoming READY while this operation locked them"}
}

// windowKind tells whether a mapping maps each output to a run of input
// dataids that moves forward with the outputs, as a window does:
// TIME_WINDOW, and across dimensions (a roll-up reads each date's regions,
// a fan-out each date's chunk for every region).
func windowKind(k partition.MappingKind) bool {
	return k == partition.TimeWindow || k == partition.AcrossDimensions
}

// windowConsumers tells whether a job reads dataset through TIME_WINDOW:
// making one of its chunks READY then locks the chunks next to it
// (windowLocks).
func windowConsumers(cat *backends.Catalog, dataset string) bool {
	for _, jid := range cat.Consumers(dataset) {
		if windowKind(cat.Jobs.Get(jid).Mapping(dataset).Kind) {
			return true
		}
	}
	return false
}

// lockReady locks what making chunk (dataset, dataid) READY needs: the
// chunk exclusively, in one call as always when no consumer reads its
// dataset through a window, else with the chunks next to it shared
// (windowLocks), in ascending dataid order.
func lockReady(ctx context.Context, tx backends.Tx, cat *backends.Catalog, dataset, dataid string) error {
	if !windowConsumers(cat, dataset) {
		return tx.LockChunks(ctx, dataid, []string{dataset}, nil)
	}
	plan := lockPlan{}
	if err := windowLocks(ctx, tx, cat, plan, dataset, dataid); err != nil {
		return err
	}
	return plan.lock(ctx, tx)
}

// windowLocks adds to plan what making chunk (dataset, dataid) READY locks:
// the chunk exclusively and, for each consumer reading dataset through
// TIME_WINDOW, the nearest chunks not READY on either side of it within
// its windows, shared (see above), found by reading as a hint and kept in
// ctx's runs for enqueueWindow. The chunks plan already locks exclusively
// for dataset are this transaction's own: a walk passes them. Call it for
// every chunk of a transaction after adding them all to plan.
func windowLocks(ctx context.Context, tx backends.Tx, cat *backends.Catalog, plan lockPlan, dataset, dataid string) error {
	plan.add(dataid, dataset, true)
	runs := runsOf(ctx)
	for _, jid := range cat.Consumers(dataset) {
		job := cat.Jobs.Get(jid)
		if !windowKind(job.Mapping(dataset).Kind) {
			continue
		}
		run, err := scanRun(ctx, tx, cat, job, dataset, dataid, plan.owns(dataset))
		if err != nil {
			return err
		}
		if runs != nil {
			runs[runKey{jid, dataset, dataid}] = run
		}
		for _, id := range []string{run.before, run.after} {
			if id != "" {
				plan.add(id, dataset, false)
			}
		}
	}
	return nil
}

// scanRun finds, as a hint, the run of job's windows around chunk
// (dataset, dataid) (see windowRun): first after the chunk, up to the end
// of the last window holding it; then, unless the chunk found there lies in
// every such window already (no window can be complete), before it, down
// to the start of the first.
func scanRun(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataset, dataid string, own func(string) bool) (*windowRun, error) {
	m := job.Mapping(dataset)
	out, in := cat.DefOf(job.Output), cat.DefOf(dataset)
	outs, err := m.OutputSpan(out, in, dataid)
	if err != nil {
		return nil, mappingError(job, dataset, dataid, err)
	}
	run := &windowRun{outs: outs}
	if outs.Empty {
		return run, nil
	}
	first, err := m.InputSpan(out, in, outs.From)
	if err != nil {
		return nil, mappingError(job, dataset, outs.From, err)
	}
	last, err := m.InputSpan(out, in, outs.To)
	if err != nil {
		return nil, mappingError(job, dataset, outs.To, err)
	}
	w := readyWalk{tx: tx, dataset: dataset, job: chunkOutputKey(cat, dataset, "").Job, def: in, own: own, cat: cat}
	if next, ok := in.Next(dataid); ok && !last.Empty && backends.CompareDataID(next, last.To) <= 0 {
		if run.after, err = w.firstGap(ctx, next, last.To, true, &run.own); err != nil {
			return nil, err
		}
	}
	if run.after != "" && backends.CompareDataID(run.after, first.To) <= 0 {
		return run, nil
	}
	if prev, ok := in.Prev(dataid); ok && !first.Empty && backends.CompareDataID(first.From, prev) <= 0 {
		if run.before, err = w.firstGap(ctx, first.From, prev, false, &run.own); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// enqueueMapped adds candidates for the outputs of mapped consumer job
// whose mapped set of dataset holds dataid and that are free for
// producers: the chunk just became READY. Through a TIME_WINDOW, the
// outputs whose window it completes (enqueueWindow). Through LATEST and
// ALL, whose reverse has no bound, one sweep from the first output that
// may read the chunk (sweepStart, advanceSweep): the transaction writes
// one candidate however long the history.
func enqueueMapped(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataset, dataid string, now time.Time) error {
	switch k := job.Mapping(dataset).Kind; {
	case sweptKind(k):
		return addSweep(ctx, tx, cat, job, dataset, dataid, now)
	case k == partition.ByDimension:
		return enqueueEach(ctx, tx, cat, job, dataset, dataid)
	}
	return enqueueWindow(ctx, tx, cat, job, dataset, dataid)
}

// enqueueEach queues every output of job that reads chunk (dataset,
// dataid), just made READY, through a mapping by dimension, and is free
// for producers: its reverse is not one run of outputs (a lookback of one
// region), so each output is a candidate, checked when it is taken, at
// most partition.MaxByDimensionOutputs of them. Two chunks of one output's
// set becoming READY at once both queue it: whichever is taken after both
// commit sees the set READY.
func enqueueEach(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataset, dataid string) error {
	outs, err := job.Mapping(dataset).Outputs(cat.DefOf(job.Output), cat.DefOf(dataset), dataid)
	if err != nil {
		return mappingError(job, dataset, dataid, err)
	}
	if len(outs) == 0 {
		return nil
	}
	keys := make([]backends.RowKey, len(outs))
	for i, id := range outs {
		keys[i] = outputKey(cat, job, id)
	}
	rows, err := tx.PeekRows(ctx, keys)
	if err != nil {
		return err
	}
	for i, id := range outs {
		if st := backends.StatusOf(rows[i]); backends.FreeForProducers(st) {
			if err := tx.AddCandidate(ctx, backends.Candidate{Job: job.ID, DataID: id, Resubmit: st == backends.StatusResubmit}); err != nil {
				return err
			}
		}
	}
	return nil
}

// enqueueWindow queues the outputs of job whose TIME_WINDOW over dataset
// chunk (dataset, dataid), just made READY, completes: those between the
// nearest chunks not READY on either side (the run windowLocks locked,
// checked under the locks), free for producers.
func enqueueWindow(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataset, dataid string) error {
	run := runsOf(ctx)[runKey{job.ID, dataset, dataid}]
	if run == nil {
		// Not locked by windowLocks in this transaction: found now, and
		// checked below as if it had been.
		var err error
		own := func(id string) bool { return id == dataid }
		if run, err = scanRun(ctx, tx, cat, job, dataset, dataid, own); err != nil {
			return err
		}
	}
	if run.outs.Empty {
		return nil
	}
	before, after, err := checkRun(ctx, tx, cat, run, dataset, dataid)
	if err != nil {
		return err
	}
	m := job.Mapping(dataset)
	out, in := cat.DefOf(job.Output), cat.DefOf(dataset)
	from, to := run.outs.From, run.outs.To
	if before != "" {
		// The outputs whose window holds before: a first part of outs.
		span, err := m.OutputSpan(out, in, before)
		if err != nil {
			return mappingError(job, dataset, before, err)
		}
		if !span.Empty && backends.CompareDataID(span.To, from) >= 0 {
			next, ok := out.Next(span.To)
			if !ok {
				return nil
			}
			from = next
		}
	}
	if after != "" {
		// The outputs whose window holds after: a last part of outs.
		span, err := m.OutputSpan(out, in, after)
		if err != nil {
			return mappingError(job, dataset, after, err)
		}
		if !span.Empty && backends.CompareDataID(span.From, to) <= 0 {
			prev, ok := out.Prev(span.From)
			if !ok {
				return nil
			}
			to = prev
		}
	}
	if backends.CompareDataID(from, to) > 0 {
		return nil
	}
	return queueFree(ctx, tx, cat, job, out, from, to)
}

// checkRun reads, under the transaction's locks, the chunks that bound run
// and the transaction's own chunks between, and returns the nearest chunks
// not READY on either side of dataid. A bound that has become READY since
// the hint was read was locked too late: errWindowMoved.
func checkRun(ctx context.Context, tx backends.Tx, cat *backends.Catalog, run *windowRun, dataset, dataid string) (before, after string, err error) {
	ids := slices.DeleteFunc(append([]string{run.before, run.after}, run.own...), func(id string) bool { return id == "" })
	if len(ids) == 0 {
		return "", "", nil
	}
	keys := make([]backends.RowKey, len(ids))
	for i, id := range ids {
		keys[i] = chunkOutputKey(cat, dataset, id)
	}
	rows, err := tx.GetRows(ctx, keys)
	if err != nil {
		return "", "", err
	}
	for i, id := range ids {
		ready := backends.StatusOf(rows[i]) == backends.StatusReady
		if ready && (id == run.before || id == run.after) {
			return "", "", errWindowMoved()
		}
		switch {
		case ready:
		case backends.CompareDataID(id, dataid) < 0 && (before == "" || backends.CompareDataID(id, before) > 0):
			before = id
		case backends.CompareDataID(id, dataid) > 0 && (after == "" || backends.CompareDataID(id, after) < 0):
			after = id
		}
	}
	return before, after, nil
}

// queueBatch is how many outputs queueFree reads at a time.
const queueBatch = 512

// queueFree adds a candidate of job for each output dataid of out from
// from to to that is free for producers, reading the outputs as a hint a
// batch at a time: a candidate is a hint too, and an output that becomes
// free meanwhile is queued by whatever freed it.
func queueFree(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, out partition.Def, from, to string) error {
	ids, err := out.Range(from, to)
	if err != nil {
		return err
	}
	batch := make([]string, 0, queueBatch)
	flush := func() error {
		keys := make([]backends.RowKey, len(batch))
		for i, id := range batch {
			keys[i] = outputKey(cat, job, id)
		}
		rows, err := tx.PeekRows(ctx, keys)
		if err != nil {
			return err
		}
		for i, id := range batch {
			if st := backends.StatusOf(rows[i]); backends.FreeForProducers(st) {
				if err := tx.AddCandidate(ctx, backends.Candidate{Job: job.ID, DataID: id, Resubmit: st == backends.StatusResubmit}); err != nil {
					return err
				}
			}
		}
		batch = batch[:0]
		return nil
	}
	for id := range ids {
		if batch = append(batch, id); len(batch) == queueBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return flush()
}
