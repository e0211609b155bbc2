package engine

import (
	"context"
	"slices"

	"github.com/chunklock/chunklock/backends"
)

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

// owns tells, for dataset, whether p locks a dataid exclusively.
func (p lockPlan) owns(dataset string) func(string) bool {
	return func(id string) bool {
		s := p[id]
		return s != nil && slices.Contains(s.exclusive, dataset)
	}
}
