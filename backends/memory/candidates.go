package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// The findNext queue: candidates by handle (a sequence number), taken in
// (resubmit first, then shortlex dataid) order. A transaction's adds and
// drops apply at its commit.

func (t *tx) AddCandidate(_ context.Context, c backends.Candidate) error {
	t.addCands = append(t.addCands, c)
	return nil
}

// NextCandidates takes the job's first n due candidates that this
// transaction neither dropped nor took before; Update holds the backend's
// lock, so no other transaction looks at them meanwhile.
func (t *tx) NextCandidates(_ context.Context, job string, n int, now time.Time) ([]backends.Candidate, error) {
	var best []backends.Candidate // the first n so far, in order
	for id, c := range t.b.cands {
		if c.Job != job || t.dropped[id] || t.reserved[id] || now.Before(c.NotBefore) {
			continue
		}
		i, _ := slices.BinarySearchFunc(best, c, candCompare)
		if i < n {
			best = slices.Insert(best, i, c)[:min(len(best)+1, n)]
		}
	}
	if t.reserved == nil {
		t.reserved = map[int64]bool{}
	}
	for _, c := range best {
		t.reserved[c.Handle.(int64)] = true
	}
	return best, nil
}

// CountCandidates counts job's candidates (Backend.CountCandidates).
func (b *Backend) CountCandidates(_ context.Context, job string) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.cands {
		if c.Job == job {
			n++
		}
	}
	return n, nil
}

// candCompare orders candidates as NextCandidates takes them: resubmitted
// chunks first, then by dataid, then as they were added.
func candCompare(a, b backends.Candidate) int {
	if a.Resubmit != b.Resubmit {
		if a.Resubmit {
			return -1
		}
		return 1
	}
	if c := backends.CompareDataID(a.DataID, b.DataID); c != 0 {
		return c
	}
	return cmp.Compare(a.Handle.(int64), b.Handle.(int64))
}

func (t *tx) DropCandidate(_ context.Context, c backends.Candidate) error {
	t.dropped[c.Handle.(int64)] = true
	if c.Frontier {
		// Other frontiers of the job at the same dataid merge into this
		// one, but for those this transaction reserved (Tx.DropCandidate).
		for id, o := range t.b.cands {
			if o.Frontier && o.Resubmit == c.Resubmit && o.Job == c.Job && o.DataID == c.DataID && !t.reserved[id] {
				t.dropped[id] = true
			}
		}
	}
	return nil
}
