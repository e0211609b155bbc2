package engine

import (
	"context"
	"errors"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/partition"
)

// Partition mappings (SPEC §9): which input dataids an output dataid reads.
// The arithmetic lives in backends/partition; this file ties it to the
// catalog.

// claimReads is what a claim of job at dataid reads: for each input, in
// input order, its mapped set in dataid order. A LATEST input reads its
// newest READY candidate, read from tx without a lock (the claim locks it
// and checks it again); when none is READY, the newest candidate stands
// for it, as a blocker. A job without mappings reads IdentityReads.
func claimReads(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataid string) ([]backends.Read, error) {
	if !job.Mapped() {
		return backends.IdentityReads(job, dataid), nil
	}
	out := cat.DefOf(job.Output)
	var reads []backends.Read
	for _, in := range job.Inputs {
		m := job.Mapping(in)
		switch m.Kind {
		case partition.Identity, "":
			reads = append(reads, backends.Read{Dataset: in, DataID: dataid})
		case partition.Latest:
			id, ok, err := latestRead(ctx, tx, cat, m, out, in, dataid)
			if err != nil {
				return nil, err
			}
			if ok {
				reads = append(reads, backends.Read{Dataset: in, DataID: id})
			}
		default:
			ids, err := m.Inputs(out, cat.DefOf(in), dataid)
			if err != nil {
				return nil, mappingError(job, in, dataid, err)
			}
			for _, id := range ids {
				reads = append(reads, backends.Read{Dataset: in, DataID: id})
			}
		}
	}
	return reads, nil
}

func mappingError(job backends.Job, in, dataid string, err error) error {
	var be *backends.Error
	if errors.As(err, &be) {
		return err
	}
	return backends.InvalidArgument("job %q at %q: mapping of input %q: %s", job.ID, dataid, in, err.Error())
}

// latestBatch is how many LATEST candidates one read looks at.
const latestBatch = 32

// latestRead is the input dataid a LATEST mapping reads for dataid: the
// newest READY one among its candidates, looking at partition.MaxMapped
// of them at most; when none is READY, the newest candidate and ok true
// (the claim is then blocked on it); ok false when there is no candidate.
// The candidates are read as a hint, the newest latestBatch of them by
// key (PeekRows), then the rest in one ordered read (Tx.LatestReady), or,
// past a READY chunk the definition does not expect, a page of rows at a
// time: the claim reads and locks (or guards) the one chosen like
// every chunk it reads, and a newer one becoming READY meanwhile orders
// the claim before it, not after (that publish starts a sweep that finds
// the output claimed). So a snapshot far behind its outputs costs one
// read, not a read per day between nor keys of the claim's transaction.
func latestRead(ctx context.Context, tx backends.Tx, cat *backends.Catalog, m partition.Mapping, out partition.Def, in, dataid string) (string, bool, error) {
	inDef := cat.DefOf(in)
	span, err := m.InputSpan(out, inDef, dataid)
	if err != nil {
		return "", false, backends.InvalidArgument("mapping of input %q: %s", in, err.Error())
	}
	if span.Empty {
		return "", false, nil
	}
	top := span.To
	if top == "" {
		if inDef.IsZero() || !inDef.Bounded() {
			return "", false, backends.InvalidArgument("LATEST of input %q reads any of its dataids, and it has no bounded partition definition to list them", in)
		}
		seq, err := inDef.Range(span.From, "")
		if err != nil {
			return "", false, backends.InvalidArgument("mapping of input %q: %s", in, err.Error())
		}
		for id := range seq {
			top = id
		}
		if top == "" {
			return "", false, nil
		}
	}
	if inDef.IsZero() {
		// Without a definition there is nothing to step back through: the
		// candidate is the output dataid itself.
		return top, true, nil
	}
	find := true // one ordered read (Tx.LatestReady) may find the rest
	id, looked := top, 0
	for looked < partition.MaxMapped {
		if find && looked > 0 && id != "" {
			// Not among the newest: one ordered read finds the rest.
			found, ok, err := tx.LatestReady(ctx, in, chunkOutputKey(cat, in, "").Job, span.From, id)
			switch {
			case err != nil:
				return "", false, err
			case !ok:
				return top, true, nil
			case inDef.Contains(found):
				return found, true, nil
			}
			// A READY chunk that the definition does not expect (kept
			// from an earlier one): step back through the expected ones.
			find = false
		}
		var ids []string
		for len(ids) < latestBatch && id != "" {
			ids = append(ids, id)
			prev, ok := inDef.Prev(id)
			if !ok || (span.From != "" && backends.CompareDataID(prev, span.From) < 0) {
				id = ""
				break
			}
			id = prev
		}
		if len(ids) == 0 {
			break
		}
		keys := make([]backends.RowKey, len(ids))
		for i, c := range ids {
			keys[i] = chunkOutputKey(cat, in, c)
		}
		rows, err := tx.PeekRows(ctx, keys)
		if err != nil {
			return "", false, err
		}
		for i, r := range rows {
			if backends.StatusOf(r) == backends.StatusReady {
				return ids[i], true, nil
			}
		}
		looked += len(ids)
	}
	return top, true, nil
}

// overlayReads is rows (ListReads of dataset/dataid/job) with the writes
// of written (nil: deleted) applied, in shortlex ReadFor order: for Tx
// implementations that keep writes aside.
func overlayReads(rows []backends.StatusRow, written map[backends.RowKey]*backends.StatusRow, dataset, dataid, job string) []backends.StatusRow {
	byKey := map[backends.RowKey]*backends.StatusRow{}
	for i := range rows {
		byKey[rows[i].RowKey] = &rows[i]
	}
	changed := false
	for k, r := range written {
		if k.Dataset == dataset && k.DataID == dataid && k.Job == job && k.Role == backends.RoleInput && k.ReadFor != "" {
			byKey[k] = r
			changed = true
		}
	}
	if !changed {
		return rows
	}
	return backends.SortedReads(byKey)
}
