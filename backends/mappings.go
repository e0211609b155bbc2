package backends

import (
	"context"
	"errors"
	"slices"

	"github.com/chunklock/chunklock/backends/partition"
)

// Partition mappings (SPEC §9): which input dataids an output dataid reads.
// The arithmetic lives in backends/partition; this file ties it to the
// catalog.

// defOf is the partition definition of dataset in cat; the zero Def when
// it has none.
func defOf(cat *Catalog, dataset string) partition.Def {
	if d, ok := cat.Datasets.Lookup(dataset); ok && d.Partitions != nil {
		return *d.Partitions
	}
	return partition.Def{}
}

// validMappings checks j's InputMappings against the definitions of its
// datasets in cat and returns them in Inputs order, each with its kind
// spelled out.
func (c *Catalog) validMappings(j Job) ([]InputMapping, error) {
	if len(j.InputMappings) == 0 {
		return []InputMapping{}, nil
	}
	byInput := map[string]InputMapping{}
	for _, m := range j.InputMappings {
		if !containsString(j.Inputs, m.Dataset) {
			return nil, InvalidArgument("job %q: inputMappings names dataset %q, which is not one of its inputs", j.ID, m.Dataset)
		}
		if _, dup := byInput[m.Dataset]; dup {
			return nil, InvalidArgument("job %q: inputMappings names input %q twice", j.ID, m.Dataset)
		}
		if m.Kind == "" {
			m.Kind = partition.Identity
		}
		if err := c.checkMapping(j.Output, m); err != nil {
			return nil, InvalidArgument("job %q: input %q: %s", j.ID, m.Dataset, err.Error())
		}
		byInput[m.Dataset] = m
	}
	return NormalizedMappings(j.Inputs, j.InputMappings), nil
}

// checkMapping checks one mapping from output to m.Dataset against the
// datasets' definitions in c.
func (c *Catalog) checkMapping(output string, m InputMapping) error {
	if m.Kind == partition.Latest && defOf(c, m.Dataset).IsZero() {
		return InvalidArgument("LATEST reads the newest READY dataid among those the input's partition definition expects, "+
			"and input %q has no partition definition", m.Dataset)
	}
	err := m.Mapping.Validate(defOf(c, output), defOf(c, m.Dataset))
	if err != nil && !errors.Is(err, partition.ErrInvalid) {
		return InvalidArgument("%s", err.Error())
	}
	return err
}

// checkMappingsOf checks, for a dataset about to take definition d, the
// mappings of the jobs that write or read it: a definition that would leave
// a mapping meaningless (a TIME_WINDOW over a dataset without a time
// definition) is refused.
func (c *Catalog) checkMappingsOf(d Dataset) error {
	next := c.WithDataset(d)
	check := func(jid string) error {
		j, ok := next.Jobs.Lookup(jid)
		if !ok {
			return nil
		}
		for _, m := range j.InputMappings {
			if m.Dataset != d.ID && j.Output != d.ID {
				continue
			}
			if err := next.checkMapping(j.Output, m); err != nil {
				return InvalidArgument("dataset %q: this definition breaks the mapping of job %q on input %q: %s", d.ID, jid, m.Dataset, err.Error())
			}
		}
		return nil
	}
	if p := c.Producer(d.ID); p != "" {
		if err := check(p); err != nil {
			return err
		}
	}
	for _, jid := range c.Consumers(d.ID) {
		if err := check(jid); err != nil {
			return err
		}
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// NormalizedMappings is ms as stores keep it: in the order of inputs (a
// mapping of a dataset not among them last, as given), each kind spelled
// out (IDENTITY for an empty one), and never nil.
func NormalizedMappings(inputs []string, ms []InputMapping) []InputMapping {
	out := make([]InputMapping, 0, len(ms))
	for _, in := range inputs {
		for _, m := range ms {
			if m.Dataset == in {
				out = append(out, m)
			}
		}
	}
	for _, m := range ms {
		if !containsString(inputs, m.Dataset) {
			out = append(out, m)
		}
	}
	for i := range out {
		if out[i].Kind == "" {
			out[i].Kind = partition.Identity
		}
	}
	return out
}

// IdentityReads is what a claim of a job without mappings reads at dataid:
// each input's chunk of the same dataid.
func IdentityReads(job Job, dataid string) []Read {
	reads := make([]Read, len(job.Inputs))
	for i, in := range job.Inputs {
		reads[i] = Read{Dataset: in, DataID: dataid}
	}
	return reads
}

// claimReads is what a claim of job at dataid reads: for each input, in
// input order, its mapped set in dataid order. A LATEST input reads its
// newest READY candidate, read from tx without a lock (the claim locks it
// and checks it again); when none is READY, the newest candidate stands
// for it, as a blocker. A job without mappings reads IdentityReads.
func claimReads(ctx context.Context, tx Tx, cat *Catalog, job Job, dataid string) ([]Read, error) {
	if !job.Mapped() {
		return IdentityReads(job, dataid), nil
	}
	out := defOf(cat, job.Output)
	var reads []Read
	for _, in := range job.Inputs {
		m := job.Mapping(in)
		switch m.Kind {
		case partition.Identity, "":
			reads = append(reads, Read{Dataset: in, DataID: dataid})
		case partition.Latest:
			id, ok, err := latestRead(ctx, tx, cat, m, out, in, dataid)
			if err != nil {
				return nil, err
			}
			if ok {
				reads = append(reads, Read{Dataset: in, DataID: id})
			}
		default:
			ids, err := m.Inputs(out, defOf(cat, in), dataid)
			if err != nil {
				return nil, mappingError(job, in, dataid, err)
			}
			for _, id := range ids {
				reads = append(reads, Read{Dataset: in, DataID: id})
			}
		}
	}
	return reads, nil
}

func mappingError(job Job, in, dataid string, err error) error {
	var be *Error
	if errors.As(err, &be) {
		return err
	}
	return InvalidArgument("job %q at %q: mapping of input %q: %s", job.ID, dataid, in, err.Error())
}

// latestBatch is how many LATEST candidates one read looks at.
const latestBatch = 32

// latestRead is the input dataid a LATEST mapping reads for dataid: the
// newest READY one among its candidates, looking at partition.MaxMapped
// of them at most; when none is READY, the newest candidate and ok true
// (the claim is then blocked on it); ok false when there is no candidate.
func latestRead(ctx context.Context, tx Tx, cat *Catalog, m partition.Mapping, out partition.Def, in, dataid string) (string, bool, error) {
	inDef := defOf(cat, in)
	span, err := m.InputSpan(out, inDef, dataid)
	if err != nil {
		return "", false, InvalidArgument("mapping of input %q: %s", in, err.Error())
	}
	if span.Empty {
		return "", false, nil
	}
	top := span.To
	if top == "" {
		if inDef.IsZero() || !inDef.Bounded() {
			return "", false, InvalidArgument("LATEST of input %q reads any of its dataids, and it has no bounded partition definition to list them", in)
		}
		seq, err := inDef.Range(span.From, "")
		if err != nil {
			return "", false, InvalidArgument("mapping of input %q: %s", in, err.Error())
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
	id, looked := top, 0
	for looked < partition.MaxMapped {
		var ids []string
		for len(ids) < latestBatch && id != "" {
			ids = append(ids, id)
			prev, ok := inDef.Prev(id)
			if !ok || (span.From != "" && CompareDataID(prev, span.From) < 0) {
				id = ""
				break
			}
			id = prev
		}
		if len(ids) == 0 {
			break
		}
		keys := make([]RowKey, len(ids))
		for i, c := range ids {
			keys[i] = chunkOutputKey(cat, in, c)
		}
		rows, err := tx.GetRows(ctx, keys)
		if err != nil {
			return "", false, err
		}
		for i, r := range rows {
			if statusOf(r) == StatusReady {
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

func (p lockPlan) lock(ctx context.Context, tx Tx) error {
	ids := make([]string, 0, len(p))
	for id := range p {
		ids = append(ids, id)
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
func (p lockPlan) addClaim(job Job, dataid string, reads []Read, exclusive []string) {
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
func overlayReads(rows []StatusRow, written map[RowKey]*StatusRow, dataset, dataid, job string) []StatusRow {
	byKey := map[RowKey]*StatusRow{}
	for i := range rows {
		byKey[rows[i].RowKey] = &rows[i]
	}
	changed := false
	for k, r := range written {
		if k.Dataset == dataset && k.DataID == dataid && k.Job == job && k.Role == RoleInput && k.ReadFor != "" {
			byKey[k] = r
			changed = true
		}
	}
	if !changed {
		return rows
	}
	return SortedReads(byKey)
}

// SortedReads lists the rows of byKey (nil: none) in shortlex ReadFor
// order.
func SortedReads(byKey map[RowKey]*StatusRow) []StatusRow {
	out := make([]StatusRow, 0, len(byKey))
	for _, r := range byKey {
		if r != nil {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b StatusRow) int { return CompareDataID(a.ReadFor, b.ReadFor) })
	return out
}
