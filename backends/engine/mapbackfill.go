package engine

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// The backfill of a job with mappings (SPEC §9; backfillmark.go records
// whether one finished): the outputs that the READY chunks of its driving
// input are read by become candidates, a batch of outputs per transaction.

// mappedOutputs is the run of output dataids of job whose mapped set of
// input in holds inID (SPEC §9): through IDENTITY inID itself, through
// TIME_WINDOW the outputs whose window, widened by the offsets, overlaps
// the chunk's (OutputSpan, computed, never listed). LATEST and ALL have an
// open-ended reverse, walked by a sweep instead (sweepStart): Empty.
func mappedOutputs(cat *backends.Catalog, job backends.Job, in, inID string) (partition.Span, error) {
	m := job.Mapping(in)
	switch m.Kind {
	case partition.Identity, "":
		return partition.Span{From: inID, To: inID}, nil
	case partition.TimeWindow, partition.AcrossDimensions:
		span, err := m.OutputSpan(cat.DefOf(job.Output), cat.DefOf(in), inID)
		if err != nil {
			return span, mappingError(job, in, inID, err)
		}
		return span, nil
	}
	return partition.Span{Empty: true}, nil
}

// backfillBatch bounds the output dataids one backfill transaction reads
// and queues.
const backfillBatch = 500

// backfillMapped makes a job with mappings that is new, or whose inputs or
// mappings changed, claim what it can already: for every READY chunk of
// its driving input (the first read through IDENTITY or TIME_WINDOW, else
// the first), the outputs whose mapped set holds it become candidates
// (Backend.PutJob does the same for a job without mappings, in the store).
func (e *engine) backfillMapped(ctx context.Context, cat *backends.Catalog, job backends.Job) error {
	if len(job.Inputs) == 0 {
		return nil
	}
	in := job.Inputs[0]
	for _, i := range job.Inputs {
		if k := job.Mapping(i).Kind; k == partition.Identity || windowKind(k) || k == partition.ByDimension || k == "" {
			in = i
			break
		}
	}
	now := e.clock.Now()
	if sweptKind(job.Mapping(in).Kind) {
		// Every input is read through LATEST or ALL: one sweep from the
		// first output that may read the input's first READY chunk.
		return e.backfillSweep(ctx, cat, job, in, now)
	}
	producer := cat.OutputJob(in)
	f := backends.ChunkFilter{Dataset: in, Role: backends.RoleOutput, Status: backends.StatusReady, First: backends.MaxPageSize}
	q := &backfillQueue{e: e, job: job, cat: cat, out: cat.DefOf(job.Output), size: e.backfillBatchSize()}
	for {
		page, err := e.b.ListRows(ctx, f)
		if err != nil {
			return err
		}
		for _, r := range page.Rows {
			if r.Job != producer {
				continue
			}
			if m := job.Mapping(in); m.Kind == partition.ByDimension {
				// Its reverse is no run of outputs (a lookback of one
				// region): each output, once.
				outs, err := m.Outputs(cat.DefOf(job.Output), cat.DefOf(in), r.DataID)
				if err != nil {
					return mappingError(job, in, r.DataID, err)
				}
				if err := q.addEach(ctx, outs); err != nil {
					return err
				}
				continue
			}
			span, err := mappedOutputs(cat, job, in, r.DataID)
			if err != nil {
				return err
			}
			if err := q.add(ctx, span); err != nil {
				return err
			}
		}
		if !page.HasNextPage || len(page.Cursors) == 0 {
			break
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
	return q.flush(ctx)
}

// backfillQueue queues the outputs of the runs it is given, each once, a
// batch per transaction. The READY chunks come in ascending order, and so
// do the runs of outputs that read them: an output up to the last one
// queued was queued already, so the queue remembers that one only.
type backfillQueue struct {
	e       *engine
	job     backends.Job
	cat     *backends.Catalog
	out     partition.Def
	size    int
	last    string
	pending []string
	seen    map[string]bool // addEach's
}

// add queues the outputs of span after the last one queued.
func (q *backfillQueue) add(ctx context.Context, span partition.Span) error {
	if span.Empty || q.last != "" && backends.CompareDataID(span.To, q.last) <= 0 {
		return nil
	}
	from := span.From
	if q.last != "" && backends.CompareDataID(from, q.last) <= 0 {
		next, ok := q.out.Next(q.last)
		if !ok {
			return nil
		}
		from = next
	}
	if from == span.To {
		return q.push(ctx, from)
	}
	ids, err := q.out.Range(from, span.To)
	if err != nil {
		return mappingError(q.job, q.job.Output, from, err)
	}
	for id := range ids {
		if err := q.push(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// maxBackfillSeen bounds the outputs addEach remembers to queue each once:
// past it, it forgets them (an output queued twice is checked twice).
const maxBackfillSeen = 100000

// addEach queues each of outs not queued yet: outputs that do not come in
// order (a mapping by dimension's).
func (q *backfillQueue) addEach(ctx context.Context, outs []string) error {
	if q.seen == nil || len(q.seen) > maxBackfillSeen {
		q.seen = map[string]bool{}
	}
	for _, id := range outs {
		if q.seen[id] {
			continue
		}
		q.seen[id] = true
		q.pending = append(q.pending, id)
		if len(q.pending) >= q.size {
			if err := q.flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func (q *backfillQueue) push(ctx context.Context, id string) error {
	q.pending, q.last = append(q.pending, id), id
	if len(q.pending) < q.size {
		return nil
	}
	return q.flush(ctx)
}

// flush adds a candidate for each pending output free for producers, in
// one transaction.
func (q *backfillQueue) flush(ctx context.Context) error {
	if len(q.pending) == 0 {
		return nil
	}
	outs := q.pending
	q.pending = nil
	return q.e.b.Update(ctx, func(tx backends.Tx) error {
		keys := make([]backends.RowKey, len(outs))
		for i, id := range outs {
			keys[i] = outputKey(q.cat, q.job, id)
		}
		rows, err := tx.GetRows(ctx, keys)
		if err != nil {
			return err
		}
		for i, id := range outs {
			if st := backends.StatusOf(rows[i]); backends.FreeForProducers(st) {
				if err := tx.AddCandidate(ctx, backends.Candidate{Job: q.job.ID, DataID: id, Resubmit: st == backends.StatusResubmit}); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// backfillSweep starts, for a job that reads every input through LATEST or
// ALL, the sweep that the first READY chunk of input in would have
// started: the outputs after it may read it (LATEST), or read every chunk
// of it (ALL).
func (e *engine) backfillSweep(ctx context.Context, cat *backends.Catalog, job backends.Job, in string, now time.Time) error {
	page, err := e.b.ListRows(ctx, backends.ChunkFilter{Dataset: in, Role: backends.RoleOutput, Status: backends.StatusReady, First: 1})
	if err != nil || len(page.Rows) == 0 {
		return err
	}
	return e.b.Update(ctx, func(tx backends.Tx) error {
		return addSweep(ctx, tx, cat, job, in, page.Rows[0].DataID, now)
	})
}

// backfillBatchSize is how many output dataids one backfill transaction of
// e reads and queues: backfillBatch, or fewer on a backend whose
// transactions hold a bounded number of keys (Limits.MaxBatchKeys), each output
// counting its row read and its candidate write, twice over for margin.
func (e *engine) backfillBatchSize() int {
	if e.maxKeys > 0 {
		return max(1, min(backfillBatch, e.maxKeys/4))
	}
	return backfillBatch
}
