package engine

import (
	"context"
	"errors"
	"slices"
	"time"

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

// lockPlan gathers the chunks one transaction locks: by dataid, the
// datasets locked exclusively and shared. Locking walks it in ascending
// dataid order, the order of every transaction that locks several dataids
// (findNext rounds, live-claim batches), so that none waits for another in
// a circle.
type lockPlan map[string]*chunkLockSet

type chunkLockSet struct{ exclusive, shared []string }

func (p lockPlan) add(dataid, dataset string, exclusive bool) {
	s := p[dataid]
	if s == nil {
		s = &chunkLockSet{}
		p[dataid] = s
	}
	if exclusive {
		if !slices.Contains(s.exclusive, dataset) {
			s.exclusive = append(s.exclusive, dataset)
		}
	} else if !slices.Contains(s.shared, dataset) {
		s.shared = append(s.shared, dataset)
	}
}

func (p lockPlan) lock(ctx context.Context, tx backends.Tx) error {
	ids := make([]string, 0, len(p))
	n := 0
	for id, s := range p {
		ids = append(ids, id)
		n += len(s.exclusive) + len(s.shared)
	}
	if w, ok := tx.(backends.WideLocker); ok && n > backends.WideLocks {
		if err := w.LockWide(ctx); err != nil {
			return err
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		s := p[id]
		if err := tx.LockChunks(ctx, id, s.exclusive, s.shared); err != nil {
			return err
		}
	}
	return nil
}

// addClaim adds the chunks a claim of job at dataid reading reads locks:
// the output chunk exclusively (or, with exclusive, those datasets), each
// read shared.
func (p lockPlan) addClaim(job backends.Job, dataid string, reads []backends.Read, exclusive []string) {
	if exclusive == nil {
		exclusive = []string{job.Output}
	}
	for _, d := range exclusive {
		p.add(dataid, d, true)
	}
	for _, r := range reads {
		p.add(r.DataID, r.Dataset, false)
	}
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

// sweptKind tells whether a mapping's reverse is open-ended (LATEST, ALL):
// a chunk of its input becoming READY starts sweeps over the outputs
// instead of queueing them.
func sweptKind(k partition.MappingKind) bool {
	return k == partition.Latest || k == partition.All
}

// sweeps tells whether job reads an input through LATEST or ALL: a chunk
// of it becoming READY starts a sweep over the job's outputs.
func sweeps(job backends.Job) bool {
	for _, m := range job.InputMappings {
		if sweptKind(m.Kind) {
			return true
		}
	}
	return false
}

// sweepStart is where the sweep over job's outputs starts when chunk inID
// of input in, read through LATEST or ALL, becomes READY: the first output
// dataid of the mapping's reverse span (the outputs after the chunk for
// LATEST, every output for ALL) whose window has started at now. ok is
// false when there is none, or when the output has no partition
// definition to walk.
func sweepStart(cat *backends.Catalog, job backends.Job, in, inID string, now time.Time) (string, bool, error) {
	m := job.Mapping(in)
	out := cat.DefOf(job.Output)
	span, err := m.OutputSpan(out, cat.DefOf(in), inID)
	if err != nil {
		return "", false, mappingError(job, in, inID, err)
	}
	if span.Empty || out.IsZero() {
		return "", false, nil
	}
	last, ok := lastStarted(out, now)
	if !ok {
		return "", false, nil
	}
	if span.To != "" && backends.CompareDataID(span.To, last) < 0 {
		last = span.To
	}
	if span.From != "" && backends.CompareDataID(span.From, last) > 0 {
		return "", false, nil
	}
	ids, err := out.Range(span.From, last)
	if err != nil {
		return "", false, mappingError(job, in, inID, err)
	}
	for id := range ids {
		return id, true, nil
	}
	return "", false, nil
}

// lastStarted is the last dataid d expects whose window has started at now
// (every expected dataid of a definition without windows).
func lastStarted(d partition.Def, now time.Time) (string, bool) {
	if !d.Kind.IsTime() {
		return d.DueBefore(now)
	}
	d.Lag = 0
	last, ok := d.DueBefore(now)
	if !ok {
		if d.Contains(d.Start) {
			if start, _, err := d.Window(d.Start); err == nil && !now.Before(start) {
				return d.Start, true
			}
		}
		return "", false
	}
	if next, ok := d.Next(last); ok {
		return next, true
	}
	return last, true
}

// addSweep starts the sweeps over job's outputs that chunk (dataset,
// dataid), read through LATEST or ALL, may have made claimable. A sweep is
// a frontier candidate (Candidate.Frontier): two of a kind that meet at
// one output merge, and a scheduled job's sweep merges into its
// schedule's frontier.
func addSweep(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, dataset, dataid string, now time.Time) error {
	id, ok, err := sweepStart(cat, job, dataset, dataid, now)
	if err != nil || !ok {
		return err
	}
	def := outputDef(cat, job)
	// Two sweeps from there: one for the RESUBMIT outputs, which come
	// first (SPEC §3 findNext), and one for the others.
	rs := frontierAt(job, def, id)
	rs.Resubmit = true
	if err := tx.AddCandidate(ctx, rs); err != nil {
		return err
	}
	return tx.AddCandidate(ctx, frontierAt(job, def, id))
}
