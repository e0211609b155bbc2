package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/chunklock/chunklock/backends"
)

// A job with mappings (SPEC §9) is backfilled by the engine after its
// catalog change commits, in batches of transactions (backfillMapped): a
// server that stops half way would leave unqueued the outputs of READY
// input chunks that the remaining batches would have queued, and no later
// publish would queue them. So each job with mappings has a record,
// "backfill/<job>", which says "done:<digest>" once a backfill of the
// definition with that digest (what the job reads, readsDigest) finished
// while that definition was stored. An upsert marks the record pending
// before it changes the catalog, and marks it done after its backfill if
// nobody marked it since. A job whose record says
// anything else (pending, or done for another definition: an upsert that
// stopped, or raced another) owes a backfill: the next upsert of the job
// (`chunklock apply`) runs it, and so does ResumeBackfills, which every
// server runs when it starts, and again in the background after an apply
// through it left one owed. A backfill only adds the candidates still
// missing, so running one twice, or two at once, queues nothing twice. A
// job stored before these records existed has none and owes nothing.

const (
	backfillPending = "pending"
	backfillDone    = "done:"
)

// backfillRecordKey names the record of job's mapped backfill.
func backfillRecordKey(job string) string { return "backfill/" + job }

// readsDigest identifies what job reads for which output: a backfill of
// one definition serves every definition with the same digest.
func readsDigest(job backends.Job) string {
	h := sha256.New()
	field := func(s string) { h.Write([]byte(strconv.Itoa(len(s)) + ":" + s)) }
	field(job.Output)
	for _, in := range job.Inputs {
		m := job.Mapping(in)
		field(in)
		field(string(m.Kind))
		field(strconv.Itoa(m.StartOffset))
		field(strconv.Itoa(m.EndOffset))
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// backfillOwed tells whether the record r of the stored job says that its
// backfill may not have finished.
func backfillOwed(r backends.Record, job backends.Job) bool {
	v := string(r.Value)
	return v == backfillPending || strings.HasPrefix(v, backfillDone) && v != backfillDone+readsDigest(job)
}

// markBackfill marks job's backfill pending and returns the record as it
// was before, and its version after the write.
func (e *engine) markBackfill(ctx context.Context, job string) (backends.Record, int64, error) {
	key := backfillRecordKey(job)
	for {
		r, err := e.b.GetRecord(ctx, key)
		if err != nil {
			return backends.Record{}, 0, err
		}
		w, ok, err := e.b.SwapRecord(ctx, key, []byte(backfillPending), r.Version)
		if err != nil {
			return backends.Record{}, 0, err
		}
		if ok {
			return r, w.Version, nil
		}
	}
}

// restoreBackfill makes job's record say again what it said (prev) before
// the mark at version, unless marked since: for an upsert that changed
// nothing, or ran no backfill of a job stored before these records.
func (e *engine) restoreBackfill(ctx context.Context, job string, prev backends.Record, version int64) error {
	_, _, err := e.b.SwapRecord(ctx, backfillRecordKey(job), append([]byte{}, prev.Value...), version)
	return err
}

// finishBackfill records that a backfill of def finished, when the record
// is still at version, the mark this backfill answers: any mark since
// (another upsert, which may have changed the job and changed it back, and
// stopped) leaves the record to whoever marked last, or to the next
// resume. A definition stored since by an upsert that marked before this
// one leaves the record done for another digest: still owed.
func (e *engine) finishBackfill(ctx context.Context, def backends.Job, version int64) error {
	_, _, err := e.b.SwapRecord(ctx, backfillRecordKey(def.ID), []byte(backfillDone+readsDigest(def)), version)
	return err
}

// markMappedUpsert marks, for an upsert of a job with mappings, its
// backfill pending, and returns the record before and the mark's version
// (nothing for a job without mappings). A job the catalog refuses is
// refused first: a refused upsert writes nothing. (A catalog change in
// between may still refuse it; UpsertJob then puts the record back.)
func (e *engine) markMappedUpsert(ctx context.Context, j backends.Job) (backends.Record, int64, error) {
	if !j.Mapped() {
		return backends.Record{}, 0, nil
	}
	if err := backends.ValidateID("job", j.ID); err != nil {
		return backends.Record{}, 0, err
	}
	if _, err := e.ValidateJob(ctx, j); err != nil {
		return backends.Record{}, 0, err
	}
	return e.markBackfill(ctx, j.ID)
}

// backfillUpserted runs, after upsert j stored stored (in catalog after),
// the backfill the upsert owes (enqueue: its inputs or mappings changed),
// or one left unfinished before, and records it done; prev and mark are
// what markMappedUpsert returned.
func (e *engine) backfillUpserted(ctx context.Context, j, stored backends.Job, after *backends.Catalog, enqueue bool, prev backends.Record, mark int64) error {
	legacy := j.Mapped() && len(prev.Value) == 0 // stored before backfills were recorded
	if stored.Mapped() && !enqueue {
		// A backfill that did not finish (its transaction failed, or the
		// server stopped) is run again by the next upsert of the job,
		// `chunklock apply`: it only adds the candidates still missing.
		// One stored before backfills were recorded is run again when the
		// job has nothing queued.
		if backfillOwed(prev, stored) {
			enqueue = true
		} else if n, err := e.QueueLength(ctx, stored.ID); legacy && err == nil && n == 0 {
			enqueue = true
		}
	}
	if enqueue && stored.Mapped() {
		if err := e.backfillMapped(ctx, after, stored); err != nil {
			e.resumeSkip.Store(false) // the server's next resume runs it
			return fmt.Errorf("job %s is stored, but queueing what it can claim already failed; the server goes on with it in the background (so does the next apply of the job): %w", stored.ID, err)
		}
	}
	switch {
	case stored.Mapped() && (enqueue || !legacy):
		return e.finishBackfill(ctx, stored, mark)
	case legacy:
		// No backfill ran, and none is known to have finished.
		return e.restoreBackfill(ctx, j.ID, prev, mark)
	}
	return nil
}

// ResumeBackfills runs the backfill of every job with mappings that owes
// one (see above) and returns how many it ran. It goes on past a job whose
// backfill fails, and reports every failure. Once a run found nothing
// left, the next ones return at once until an upsert through this engine
// leaves a backfill owed (its backfill failed: an apply whose request
// timed out, say), so a server can call it every reaper interval.
func (e *engine) ResumeBackfills(ctx context.Context) (n int, err error) {
	if e.resumeSkip.Swap(true) {
		return 0, nil
	}
	defer func() {
		if err != nil {
			e.resumeSkip.Store(false)
		}
	}()
	cat, err := e.catalog(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, job := range cat.Jobs.All() {
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
		if !job.Mapped() {
			continue
		}
		r, err := e.b.GetRecord(ctx, backfillRecordKey(job.ID))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !backfillOwed(r, job) {
			continue
		}
		if err := e.backfillMapped(ctx, cat, job); err != nil {
			errs = append(errs, fmt.Errorf("resume the backfill of job %s: %w", job.ID, err))
			continue
		}
		n++
		if err := e.finishBackfill(ctx, job, r.Version); err != nil {
			errs = append(errs, err)
		}
	}
	return n, errors.Join(errs...)
}
